#include "collectors/roce.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include "config/yaml_keys.h"
#include "sources/dcb_file.h"
#include "sources/ethtool_file.h"
#include "sources/ethtool_ioctl.h"
#include "sources/ib_walk.h"
#include "sources/port_map.h"
#include "sources/roce_rdma_netlink.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// Bounds on what one collection reads, against odd or hostile trees.
constexpr std::size_t kMaxGidEntries = 1024;

Labels Base(const RoceNetdev& w) {
  return {{"device", w.device}, {"port", w.port}, {"netdev", w.netdev}};
}

Labels With(Labels l, std::initializer_list<Labels::value_type> extra) {
  l.insert(l.end(), extra.begin(), extra.end());
  return l;
}

constexpr double kMicro = 1e-6;

void Count(MetricSink& sink, std::string_view name, std::string_view help,
           const Labels& labels, const OptU64& v, double scale = 1.0) {
  if (v) sink.Counter(name, help, labels, static_cast<double>(*v) * scale);
}

// RoCE ports are the Ethernet ones; link_layer is fixed when the kernel
// creates the port.
bool IsEthernet(SysfsReader& reader, const std::string& pdir) {
  auto ll = reader.ReadFixed(pdir, "link_layer");
  return ll.ok() && TrimValue(*ll) == "Ethernet";
}

// Adds the netdevs of one Ethernet port by the port map's rule
// (sources/port_map.h): its own, then a bond's slaves, which carry the
// physical-port counters of a RoCE LAG.
void AddPortNetdevs(SysfsReader& reader, const std::string& dev,
                    const std::string& port, std::vector<RoceNetdev>& out) {
  for (std::string& n : ReadPortNetdevs(reader, dev, port, "Ethernet").All()) {
    out.push_back({dev, port, std::move(n)});
  }
}

// DiscoverRoceNetdevs over a walk already made.
std::vector<RoceNetdev> Discover(SysfsReader& reader, const IbPortList& walk) {
  std::vector<RoceNetdev> out;
  for (const IbDevicePorts& dev : walk.devices) {
    for (const std::string& port : dev.ports) {
      if (IsEthernet(reader, PortPath(dev.device, port))) {
        AddPortNetdevs(reader, dev.device, port, out);
      }
    }
  }
  return out;
}

class RoceCollector final : public Collector {
 public:
  RoceCollector(CollectorEnv env, RoceOptions options,
                std::unique_ptr<EthtoolSource> ethtool,
                std::unique_ptr<DcbSource> dcb,
                std::unique_ptr<RdmaStatSource> rdma,
                std::unique_ptr<FecSource> fec)
      : env_(std::move(env)),
        options_(std::move(options)),
        ethtool_(std::move(ethtool)),
        dcb_(std::move(dcb)),
        rdma_(std::move(rdma)),
        fec_(std::move(fec)) {}

  std::string_view Name() const override { return "roce"; }

  bool Collect(MetricSink& sink) override { return CollectImpl(sink); }

