#include "collectors/ib_port.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sources/ib_walk.h"
#include "sources/port_map.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// How a port file's text becomes a number.
enum class Format {
  kCounter,  // counters/<file>: decimal u64
  kState,    // "4: ACTIVE"
  kHex,      // "0x1f"
  kDecimal,  // "0"
};

// The metric table: one row per port file with a dedicated metric. Files in
// counters/ not listed here are still exported, as
// fabric_port_other_total{counter="<file>"}. `rate` is handled on its own
// (one file, two metrics), as are the labels of fabric_port_info.
struct PortFileSpec {
  std::string_view file;  // relative to ports/<n>/
  std::string_view metric;
  prometheus::MetricType type;
  std::string_view help;
  Format format;
  // port_{xmit,rcv}_data count 4-byte words, not octets: the IB PMA
  // PortXmitData/PortRcvData fields are "divided by 4" (IBA spec vol 1
  // 16.1.3.5; Documentation/ABI/stable/sysfs-class-infiniband: "in units of
  // 4 octets"; procfs/node_exporter multiply by 4 for the same reason).
  unsigned multiplier = 1;
  // Width of the PortCounters (attr 0x12) field. These fields saturate at
  // 2^bits-1 instead of wrapping (IBA PortCounters semantics; widths from
  // kernel drivers/infiniband/core/sysfs.c PORT_PMA_ATTR and libibmad
  // fields.c). 0 = a 64-bit PortCountersExtended field, no saturation flag.
  unsigned saturate_bits = 0;
};

constexpr auto kCounter = prometheus::MetricType::Counter;
constexpr auto kGauge = prometheus::MetricType::Gauge;
constexpr std::string_view kErrors = "fabric_port_errors_total";
constexpr std::string_view kErrorsHelp =
    "PortCounters error counters from counters/<error> (error = sysfs file "
    "name); these saturate at their field width, see "
    "fabric_port_counters_saturated.";

