#include "collectors/hw_counters.h"

#include <algorithm>
#include <exception>
#include <unordered_map>
#include <vector>

#include "sources/ib_walk.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;

// mlx5 basic/retransmission/extended-error/RoCE-accel Q-counters: read with
// be32_to_cpu in drivers/infiniband/hw/mlx5/counters.c, so they wrap at 2^32.
// The congestion (rp_*, np_*) and PPCNT counters are 64-bit and not listed.
constexpr std::string_view kQCounters32[] = {
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "rx_dct_connect",
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
};

// hw_counters files that also get a dedicated, documented metric (in
// addition to fabric_hw_counters_total{counter="<file>"}), because dashboards
// and alerts are built on them.
struct NamedSpec {
  std::string_view file;
  std::string_view metric;
  std::string_view help;
};

constexpr NamedSpec kNamed[] = {
    {"np_cnp_sent", "fabric_roce_cnp_sent_total",
     "CNPs sent by the notification point in reply to ECN-marked packets "
     "(hw_counters/np_cnp_sent)."},
    {"rp_cnp_handled", "fabric_roce_cnp_handled_total",
     "CNPs received and handled by the reaction point, i.e. DCQCN throttled "
     "the sender (hw_counters/rp_cnp_handled)."},
    {"rp_cnp_ignored", "fabric_roce_cnp_ignored_total",
     "CNPs received but ignored by the reaction point "
     "(hw_counters/rp_cnp_ignored)."},
    {"np_ecn_marked_roce_packets", "fabric_roce_ecn_marked_packets_total",
     "ECN-CE-marked RoCE packets received by the notification point "
     "(hw_counters/np_ecn_marked_roce_packets)."},
    {"out_of_sequence", "fabric_roce_out_of_sequence_total",
     "Packets received with an out-of-sequence PSN, i.e. loss or reordering "
     "on the path (hw_counters/out_of_sequence, 32-bit, unwrapped)."},
    {"packet_seq_err", "fabric_roce_packet_sequence_errors_total",
     "NAK-sequence-error packets received by the requester, each causing a "
     "go-back-N retransmission (hw_counters/packet_seq_err, unwrapped)."},
    {"local_ack_timeout_err", "fabric_roce_local_ack_timeout_errors_total",
     "RC ACK timer expirations on the requester: loss or a black hole "
     "(hw_counters/local_ack_timeout_err, unwrapped)."},
    {"roce_adp_retrans", "fabric_roce_adaptive_retransmissions_total",
     "Adaptive retransmission events (hw_counters/roce_adp_retrans, "
     "unwrapped)."},
    {"roce_slow_restart", "fabric_roce_slow_restarts_total",
     "Times RoCE slow restart was used for loss recovery "
     "(hw_counters/roce_slow_restart, unwrapped)."},
};

// `lifespan` is the counter cache lifetime in ms (a writable setting), not a
// counter; it is not exported.
constexpr std::string_view kLifespan = "lifespan";

class HwCountersCollector final : public Collector {
 public:
  HwCountersCollector(CollectorEnv env, DeviceFilter devices,
                      CounterFilter series)
      : env_(std::move(env)),
        filter_(std::move(devices)),
        series_(std::move(series)) {}

  std::string_view Name() const override { return "hw_counters"; }

  bool Collect(MetricSink& sink) override {
    if (!reader_) reader_ = env_.sysfs->NewReader();
    reader_->Begin();
    ++generation_;
    IbPortList list = ListIbPorts(*reader_, filter_, &sink);
    std::set<std::string> present;
    for (const auto& device : list.devices) {
      CollectDevice(device, sink);
      present.insert(device.device);
    }
    // A device that was not seen this round (vanished ones included)
    // loses its unwrap state, so if it comes back its counters restart
    // from their raw values.
    if (list.ok) unwrapper_.Retain(present);
    // Plans of directories not read this round (a device gone or filtered).
    std::erase_if(
        plans_, [&](const auto& kv) { return kv.second.seen != generation_; });
    return list.ok;
  }

 private:
  // What one hw_counters/ listing means, worked out when the listing is
  // first seen (or changes) instead of for every file of every poll: each
  // file's read handle, unwrap key and dedicated metric.
  struct FilePlan {
    SysfsReader::KeptFile file = 0;
    bool skip = false;                 // `lifespan`: a setting, not a counter
    std::string unwrap_key;            // empty: not a 32-bit Q-counter
    const NamedSpec* named = nullptr;  // its dedicated metric, if any
  };
  struct DirPlan {
    std::vector<std::string> names;  // the listing the plan was made for
    std::vector<FilePlan> files;     // by position in `names`
    std::uint64_t seen = 0;          // the collection that last read it
  };

  void CollectDevice(const IbDevicePorts& walked, MetricSink& sink) {
    const std::string& device = walked.device;
    const std::string& dir = walked.dir;
    CollectDir(device, "", dir + "/hw_counters", sink);
    for (const auto& port : walked.ports) {
      CollectDir(device, port, dir + "/ports/" + port + "/hw_counters", sink);
    }
  }

  DirPlan& Plan(const std::string& port, const std::string& dir,
                const std::vector<std::string>& files) {
    DirPlan& plan = plans_[dir];
    plan.seen = generation_;
    if (plan.names == files) return plan;
    plan.names = files;
    plan.files.clear();
    for (const auto& file : files) {
      FilePlan& f = plan.files.emplace_back();
      for (const auto& named : kNamed) {
        if (named.file == file) f.named = &named;
      }
      f.skip = file == kLifespan || !Wanted(port, file, f.named);
      if (f.skip) continue;
      f.file = reader_->Keep(dir, file);
      if (IsQCounter32(file)) {
        f.unwrap_key.assign(port.empty() ? std::string_view("-") : port);
        f.unwrap_key.push_back('/');
        f.unwrap_key.append(file);
      }
    }
    return plan;
  }