 private:
  bool CollectImpl(MetricSink& sink) {
    if (!reader_) reader_ = env_.sysfs->NewReader();
    reader_->Begin();
    // One walk for discovery and the per-port metrics.
    const IbPortList walk = ListIbPorts(*reader_, options_.devices);
    std::vector<RoceNetdev> targets;
    if (options_.netdevs) {
      targets = *options_.netdevs;
    } else {
      targets = Discover(*reader_, walk);
      for (const std::string& extra : options_.extra_netdevs) {
        bool known =
            std::any_of(targets.begin(), targets.end(),
                        [&](const auto& t) { return t.netdev == extra; });
        if (!known && PlausibleNetdev(extra))
          targets.push_back({"", "", extra});
      }
      // Only netdevs that exist in the tree being monitored: on /sys this is
      // every live netdev; on a recorded or simulated tree it keeps us from
      // reading a host interface that merely has the same name. A
      // file-backed ethtool source reads no host interface (its dumps
      // belong to the tree), so there the filter would only hide data.
      if (options_.ethtool_is_kernel) {
        std::erase_if(targets, [&](const RoceNetdev& t) {
          if (reader_->IsDirectory("class/net/" + t.netdev)) return false;
          sink.Skip("netdev " + t.netdev + " not in class/net");
          return true;
        });
      }
    }
    CollectPorts(walk, sink);

    std::size_t ethtool_failed = 0;
    for (const RoceNetdev& t : targets) {
      bool foreign = false;  // same name, another interface than the tree's
      if (ethtool_) {
        EthtoolResult r = ethtool_->Stats(t.netdev);
        if (r.ok() && r->skipped_lines > 0) {
          sink.Skip("ethtool " + t.netdev + ": " +
                    std::to_string(r->skipped_lines) + " malformed line(s)");
        }
        // The address check compares the running kernel's interface with
        // the tree's; a file-backed source is not the kernel (and has no
        // address), so it does not apply there.
        if (r.ok() && options_.ethtool_is_kernel &&
            IsForeign(t.netdev, r->hw_address)) {
          foreign = true;
          sink.Skip("netdev " + t.netdev +
                    ": address differs from class/net/<if>/address");
        } else if (r.ok()) {
          sink.Gauge("fabric_roce_netdev_info",
                     "Netdev read by the roce collector, with its ethtool "
                     "driver (ETHTOOL_GDRVINFO).",
                     With(Base(t), {{"driver", r->driver}}), 1);
          EmitEthtoolMetrics(ParseEthtoolStats(r->names, r->values), t, sink);
          CollectLink(t, sink);
        } else {
          // ENODEV: the netdev went away since discovery, a race rather
          // than a broken source.
          if (r.error() != std::errc::no_such_device) ++ethtool_failed;
          sink.Skip("ethtool " + t.netdev + ": " + r.error().message());
        }
      }
      CollectEcn(t, sink);
      if (fec_ && !foreign) CollectFec(t, sink);
      if (dcb_ && !foreign) {
        DcbResult d = dcb_->Ieee(t.netdev);
        if (d.ok()) {
          EmitDcbMetrics(*d, t, sink);
        } else if (d.error() != std::errc::operation_not_supported &&
                   d.error() != std::errc::no_such_device &&
                   d.error() != std::errc::invalid_argument) {
          // EOPNOTSUPP (no dcbnl ops, e.g. veth) is "no DCB", not a failure.
          sink.Skip("dcb " + t.netdev + ": " + d.error().message());
        }
      }
    }
    // The source as a whole failed only if every netdev failed for a reason
    // other than having disappeared (e.g. the socket could not be created).
    return targets.empty() || ethtool_failed < targets.size();
  }

  // True when the kernel's interface of that name has another address than
  // the tree says: the tree is a recording or simulation, not this host.
  bool IsForeign(const std::string& netdev, const std::string& hw_address) {
    if (hw_address.empty()) return false;
    auto r = reader_->Read("class/net/" + netdev, "address");
    return r.ok() && TrimValue(*r) != hw_address;
  }

  // Link speed against the link modes (ethtool link settings); a source or
  // driver without them is "nothing to say", not a failure.
  void CollectLink(const RoceNetdev& t, MetricSink& sink) {
    EthtoolLinkResult r = ethtool_->Link(t.netdev);
    if (r.ok()) {
      EmitLinkMetrics(*r, t, sink);
    } else if (r.error() != std::errc::operation_not_supported &&
               r.error() != std::errc::no_such_device) {
      sink.Skip("ethtool link settings " + t.netdev + ": " +
                r.error().message());
    }
  }

  void CollectFec(const RoceNetdev& t, MetricSink& sink) {
    EthtoolFecResult r = fec_->Fec(t.netdev);
    if (r.ok()) {
      EmitFecMetrics(*r, t, sink);
      return;
    }
    // No FEC op (veth, most virtual NICs), no such netdev (a race), no
    // ethtool netlink family (old kernel or none in this netns), or a kernel
    // that rejects ETHTOOL_FLAG_STATS: absent, not a failure.
    const std::error_code e = r.error();
    if (e != std::errc::operation_not_supported &&
        e != std::errc::no_such_device &&
        e != std::errc::no_such_file_or_directory &&
        e != std::errc::invalid_argument &&
        e != std::errc::protocol_not_supported) {
      sink.Skip("ethtool netlink FEC " + t.netdev + ": " + e.message());
    }
  }