constexpr PortFileSpec kPortFiles[] = {
    {"state", "fabric_port_state", kGauge,
     "Logical port state from ports/<n>/state (1 DOWN, 2 INIT, 3 ARMED, "
     "4 ACTIVE, 5 ACTIVE_DEFER).",
     Format::kState},
    {"phys_state", "fabric_port_physical_state", kGauge,
     "Physical port state from ports/<n>/phys_state (1 Sleep, 2 Polling, "
     "3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, "
     "6 LinkErrorRecovery, 7 PhyTest).",
     Format::kState},
    {"lid", "fabric_port_lid", kGauge,
     "Port LID from ports/<n>/lid (0 until the SM assigns one).", Format::kHex},
    {"sm_lid", "fabric_port_sm_lid", kGauge,
     "LID of the master subnet manager from ports/<n>/sm_lid.", Format::kHex},
    {"sm_sl", "fabric_port_sm_sl", kGauge,
     "Service level for SM traffic from ports/<n>/sm_sl.", Format::kDecimal},
    {"cap_mask", "fabric_port_capability_mask", kGauge,
     "PortInfo CapabilityMask from ports/<n>/cap_mask.", Format::kHex},
    {"counters/port_xmit_data", "fabric_port_transmit_bytes_total", kCounter,
     "Bytes transmitted on all VLs (counters/port_xmit_data x 4).",
     Format::kCounter, 4},
    {"counters/port_rcv_data", "fabric_port_receive_bytes_total", kCounter,
     "Bytes received on all VLs (counters/port_rcv_data x 4).",
     Format::kCounter, 4},
    {"counters/port_xmit_packets", "fabric_port_transmit_packets_total",
     kCounter, "Packets transmitted incl. errors (counters/port_xmit_packets).",
     Format::kCounter},
    {"counters/port_rcv_packets", "fabric_port_receive_packets_total", kCounter,
     "Packets received incl. errors (counters/port_rcv_packets).",
     Format::kCounter},
    {"counters/unicast_xmit_packets",
     "fabric_port_unicast_transmit_packets_total", kCounter,
     "Unicast packets transmitted (counters/unicast_xmit_packets).",
     Format::kCounter},
    {"counters/unicast_rcv_packets",
     "fabric_port_unicast_receive_packets_total", kCounter,
     "Unicast packets received (counters/unicast_rcv_packets).",
     Format::kCounter},
    {"counters/multicast_xmit_packets",
     "fabric_port_multicast_transmit_packets_total", kCounter,
     "Multicast packets transmitted (counters/multicast_xmit_packets).",
     Format::kCounter},
    {"counters/multicast_rcv_packets",
     "fabric_port_multicast_receive_packets_total", kCounter,
     "Multicast packets received (counters/multicast_rcv_packets).",
     Format::kCounter},
    {"counters/port_xmit_wait", "fabric_port_transmit_wait_total", kCounter,
     "Ticks with data to send but no credits/arbitration "
     "(counters/port_xmit_wait, 32-bit PortCounters field).",
     Format::kCounter, 1, 32},
    {"counters/symbol_error", kErrors, kCounter, kErrorsHelp, Format::kCounter,
     1, 16},
    {"counters/link_error_recovery", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 8},
    {"counters/link_downed", kErrors, kCounter, kErrorsHelp, Format::kCounter,
     1, 8},
    {"counters/port_rcv_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 16},
    {"counters/port_rcv_remote_physical_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 16},
    {"counters/port_rcv_switch_relay_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 16},
    {"counters/port_xmit_discards", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 16},
    {"counters/port_xmit_constraint_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 8},
    {"counters/port_rcv_constraint_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 8},
    {"counters/local_link_integrity_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 4},
    {"counters/excessive_buffer_overrun_errors", kErrors, kCounter, kErrorsHelp,
     Format::kCounter, 1, 4},
    {"counters/VL15_dropped", kErrors, kCounter, kErrorsHelp, Format::kCounter,
     1, 16},
    // Exposed by some kernels (procfs parses it); width not documented, so
    // no saturation flag.
    {"counters/port_rcv_discards", kErrors, kCounter, kErrorsHelp,
     Format::kCounter},
};

constexpr std::string_view kCountersPrefix = "counters/";

// Legacy mlx4 stacks (MLNX_OFED) add counters_ext/ with 64-bit versions of
// the data/packet counters because their counters/ files are the 32-bit
// PortCounters fields (port_xmit_data wraps after 16 GiB). node_exporter
// exports both, as node_infiniband_port_* and node_infiniband_legacy_*.
// fabricmon exports each quantity once: a readable counters_ext/ value
// replaces the counters/ value of the same quantity, so the one series is the
// non-wrapping one and sum() never double counts.
struct ExtSpec {
  std::string_view ext_file;       // ports/<n>/counters_ext/<ext_file>
  std::string_view counters_file;  // the counters/ quantity it replaces
};

constexpr ExtSpec kExtCounters[] = {
    {"port_xmit_data_64", "port_xmit_data"},
    {"port_rcv_data_64", "port_rcv_data"},
    {"port_xmit_packets_64", "port_xmit_packets"},
    {"port_rcv_packets_64", "port_rcv_packets"},
    {"port_unicast_xmit_packets", "unicast_xmit_packets"},
    {"port_unicast_rcv_packets", "unicast_rcv_packets"},
    {"port_multicast_xmit_packets", "multicast_xmit_packets"},
    {"port_multicast_rcv_packets", "multicast_rcv_packets"},
};

constexpr std::string_view kOtherCounter = "fabric_port_other_total";
constexpr std::string_view kOtherCounterHelp =
    "A counters/ or counters_ext/ file fabricmon has no dedicated metric for, "
    "value as read (no unit conversion).";

constexpr std::size_t kNumPortFiles = std::size(kPortFiles);

// Index of the counters/ row for `file` ("port_rcv_data"), or kNumPortFiles.
std::size_t FindCounter(std::string_view file) {
  for (std::size_t i = 0; i < kNumPortFiles; ++i) {
    const auto& spec = kPortFiles[i];
    if (spec.format == Format::kCounter &&
        spec.file.substr(kCountersPrefix.size()) == file) {
      return i;
    }
  }
  return kNumPortFiles;
}

// Parses an attribute file per its format.
Parsed<std::uint64_t> ParseAttribute(Format format, std::string_view text) {
  switch (format) {
    case Format::kState: {
      auto state = ParseState(text);
      return {state.status, state.value.id};
    }
    case Format::kHex:
      return ParseHex(text);
    case Format::kCounter:
    case Format::kDecimal:
      return ParseU64(text);
  }
  return {};
}

const ExtSpec* FindExt(std::string_view file) {
  for (const auto& spec : kExtCounters) {
    if (spec.ext_file == file) return &spec;
  }
  return nullptr;
}

bool IsAbsent(const std::error_code& error) {
  return error == std::errc::no_such_file_or_directory ||
         error == std::errc::not_a_directory;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out.append(dir);
  out.push_back('/');
  out.append(name);
  return out;
}

class IbPortCollector final : public Collector {
 public:
  IbPortCollector(CollectorEnv env, DeviceFilter devices, CounterFilter series)
      : env_(std::move(env)),
        devices_(std::move(devices)),
        series_(std::move(series)) {}

  std::string_view Name() const override { return "ib_port"; }

  bool Collect(MetricSink& sink) override {
    if (!reader_) reader_ = env_.sysfs->NewReader();
    reader_->Begin();
    ++generation_;
    IbPortList list = ListIbPorts(*reader_, devices_, &sink);
    for (const auto& device : list.devices) CollectDevice(device, sink);
    // Plans of directories not read this round (a device gone or filtered).
    std::erase_if(
        plans_, [&](const auto& kv) { return kv.second.seen != generation_; });
    return list.ok;
  }

 private:
  // Device attributes repeated as labels on every fabric_port_info.
  struct DeviceAttrs {
    std::string node_guid, hca_type, fw_ver;
  };

  // Reads an attribute that may legitimately be absent (hfi1 has no
  // hca_type, most trees no node_desc). Absent = nullopt without a skip;
  // any other read error is a skipped input.
  // `fixed`: set by the kernel when it creates the device (SysfsReader::
  // ReadFixed), so a kept copy is as good as a new read.
  std::optional<std::string> ReadAttr(std::string_view dir,
                                      std::string_view name, MetricSink& sink,
                                      bool fixed = false) const {
    ReadResult r =
        fixed ? reader_->ReadFixed(dir, name) : reader_->Read(dir, name);
    if (!r.ok()) {
      if (!IsAbsent(r.error())) {
        sink.Skip(JoinPath(dir, name) + ": " + r.error().message());
      }
      return std::nullopt;
    }
    std::string_view trimmed = TrimValue(*r);
    if (trimmed.size() == r->size()) return std::move(*r);
    return std::string(trimmed);
  }

  std::string GuidAttr(std::string_view dir, std::string_view name,
                       MetricSink& sink) const {
    auto text = ReadAttr(dir, name, sink, /*fixed=*/true);
    if (!text) return {};
    auto guid = ParseGuid(*text);
    if (!guid.ok()) {
      sink.Skip(JoinPath(dir, name) + ": bad GUID");
      return {};
    }
    return FormatGuid(guid.value);
  }

  void CollectDevice(const IbDevicePorts& walked, MetricSink& sink) const {
    const std::string& device = walked.device;
    const std::string& dir = walked.dir;
    DeviceAttrs attrs;
    attrs.node_guid = GuidAttr(dir, "node_guid", sink);
    attrs.hca_type =
        ReadAttr(dir, "hca_type", sink, /*fixed=*/true).value_or("");
    attrs.fw_ver = ReadAttr(dir, "fw_ver", sink, /*fixed=*/true).value_or("");
    std::string sys_image_guid = GuidAttr(dir, "sys_image_guid", sink);
    std::string board_id =
        ReadAttr(dir, "board_id", sink, /*fixed=*/true).value_or("");
    std::string node_desc = ReadAttr(dir, "node_desc", sink).value_or("");
    sink.Gauge("fabric_device_info",
               "RDMA device inventory from class/infiniband/<device> "
               "attributes; value is always 1.",
               LabelRefs{{"device", device},
                         {"hca_type", attrs.hca_type},
                         {"fw_ver", attrs.fw_ver},
                         {"board_id", std::move(board_id)},
                         {"node_guid", attrs.node_guid},
                         {"sys_image_guid", std::move(sys_image_guid)},
                         {"node_desc", std::move(node_desc)}},
               1);
    std::string port_dir = dir + "/ports/";
    const std::size_t base = port_dir.size();
    for (const auto& port : walked.ports) {
      port_dir.resize(base);
      port_dir.append(port);
      CollectPort(device, port, port_dir, attrs, sink);
    }
  }

  void CollectPort(const std::string& device, const std::string& port,
                   const std::string& dir, const DeviceAttrs& attrs,
                   MetricSink& sink) const {
    for (const auto& spec : kPortFiles) {
      if (spec.format == Format::kCounter) continue;
      auto text = ReadAttr(dir, spec.file, sink);
      if (!text) continue;
      auto value = ParseAttribute(spec.format, *text);
      if (!value.ok()) {
        sink.Skip(JoinPath(dir, spec.file) + ": " +
                  std::string(ParseStatusName(value.status)));
        continue;
      }
      sink.Gauge(spec.metric, spec.help,
                 LabelRefs{{"device", device}, {"port", port}},
                 static_cast<double>(value.value));
    }
    if (auto text = ReadAttr(dir, "rate", sink)) {
      auto rate = ParseRate(*text);
      if (rate.ok()) {
        sink.Gauge("fabric_port_rate_bytes_per_second",
                   "Active link rate from ports/<n>/rate (Gb/sec x 1e9 / 8).",
                   LabelRefs{{"device", device}, {"port", port}},
                   rate.value.bytes_per_second);
        if (rate.value.lanes > 0) {
          sink.Gauge("fabric_port_link_width_lanes",
                     "Active link width in lanes from ports/<n>/rate (4X = 4).",
                     LabelRefs{{"device", device}, {"port", port}},
                     rate.value.lanes);
        }
      } else if (rate.status != ParseStatus::kNotAvailable) {
        sink.Skip(dir + "/rate: " + std::string(ParseStatusName(rate.status)));
      }
    }

    std::string link_layer =
        ReadAttr(dir, "link_layer", sink, /*fixed=*/true).value_or("");
    // The port's primary netdev by the port map's rule (sources/port_map.h).
    const std::string netdev =
        port_map_.Netdevs(*reader_, device, port, link_layer).Primary();
    sink.Gauge("fabric_port_info",
               "RDMA port inventory; value is always 1. port_guid from "
               "gids/0, netdev from gid_attrs/ndevs/0 or device/net.",
               LabelRefs{{"device", device},
                         {"port", port},
                         {"link_layer", std::move(link_layer)},
                         {"node_guid", attrs.node_guid},
                         {"port_guid", PortGuid(dir)},
                         {"hca_type", attrs.hca_type},
                         {"fw_ver", attrs.fw_ver},
                         {"netdev", netdev}},
               1);

    CollectCounters(device, port, dir, sink);
  }

  // Port GUID = interface id of GID 0. Optional: recorded trees often lack
  // gids/, and reading it is not a counter, so failures are not skips.
  std::string PortGuid(const std::string& dir) const {
    ReadResult r = reader_->Read(dir, "gids/0");
    if (!r.ok()) return {};
    auto guid = ParseGidInterfaceId(*r);
    return guid.ok() ? FormatGuid(guid.value) : std::string();
  }

  // What one counters/ or counters_ext/ listing means, worked out when the
  // listing first appears (or changes) instead of per file per poll: each
  // file's read handle and kPortFiles row (kOther: exported as
  // fabric_port_other_total; kDrop: not read, an ext file whose quantity
  // has no row or a file none of whose series the config keeps).
  static constexpr std::size_t kOther = kNumPortFiles;
  static constexpr std::size_t kDrop = kNumPortFiles + 1;
  struct CounterPlan {
    std::vector<std::string> names;  // the listing the plan was made for
    std::vector<SysfsReader::KeptFile> files;
    std::vector<std::size_t> rows;
    std::uint64_t seen = 0;  // the collection that last read it
  };

  const CounterPlan& Plan(const std::string& dir,
                          const std::vector<std::string>& files,
                          bool ext) const {
    CounterPlan& plan = plans_[dir];
    plan.seen = generation_;
    if (plan.names == files) return plan;
    plan.names = files;
    plan.files.clear();
    plan.rows.clear();
    for (const auto& file : files) {
      std::size_t row = kOther;
      if (!ext) {
        row = std::min(FindCounter(file), kOther);
      } else if (const ExtSpec* spec = FindExt(file)) {
        row = FindCounter(spec->counters_file);
        if (row >= kNumPortFiles) row = kDrop;
      }
      if (!Wanted(row, file)) row = kDrop;
      plan.rows.push_back(row);
      plan.files.push_back(row == kDrop ? SysfsReader::KeptFile{}
                                        : reader_->Keep(dir, file));
    }
    return plan;
  }

  // Whether the config keeps a series of this file (CollectCounters'
  // families): one it drops is not read at all, so excluding counters saves
  // their reads (issue 44 item 3), not only their series.
  bool Wanted(std::size_t row, std::string_view file) const {
    if (row == kDrop) return false;
    if (series_.empty()) return true;
    if (row == kOther) return series_.Allows(kOtherCounter, file);
    const auto& spec = kPortFiles[row];
    const std::string_view name = spec.file.substr(kCountersPrefix.size());
    return (spec.metric == kErrors ? series_.Allows(kErrors, name)
                                   : series_.Allows(spec.metric, "")) ||
           (spec.saturate_bits > 0 &&
            series_.Allows("fabric_port_counters_saturated", name));
  }

  // Reads the listed counters of `dir` into values/have (by row) and
  // `others` (by name; the names live in the plan).
  void ReadCounters(
      const std::string& dir, bool ext, std::uint64_t* values, bool* have,
      std::vector<std::pair<std::string_view, std::uint64_t>>& others,
      MetricSink& sink) const {
    std::error_code error;
    const auto* files = reader_->List(dir, true, &error);
    if (!files) {
      // An absent counters/ is normal (soft-RoCE rxe has only hw_counters/).
      if (!ext && !IsAbsent(error)) sink.Skip(dir + ": " + error.message());
      return;
    }
    const CounterPlan& plan = Plan(dir, *files, ext);
    char buf[64];  // a counter is at most 20 digits
    for (std::size_t i = 0; i < plan.files.size(); ++i) {
      const std::size_t row = plan.rows[i];
      if (row == kDrop) continue;
      const std::string& name = plan.names[i];
      const auto r = reader_->ReadKept(plan.files[i], buf);
      if (!r.ok()) {
        sink.Skip(JoinPath(dir, name) + ": " + r.error().message());
        continue;
      }
      const auto parsed = ParseU64(*r);
      if (!parsed.ok()) {
        sink.Skip(JoinPath(dir, name) + ": " +
                  std::string(ParseStatusName(parsed.status)));
        continue;
      }
      if (row < kNumPortFiles) {
        values[row] = parsed.value;
        have[row] = true;
      } else if (row == kOther) {
        others.emplace_back(name, parsed.value);
      }
    }
  }

  void CollectCounters(const std::string& device, const std::string& port,
                       const std::string& dir, MetricSink& sink) const {
    // Values by kPortFiles row; files without a row go to `others`, sorted
    // by name (a counters_ext/ value replaces a counters/ one of the same
    // name).
    std::uint64_t values[kNumPortFiles];
    bool have[kNumPortFiles] = {};
    others_.clear();
    ReadCounters(dir + "/counters", false, values, have, others_, sink);
    ReadCounters(dir + "/counters_ext", true, values, have, others_, sink);
    // Stable: of two equal names the counters_ext/ one (read last) stays
    // last, and is the one kept below.
    std::stable_sort(
        others_.begin(), others_.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });

    for (std::size_t row = 0; row < kNumPortFiles; ++row) {
      const auto& spec = kPortFiles[row];
      if (spec.format != Format::kCounter || !have[row]) continue;
      const std::string_view file = spec.file.substr(kCountersPrefix.size());
      const std::uint64_t raw = values[row];
      const double value = static_cast<double>(raw) * spec.multiplier;
      if (spec.metric == kErrors) {
        sink.Counter(kErrors, kErrorsHelp,
                     LabelRefs{{"device", device},
                               {"error", std::string(file)},
                               {"port", port}},
                     value);
      } else {
        sink.Counter(spec.metric, spec.help,
                     LabelRefs{{"device", device}, {"port", port}},
                     value);  // all kCounter
      }
      if (spec.saturate_bits > 0) {
        const std::uint64_t max = (std::uint64_t{1} << spec.saturate_bits) - 1;
        sink.Gauge("fabric_port_counters_saturated",
                   "1 when a saturating PortCounters field sits at its "
                   "maximum (2^width-1) and no longer counts; 0 otherwise.",
                   LabelRefs{{"counter", std::string(file)},
                             {"device", device},
                             {"port", port}},
                   raw >= max ? 1 : 0);
      }
    }
    for (std::size_t i = 0; i < others_.size(); ++i) {
      if (i + 1 < others_.size() && others_[i + 1].first == others_[i].first) {
        continue;
      }
      const auto& [file, raw] = others_[i];
      sink.Counter(
          kOtherCounter, kOtherCounterHelp,
          LabelRefs{{"counter", file}, {"device", device}, {"port", port}},
          static_cast<double>(raw));
    }
  }

  CollectorEnv env_;
  DeviceFilter devices_;
  CounterFilter series_;
  // Created on the first Collect(); keeps directory handles and open
  // attribute files from one collection to the next (sources/sysfs.h).
  mutable std::unique_ptr<SysfsReader> reader_;
  // Which netdev is each port's (sources/port_map.h).
  mutable PortMap port_map_;
  mutable std::unordered_map<std::string, CounterPlan> plans_;  // by dir
  std::uint64_t generation_ = 0;  // collections so far
  // CollectCounters' scratch, kept for its capacity.
  mutable std::vector<std::pair<std::string_view, std::uint64_t>> others_;
};

}  // namespace

std::unique_ptr<Collector> MakeIbPortCollector(const CollectorEnv& env,
                                               const CollectorConfig& config) {
  return std::make_unique<IbPortCollector>(env, config.devices, config.series);
}

CollectorSpec IbPortCollectorSpec() {
  CollectorSpec spec;
  spec.name = "ib_port";
  spec.interval = kCounterPollInterval;
  spec.make = MakeIbPortCollector;
  return spec;
}

}  // namespace fabric