  // Whether the config keeps a series of this file: one it drops is not
  // opened at all, so excluding counters saves their reads (issue 44 item
  // 3), not only their series.
  bool Wanted(const std::string& port, const std::string& file,
              const NamedSpec* named) const {
    if (series_.empty()) return true;
    if (port.empty()) {
      return series_.Allows("fabric_device_hw_counters_total", file);
    }
    return series_.Allows("fabric_hw_counters_total", file) ||
           (named && series_.Allows(named->metric, ""));
  }

  // `port` empty = device-level hw_counters/.
  void CollectDir(const std::string& device, const std::string& port,
                  const std::string& dir, MetricSink& sink) {
    std::error_code error;
    // hw_counters/ is an attribute group the driver registers with the
    // device: its entries do not change while the directory exists.
    const auto* files = reader_->List(dir, /*stable=*/true, &error);
    if (!files) {
      // Absent is normal: only some drivers have hw_counters at all.
      if (error != std::errc::no_such_file_or_directory &&
          error != std::errc::not_a_directory) {
        sink.Skip(dir + ": " + error.message());
      }
      return;
    }
    const DirPlan& plan = Plan(port, dir, *files);
    // Counters are short (a 64-bit value is 20 digits); a longer content is
    // an unreadable counter (EOVERFLOW).
    char buf[64];
    for (std::size_t i = 0; i < plan.files.size(); ++i) {
      const FilePlan& f = plan.files[i];
      if (f.skip) continue;
      const std::string& file = plan.names[i];
      const auto r = reader_->ReadKept(f.file, buf);
      if (!r.ok()) {
        sink.Skip(dir + "/" + file + ": " + r.error().message());
        continue;
      }
      auto parsed = ParseU64(*r);
      if (!parsed.ok()) {
        sink.Skip(dir + "/" + file + ": " +
                  std::string(ParseStatusName(parsed.status)));
        continue;
      }
      std::uint64_t value = parsed.value;
      if (!f.unwrap_key.empty()) {
        value = unwrapper_.Update(device, f.unwrap_key, value);
      }
      if (port.empty()) {
        sink.Counter("fabric_device_hw_counters_total",
                     "Device-level hw_counters/<counter>, name as-is "
                     "(32-bit mlx5 Q-counters unwrapped to 64 bits).",
                     LabelRefs{{"counter", file}, {"device", device}},
                     static_cast<double>(value));
        continue;
      }
      sink.Counter(
          "fabric_hw_counters_total",
          "Per-port hw_counters/<counter>, name as-is (32-bit mlx5 "
          "Q-counters unwrapped to 64 bits).",
          LabelRefs{{"counter", file}, {"device", device}, {"port", port}},
          static_cast<double>(value));
      if (f.named) {
        sink.Counter(f.named->metric, f.named->help,
                     LabelRefs{{"device", device}, {"port", port}},
                     static_cast<double>(value));
      }
    }
  }

  CollectorEnv env_;
  DeviceFilter filter_;
  CounterFilter series_;
  // Created on the first Collect(); keeps directory handles and open
  // counter files from one collection to the next (sources/sysfs.h).
  std::unique_ptr<SysfsReader> reader_;
  Q32Unwrapper unwrapper_;
  std::unordered_map<std::string, DirPlan> plans_;  // by directory
  std::uint64_t generation_ = 0;                    // collections so far
};

}  // namespace

std::span<const std::string_view> QCounter32Names() { return kQCounters32; }

bool IsQCounter32(std::string_view counter) {
  return std::find(std::begin(kQCounters32), std::end(kQCounters32), counter) !=
         std::end(kQCounters32);
}

std::uint64_t Q32Unwrapper::Update(const std::string& device,
                                   const std::string& key, std::uint64_t raw) {
  // Two lookups and no allocation once the key exists (the steady state).
  auto dev = devices_.find(device);
  if (dev == devices_.end()) dev = devices_.try_emplace(device).first;
  auto& keys = dev->second;
  auto it = keys.find(key);
  const bool inserted = it == keys.end();
  if (inserted) it = keys.try_emplace(key).first;
  State& state = it->second;
  if (raw >= kTwo32) {
    state = {raw, 0};
    return raw;
  }
  if (!inserted && raw < state.last) {
    // The increase a wrap would imply; more than half the range within one
    // poll is not plausible (even 800 Mpps for 1 s is < 2^31), so it is a
    // reset instead.
    const std::uint64_t implied = kTwo32 - state.last + raw;
    if (state.last < kTwo32 && implied < kTwo32 / 2) {
      state.offset += kTwo32;
    } else {
      state.offset = 0;
    }
  }
  state.last = raw;
  return state.offset + raw;
}

void Q32Unwrapper::Retain(const std::set<std::string>& present) {
  for (auto it = devices_.begin(); it != devices_.end();) {
    it = present.contains(it->first) ? std::next(it) : devices_.erase(it);
  }
}

std::size_t Q32Unwrapper::size() const {
  std::size_t n = 0;
  for (const auto& [device, keys] : devices_) n += keys.size();
  return n;
}

std::unique_ptr<Collector> MakeHwCountersCollector(
    const CollectorEnv& env, const CollectorConfig& config) {
  return std::make_unique<HwCountersCollector>(env, config.devices,
                                               config.series);
}

CollectorSpec HwCountersCollectorSpec() {
  CollectorSpec spec;
  spec.name = "hw_counters";
  spec.interval = kCounterPollInterval;
  spec.make = MakeHwCountersCollector;
  return spec;
}

}  // namespace fabric