  void CollectEcn(const RoceNetdev& t, MetricSink& sink) {
    for (const char* point : {"np", "rp"}) {
      const std::string dir =
          "class/net/" + t.netdev + "/ecn/roce_" + point + "/enable";
      // Not stable: an out-of-tree driver's directory, nothing promises
      // its entries stay put.
      const auto* prios = reader_->List(dir, /*stable=*/false, nullptr);
      if (!prios) continue;  // upstream kernels have no such tree
      for (const std::string& p : *prios) {
        if (p.size() != 1 || p[0] < '0' || p[0] > '7') continue;
        auto r = reader_->Read(dir, p);
        if (!r.ok()) {
          sink.Skip(dir + "/" + p + ": " + r.error().message());
          continue;
        }
        std::string_view v = TrimValue(*r);
        if (v != "0" && v != "1") {
          sink.Skip(dir + "/" + p + ": not 0/1");
          continue;
        }
        sink.Gauge("fabric_roce_ecn_enabled",
                   "1 if RoCE ECN is enabled on this priority for the "
                   "notification point (np, receiver) or reaction point (rp, "
                   "sender); class/net/<if>/ecn/roce_<point>/enable/<prio>.",
                   With(Base(t), {{"priority", p}, {"point", point}}),
                   v == "1" ? 1 : 0);
      }
    }
  }

  void CollectPorts(const IbPortList& walk, MetricSink& sink) {
    for (const IbDevicePorts& walked : walk.devices) {
      const std::string& dev = walked.device;
      for (const std::string& port : walked.ports) {
        const std::string pdir = PortPath(dev, port);
        if (!IsEthernet(*reader_, pdir)) continue;
        const std::string types = pdir + "/gid_attrs/types";
        // Stable: the GID table's entries are created with the port.
        const auto* idx = reader_->List(types, /*stable=*/true, nullptr);
        std::map<std::string, int> counts;
        std::size_t seen = 0;
        for (const std::string& i : idx ? *idx : std::vector<std::string>{}) {
          if (++seen > kMaxGidEntries) break;
          auto r = reader_->Read(types, i);
          if (!r.ok()) continue;  // unused entry: EINVAL
          std::string type = GidTypeLabel(*r);
          if (!type.empty()) ++counts[type];
        }
        for (const auto& [type, n] : counts) {
          sink.Gauge("fabric_roce_gid_entries",
                     "Populated GID table entries of the port by RoCE type "
                     "(ports/<n>/gid_attrs/types/*).",
                     {{"device", dev}, {"port", port}, {"type", type}}, n);
        }
        if (rdma_) CollectOptionalCounters(dev, port, sink);
      }
    }
  }

  // Counters the RDMA netlink reports for the port but hw_counters/ does
  // not show: mlx5's optional counters, when an administrator enabled them.
  void CollectOptionalCounters(const std::string& dev, const std::string& port,
                               MetricSink& sink) {
    auto guid_text = reader_->ReadFixed(IbDevicePath(dev), "node_guid");
    std::optional<std::uint64_t> guid;
    if (guid_text.ok()) guid = ParseNodeGuid(*guid_text);
    std::uint32_t port_num = 0;
    auto [end, ec] =
        std::from_chars(port.data(), port.data() + port.size(), port_num);
    if (!guid || ec != std::errc() || end != port.data() + port.size()) {
      return;  // cannot tie the tree's device to a kernel device
    }
    RdmaStatResult r = rdma_->PortCounters(dev, *guid, port_num);
    if (!r.ok()) {
      // No ib_core / no such device here / old kernel: absent, not an error.
      if (r.error() != std::errc::no_such_device &&
          r.error() != std::errc::protocol_not_supported &&
          r.error() != std::errc::operation_not_supported &&
          r.error() != std::errc::no_such_file_or_directory) {
        sink.Skip("rdma netlink " + dev + "/" + port + ": " +
                  r.error().message());
      }
      return;
    }
    // hw_counters/ is an attribute group registered with the port.
    const auto* listed =
        reader_->List(PortPath(dev, port) + "/hw_counters", true, nullptr);
    std::set<std::string> in_sysfs;
    if (listed) in_sysfs.insert(listed->begin(), listed->end());
    for (const RdmaCounter& c : *r) {
      if (in_sysfs.count(c.name)) continue;  // the hw_counters collector's
      sink.Counter("fabric_roce_optional_counter_total",
                   "mlx5 optional port counters (cc_rx_ce_pkts, "
                   "cc_rx_cnp_pkts, cc_tx_cnp_pkts, ...) that RDMA netlink "
                   "reports once enabled and hw_counters/ does not show.",
                   {{"device", dev}, {"port", port}, {"counter", c.name}},
                   static_cast<double>(c.value));
    }
  }

  CollectorEnv env_;
  RoceOptions options_;
  std::unique_ptr<EthtoolSource> ethtool_;
  std::unique_ptr<DcbSource> dcb_;
  std::unique_ptr<RdmaStatSource> rdma_;
  std::unique_ptr<FecSource> fec_;
  // Created on the first Collect(); every sysfs read of a collection goes
  // through it (sources/sysfs.h).
  std::unique_ptr<SysfsReader> reader_;
};

}  // namespace

std::vector<RoceNetdev> DiscoverRoceNetdevs(SysfsReader& reader,
                                            const DeviceFilter& devices) {
  return Discover(reader, ListIbPorts(reader, devices));
}

std::vector<RoceNetdev> DiscoverRoceNetdevs(const Sysfs& sysfs,
                                            const DeviceFilter& devices) {
  auto reader = sysfs.NewReader();
  reader->Begin();
  return DiscoverRoceNetdevs(*reader, devices);
}

std::string GidTypeLabel(std::string_view text) {
  text = TrimValue(text);
  if (text == "IB/RoCE v1" || text == "RoCE v1") return "roce_v1";
  if (text == "RoCE v2") return "roce_v2";
  std::string out;
  for (char c : text) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
               : '_';
  }
  return out;
}

void EmitEthtoolMetrics(const RoceEthtoolStats& s, const RoceNetdev& w,
                        MetricSink& sink) {
  const Labels base = Base(w);
  for (int p = 0; p < kPriorities; ++p) {
    const PriorityStats& ps = s.prio[p];
    const std::string prio = std::to_string(p);
    for (int d : {kRx, kTx}) {
      Labels l =
          With(base, {{"priority", prio}, {"direction", DirectionName(d)}});
      Count(
          sink, "fabric_pfc_pause_frames_total",
          "PFC pause frames per priority; rx = received (the peer paused "
          "us), tx = sent (we paused the peer). ethtool {rx,tx}_prio<p>_pause.",
          l, ps.pause[d]);
      Count(sink, "fabric_pfc_pause_duration_seconds_total",
            "Time paused by PFC per priority; rx = we could not send, tx = we "
            "asserted pause. ethtool {rx,tx}_prio<p>_pause_duration (us).",
            l, ps.pause_duration_us[d], kMicro);
      Count(sink, "fabric_pfc_pause_transitions_total",
            "PFC XOFF->XON transitions per priority. ethtool "
            "{rx,tx}_prio<p>_pause_transition.",
            l, ps.pause_transition[d]);
      Count(sink, "fabric_roce_priority_bytes_total",
            "Bytes per 802.1p priority. ethtool {rx,tx}_prio<p>_bytes.", l,
            ps.bytes[d]);
      Count(sink, "fabric_roce_priority_packets_total",
            "Packets per 802.1p priority. ethtool {rx,tx}_prio<p>_packets.", l,
            ps.packets[d]);
    }
    Labels lp = With(base, {{"priority", prio}});
    const char* kDiscardHelp =
        "Received packets discarded per priority; reason buf_discard = no "
        "per-host buffer, cong_discard = per-host congestion (WRED), "
        "discards = no receive buffer. ethtool rx_prio<p>_<reason>.";
    Count(sink, "fabric_roce_priority_discarded_packets_total", kDiscardHelp,
          With(lp, {{"reason", "buf_discard"}}), ps.buf_discard);
    Count(sink, "fabric_roce_priority_discarded_packets_total", kDiscardHelp,
          With(lp, {{"reason", "cong_discard"}}), ps.cong_discard);
    Count(sink, "fabric_roce_priority_discarded_packets_total", kDiscardHelp,
          With(lp, {{"reason", "discards"}}), ps.discards);
    Count(sink, "fabric_roce_priority_ecn_marked_packets_total",
          "Packets ECN-marked by the NIC itself because of per-host "
          "congestion (not switch marks). ethtool rx_prio<p>_marked.",
          lp, ps.marked);
  }
  const char* kStormHelp =
      "PFC pause storm events; level warning = the NIC has been sending "
      "pause for a long time, error = storm timeout hit and the NIC stopped "
      "sending pause. ethtool tx_pause_storm_{warning,error}_events.";
  Count(sink, "fabric_pfc_pause_storm_events_total", kStormHelp,
        With(base, {{"level", "warning"}}), s.pause_storm_warning);
  Count(sink, "fabric_pfc_pause_storm_events_total", kStormHelp,
        With(base, {{"level", "error"}}), s.pause_storm_error);
  for (int d : {kRx, kTx}) {
    Labels l = With(base, {{"direction", DirectionName(d)}});
    // Prefer the global-pause group; fall back to the MAC control counter.
    const OptU64& frames =
        s.global_pause[d] ? s.global_pause[d] : s.pause_ctrl_phy[d];
    Count(sink, "fabric_roce_global_pause_frames_total",
          "Link-level (global, non-PFC) pause frames. ethtool "
          "{rx,tx}_global_pause, else {rx,tx}_pause_ctrl_phy.",
          l, frames);
    Count(sink, "fabric_roce_global_pause_duration_seconds_total",
          "Time paused by link-level pause. ethtool "
          "{rx,tx}_global_pause_duration (us).",
          l, s.global_pause_duration_us[d], kMicro);
    Count(sink, "fabric_roce_phy_discarded_packets_total",
          "Packets dropped at the physical port; rx = no buffer (NIC "
          "congested), tx = link down/HoL/pause. ethtool {rx,tx}_discards_phy.",
          l, s.discards_phy[d]);
  }
  Count(sink, "fabric_roce_rx_out_of_buffer_total",
        "Ethernet receive queue had no software buffer. ethtool "
        "rx_out_of_buffer.",
        base, s.rx_out_of_buffer);
  Count(sink, "fabric_roce_rx_buffer_passed_threshold_total",
        "Times the port receive buffer passed 85% fill. ethtool "
        "rx_buffer_passed_thres_phy.",
        base, s.rx_buffer_passed_thres_phy);
  Count(sink, "fabric_roce_rx_ecn_marked_packets_total",
        "ECN CE-marked packets delivered to the kernel's Ethernet receive "
        "queues (not RDMA traffic). ethtool rx_ecn_mark, else the sum of "
        "rx<N>_ecn_mark.",
        base, s.rx_ecn_mark);
  EmitPhyMetrics(s, base, sink);
}

void EmitPhyMetrics(const RoceEthtoolStats& s, const Labels& base,
                    MetricSink& sink) {
  Count(sink, "fabric_roce_phy_corrected_bit_errors_total",
        "Bits the active FEC (RS or FC) corrected on the port; a steady rise "
        "means a degrading cable or transceiver. ethtool "
        "rx_corrected_bits_phy.",
        base, s.phy_corrected_bits);
  Count(sink, "fabric_roce_phy_pcs_symbol_errors_total",
        "Symbol errors at the PCS that FEC did not correct (or FEC is off). "
        "ethtool rx_pcs_symbol_err_phy.",
        base, s.phy_pcs_symbol_errors);
  Count(sink, "fabric_roce_phy_symbol_errors_total",
        "Received packets with physical coding (symbol) errors (IEEE 802.3 "
        "aSymbolErrorDuringCarrier). ethtool rx_symbol_err_phy, early mlx5 "
        "symbol_err.",
        base, s.phy_symbol_errors);
  Count(sink, "fabric_roce_phy_crc_errors_total",
        "Received frames dropped for a bad FCS at the physical port. ethtool "
        "rx_crc_errors_phy, early mlx5 check_seq_err.",
        base, s.phy_crc_errors);
  Count(sink, "fabric_roce_phy_link_down_events_total",
        "Times the port's operational state went down; a rising count is a "
        "flapping link. ethtool link_down_events_phy.",
        base, s.phy_link_down_events);
  for (int l = 0; l < RoceEthtoolStats::kMaxLanes; ++l) {
    Count(sink, "fabric_roce_phy_lane_errors_total",
          "Raw physical errors per lane before FEC correction. ethtool "
          "rx_err_lane_<lane>_phy.",
          With(base, {{"lane", std::to_string(l)}}), s.phy_lane_errors[l]);
  }
}

void EmitLinkMetrics(const EthtoolLink& link, const RoceNetdev& w,
                     MetricSink& sink) {
  const Labels base = Base(w);
  auto bytes = [](std::uint64_t mbps) { return mbps * 1e6 / 8; };
  if (link.speed_mbps) {
    sink.Gauge("fabric_roce_link_speed_bytes_per_second",
               "Active link speed (ethtool link settings speed, Mb/s x "
               "10^6 / 8); absent while unknown (link down).",
               base, bytes(*link.speed_mbps));
  }
  if (const auto v = CapableMbps(link)) {
    sink.Gauge("fabric_roce_link_speed_capable_bytes_per_second",
               "Fastest link mode this end advertises (or, with "
               "auto-negotiation off, supports), from the mode's name "
               "(100000baseCR4/Full: 100 Gb/s).",
               base, bytes(*v));
  }
  if (const auto v = FastestMbps(link.partner)) {
    sink.Gauge("fabric_roce_link_partner_speed_capable_bytes_per_second",
               "Fastest link mode the link partner advertised "
               "(auto-negotiation; absent when it advertised none).",
               base, bytes(*v));
  }
}

void EmitFecMetrics(const EthtoolFec& fec, const RoceNetdev& w,
                    MetricSink& sink) {
  const Labels base = Base(w);
  if (fec.active_mode) {
    sink.Gauge("fabric_roce_fec_mode_info",
               "Active FEC mode of the link (ethtool netlink "
               "ETHTOOL_A_FEC_ACTIVE): none, rs, baser, llrs.",
               With(base, {{"mode", *fec.active_mode}}), 1);
  }
  struct Stat {
    const std::optional<FecCounter>& counter;
    const char* port_name;
    const char* lane_name;
    const char* help;
  };
  const Stat stats[] = {
      {fec.corrected_blocks, "fabric_roce_fec_corrected_blocks_total",
       "fabric_roce_fec_lane_corrected_blocks_total",
       "FEC codewords (blocks) with errors FEC corrected. ethtool netlink "
       "FEC statistics ETHTOOL_A_FEC_STAT_CORRECTED"},
      {fec.uncorrectable_blocks, "fabric_roce_fec_uncorrectable_blocks_total",
       "fabric_roce_fec_lane_uncorrectable_blocks_total",
       "FEC codewords (blocks) FEC could not correct: frames lost. ethtool "
       "netlink FEC statistics ETHTOOL_A_FEC_STAT_UNCORR"},
      {fec.corrected_bits, "fabric_roce_fec_corrected_bit_errors_total",
       "fabric_roce_fec_lane_corrected_bit_errors_total",
       "Bits FEC corrected. ethtool netlink FEC statistics "
       "ETHTOOL_A_FEC_STAT_CORR_BITS"},
  };
  for (const Stat& s : stats) {
    if (!s.counter) continue;
    sink.Counter(s.port_name, std::string(s.help) + " (port total).", base,
                 static_cast<double>(s.counter->total));
    for (std::size_t l = 0; l < s.counter->lanes.size(); ++l) {
      sink.Counter(s.lane_name, std::string(s.help) + ", per lane.",
                   With(base, {{"lane", std::to_string(l)}}),
                   static_cast<double>(s.counter->lanes[l]));
    }
  }
}

void EmitDcbMetrics(const DcbIeee& dcb, const RoceNetdev& w, MetricSink& sink) {
  const Labels base = Base(w);
  if (dcb.pfc) {
    const DcbPfc& pfc = *dcb.pfc;
    sink.Gauge("fabric_roce_pfc_capable_traffic_classes",
               "Traffic classes that may have PFC at once (DCB ieee_pfc "
               "pfc_cap).",
               base, pfc.cap);
    for (int p = 0; p < 8; ++p) {
      const std::string prio = std::to_string(p);
      sink.Gauge("fabric_roce_pfc_enabled",
                 "1 if PFC is enabled on the priority (DCB ieee_pfc pfc_en).",
                 With(base, {{"priority", prio}}), (pfc.enabled >> p) & 1);
      const char* kHelp =
          "PFC frames per priority as the driver reports them to DCB "
          "(ieee_pfc requests = tx, indications = rx; may lag ethtool).";
      sink.Counter("fabric_roce_dcb_pfc_frames_total", kHelp,
                   With(base, {{"priority", prio}, {"direction", "rx"}}),
                   static_cast<double>(pfc.indications[p]));
      sink.Counter("fabric_roce_dcb_pfc_frames_total", kHelp,
                   With(base, {{"priority", prio}, {"direction", "tx"}}),
                   static_cast<double>(pfc.requests[p]));
    }
  }
  if (dcb.ets) {
    sink.Gauge("fabric_roce_ets_willing",
               "1 if the port accepts ETS/PFC config from the peer via DCBX "
               "(DCB ieee_ets willing).",
               base, dcb.ets->willing ? 1 : 0);
    for (int p = 0; p < 8; ++p) {
      sink.Gauge("fabric_roce_priority_traffic_class",
                 "Traffic class the priority maps to (DCB ieee_ets prio_tc).",
                 With(base, {{"priority", std::to_string(p)}}),
                 dcb.ets->prio_tc[p]);
    }
  }
  if (std::string trust = dcb.Trust(); !trust.empty()) {
    sink.Gauge("fabric_roce_trust_info",
               "QoS trust mode from the DCB APP table: dscp when any DSCP "
               "entry exists, else pcp.",
               With(base, {{"trust", trust}}), 1);
  }
}

std::unique_ptr<Collector> MakeRoceCollector(
    const CollectorEnv& env, RoceOptions options,
    std::unique_ptr<EthtoolSource> ethtool, std::unique_ptr<DcbSource> dcb,
    std::unique_ptr<RdmaStatSource> rdma, std::unique_ptr<FecSource> fec) {
  return std::make_unique<RoceCollector>(env, std::move(options),
                                         std::move(ethtool), std::move(dcb),
                                         std::move(rdma), std::move(fec));
}

std::unique_ptr<Collector> MakeRoceCollector(const CollectorEnv& env,
                                             const CollectorConfig& config) {
  RoceOptions options;
  options.devices = config.devices;
  options.extra_netdevs = SettingsAs<RoceSettings>(config).netdevs;
  options.ethtool_is_kernel = env.ethtool_is_kernel;
  auto ethtool = env.ethtool ? env.ethtool() : nullptr;
  // DCB from dumps when configured; else netlink, but not for statistics
  // from dumps (a simulated or recorded tree): the kernel's DCB state of a
  // same-named interface is not the tree's (roce.h).
  const std::string& dcb_dir = SettingsAs<RoceSettings>(config).dcb_dir;
  std::unique_ptr<DcbSource> dcb;
  if (!dcb_dir.empty()) {
    dcb = MakeFileDcbSource(dcb_dir);
  } else if (env.ethtool_is_kernel) {
    dcb = MakeRealDcbSource();
  }
  // FEC, like DCB, asks the kernel about a netdev by name: only when the
  // statistics come from the same kernel.
  auto fec = env.ethtool_is_kernel ? MakeRealFecSource() : nullptr;
  return MakeRoceCollector(env, std::move(options), std::move(ethtool),
                           std::move(dcb), MakeRealRdmaStatSource(),
                           std::move(fec));
}

CollectorSpec RoceCollectorSpec() {
  CollectorSpec spec;
  spec.name = "roce";
  spec.interval = kCounterPollInterval;
  spec.keys = {"netdevs", "dcb_dir"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    RoceSettings settings;
    config_keys::ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark&) {
          if (key == "netdevs") {
            settings.netdevs = config_keys::Names(value, key_path);
          } else if (key == "dcb_dir") {
            settings.dcb_dir =
                value.IsNull() ? "" : config_keys::Scalar(value, key_path);
            if (!settings.dcb_dir.empty() && settings.dcb_dir[0] != '/') {
              config_keys::Fail(
                  key_path, value.Mark(),
                  config_keys::Quote(settings.dcb_dir) +
                      " is not an absolute directory path (e.g. "
                      "\"/dev/shm/sim/host0/dcb\"; empty = DCB netlink)");
            }
          }
        });
    return std::make_shared<SettingsOf<RoceSettings>>(std::move(settings));
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeRoceCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
