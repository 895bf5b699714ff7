#include "collectors/fabric.h"

#include <spdlog/spdlog.h>

#include <array>
#include <map>

#include "collectors/fabric_tree.h"
#include "collectors/link_phy.h"
#include "collectors/mad_ports.h"
#include "config/yaml_keys.h"
#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/live_ports.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/sm_directory.h"
#include "sources/mad/sweep.h"
#include "sources/node_name_map.h"

namespace fabric {
namespace {

constexpr char kInfoHelp[] =
    "A switch of this node's shard (NodeDescription or node_name_map); value "
    "is always 1.";
constexpr char kStateHelp[] =
    "Switch port PortInfo PortState: 1 down, 2 init, 3 armed, 4 active.";
constexpr char kPhysHelp[] =
    "Switch port PortInfo PortPhysicalState: 1 sleep, 2 polling, 3 disabled, "
    "4 training, 5 linkup, 6 error recovery, 7 phy test.";
constexpr char kLinkHelp[] =
    "The node and port at the other end of a switch port's cable (remote_guid "
    "is the remote node GUID, as hosts export node_guid); value is always 1.";
constexpr char kErrorsHelp[] =
    "Switch port PortCounters error fields; error as the host side names "
    "them.";
constexpr char kSaturatedHelp[] =
    "1 when a switch port's PortCounters field (counter: the error name, or "
    "port_xmit_wait) sits at its maximum 2^width-1 and no longer counts; "
    "absent otherwise. fabricmon never resets counters.";
constexpr char kMadsHelp[] =
    "MADs of the fabric sweep and discovery by result (ok, timeout, error, "
    "unsupported: PortExtendedSpeedsCounters probes a PMA left unanswered); "
    "retries are counted as timeouts of the try.";
constexpr char kUnreachableHelp[] =
    "Nodes that answered nothing in the last discovery or sweep.";
constexpr char kPescUnsupportedHelp[] =
    "Switches of the last sweep whose PMA has no PortExtendedSpeedsCounters "
    "(0x1F): no FEC/PHY counters are exported for their ports.";
constexpr char kSwitchFailuresHelp[] =
    "MADs to this switch that got no answer after every retry, since the "
    "daemon started.";
constexpr char kUnansweredHelp[] =
    "Sweeps in a row in which this switch answered no MAD at all (0 while it "
    "answers).";
constexpr char kDownsHelp[] =
    "Times the fabric sweep saw this switch port's PortState leave ACTIVE "
    "(4) since the daemon started; a flap shorter than the sweep interval "
    "is missed, and where LinkDownedCounter does not count, one shorter "
    "than port_info_every sweeps may be (the switch's own count: "
    "fabric_switch_port_errors_total{error=\"link_downed\"}).";

class FabricCollector : public Collector {
 public:
  FabricCollector(CollectorEnv env, CollectorConfig config,
                  FabricSettings settings, mad::LocalPortLister ports)
      : env_(std::move(env)),
        config_(std::move(config)),
        settings_(std::move(settings)),
        ports_("fabric", env_, settings_.mad, std::move(ports)) {
    port_info_.every = settings_.port_info_every;
  }

  std::string_view Name() const override { return "fabric"; }

  bool Collect(MetricSink& sink) override { return CollectOnce(sink); }

 private:
  bool CollectOnce(MetricSink& sink) {
    if (!ports_.available()) return true;
    if (!HoldActivePort(sink)) return open_ok_;
    const double now = env_.clock();
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            config_.timeout * 9 / 10);
    MadOptions options = ports_.options();
    options.max_outstanding = settings_.max_outstanding;
    options.deadline = deadline;
    const double every =
        std::chrono::duration<double>(settings_.discovery_interval).count();
    if (!topology_ || now - discovered_at_ >= every) {
      auto topo = mad::Discover(*transport_, options);
      Count(topo.stats);
      for (const auto& e : topo.errors) sink.Skip("fabric: discovery: " + e);
      discovery_unreachable_ = topo.unreachable;
      if (topo.nodes.empty()) return false;  // not even the local node
      topology_ = std::make_unique<mad::Topology>(std::move(topo));
      pesc_.clear();  // ClassPortInfo and layouts: once per topology
      mad::PublishSmLids(topology_->SmLids());
      // Discovery just read every switch port's PortInfo: the sweep below
      // takes those instead of asking again.
      port_info_.Seed(*topology_);
      discovered_at_ = now;
      LoadNames(sink);
    }
    // With PESC off the cache still keeps each switch PMA's ClassPortInfo:
    // whether its PortXmitWait is 64-bit (sources/mad/sweep.h).
    const mad::SweepResult sweep =
        mad::Sweep(*transport_, *topology_, settings_.shard, options, &pesc_,
                   {held_.sm_lid}, settings_.pesc, &port_info_);
    if (settings_.pesc) LogSmSwitches(sweep);
    Count(sweep.stats);
    unsupported_ += sweep.pesc_unanswered;
    for (const auto& e : sweep.errors) sink.Skip("fabric: " + e);
    Emit(sink, sweep);
    if (settings_.congestion_trees) {
      const double wall =
          std::chrono::duration<double>(
              std::chrono::system_clock::now().time_since_epoch())
              .count();
      trees_.Update(
          *transport_, options, *topology_, settings_.shard, sweep, now, wall,
          [this](std::uint64_t guid, const std::string& fallback) {
            return NameOf(guid, fallback);
          },
          sink);
    }
    return true;
  }

  // Keeps transport_ on an ACTIVE local port, chosen again whenever none is
  // held (a daemon started before the SM: its port goes ACTIVE later) and
  // dropped when the held port goes down; a new LID of the held port (the
  // SM re-assigned LIDs) forces a new discovery, whose LIDs the sweep uses.
  // False when there is no port to sweep from this time; open_ok_ then
  // says whether that is a failure (NoPortIsFine).
  bool HoldActivePort(MetricSink& sink) {
    const MadOptions options = ports_.options();
    if (transport_) {
      mad::LocalPort now = held_;
      if (!mad::RefreshFromPortInfo(*transport_, options, &now)) return true;
      if (now.state == 4) {
        if (now.lid != held_.lid) topology_.reset();
        held_ = now;
        return true;
      }
      spdlog::info("fabric: {} port {} is no longer ACTIVE (state {})",
                   held_.ca, held_.port, now.state);
      transport_.reset();
      topology_.reset();
    }
    auto [view, error, live] =
        ports_.Find(sink, settings_.ca, settings_.ca_port);
    for (const auto& w : live.waiting)
      sink.Skip("fabric: " + w + ": not ACTIVE");
    if (!live.active.empty()) {
      held_ = live.active.front().port;
      transport_ = std::move(live.active.front().transport);
      open_failed_ = false;
      open_ok_ = true;
      spdlog::info("fabric: sweeping from {} port {} (LID {})", held_.ca,
                   held_.port, held_.lid);
      return true;
    }
    open_ok_ = NoPortIsFine(view, live, error, sink);
    return false;
  }

  // No ACTIVE port to sweep from: fine (no IB port, or none ACTIVE yet) or
  // a failure, with one warning per failure streak (a port that cannot be
  // opened; a `ca` / `ca_port` naming no local port, a configuration error
  // rather than "no IB port here").
  bool NoPortIsFine(const std::vector<mad::LocalPort>& view,
                    const mad::LivePorts& live, const std::string& error,
                    MetricSink& sink) {
    const bool named = !settings_.ca.empty() || settings_.ca_port != 0;
    bool exists = !named;
    for (const auto& p : view) {
      exists =
          exists || ((settings_.ca.empty() || p.ca == settings_.ca) &&
                     (settings_.ca_port == 0 || p.port == settings_.ca_port));
    }
    std::string failure;
    if (!live.unopenable.empty()) {
      failure = "cannot open MAD port " + live.unopenable.front() +
                " (no permission on /dev/infiniband/umad*?)";
    } else if (!exists && error.empty()) {
      failure = "no local port '" + settings_.ca + "' " +
                std::to_string(settings_.ca_port) +
                " (collectors.fabric.ca / ca_port)";
    }
    if (!failure.empty()) {
      sink.Skip("fabric: " + failure);
      if (!open_failed_) spdlog::warn("fabric: {}", failure);
    }
    open_failed_ = !failure.empty();
    return failure.empty() && error.empty();
  }

  // One line when the switches left without PESC because a subnet manager
  // sits at their LID change (sources/mad/sweep.h: never to an SM).
  void LogSmSwitches(const mad::SweepResult& sweep) {
    std::string line;
    for (const auto& s : sweep.switches) {
      if (!s.hosts_sm) continue;
      line += (line.empty() ? "" : ", ") + s.description + " (LID " +
              std::to_string(s.lid) + ")";
    }
    if (line == sm_switches_) return;
    if (!line.empty()) {
      spdlog::info(
          "fabric: not reading PortExtendedSpeedsCounters of {}: a subnet "
          "manager is at that LID (docs/mad-broker.md)",
          line);
    }
    sm_switches_ = line;
  }

  void Count(const MadStats& s) {
    ok_ += s.ok;
    timeout_ += s.timeouts + s.retries;
    error_ += s.errors;
  }

  void LoadNames(MetricSink& sink) {
    names_.clear();
    if (settings_.node_name_map.empty()) return;
    FileRead file =
        env_.read_text_file(settings_.node_name_map, kMaxNodeNameMapBytes);
    if (!file.ok()) {
      sink.Skip("fabric: cannot read node_name_map " + settings_.node_name_map +
                ": " + file.error);
      return;
    }
    auto map = ParseNodeNameMap(file.text);
    for (int line : map.bad_lines) {
      sink.Skip("fabric: node_name_map line " + std::to_string(line));
    }
    names_ = std::move(map.names);
  }

  std::string NameOf(std::uint64_t guid, const std::string& fallback) const {
    auto it = names_.find(guid);
    return it != names_.end() ? it->second : fallback;
  }

  void Emit(MetricSink& sink, const mad::SweepResult& sweep) {
    for (const mad::SwitchSample& s : sweep.switches) {
      const std::string guid = mad::GuidString(s.guid);
      const std::string name = NameOf(s.guid, s.description);
      sink.Gauge("fabric_switch_info", kInfoHelp,
                 {{"lid", std::to_string(s.lid)},
                  {"switch", name},
                  {"switch_guid", guid}},
                 1);
      const mad::FabricNode* node = topology_->Find(s.guid);
      for (const mad::SwitchPortSample& p : s.ports) {
        const std::string port = std::to_string(p.num);
        auto labels = [&] {
          return Labels{
              {"port", port}, {"switch", name}, {"switch_guid", guid}};
        };
        if (p.info) {
          sink.Gauge("fabric_switch_port_state", kStateHelp, labels(),
                     p.info->state);
          sink.Gauge("fabric_switch_port_physical_state", kPhysHelp, labels(),
                     p.info->phys_state);
          EmitLinkSpeed(sink, kSwitchPortFamilies, labels(), *p.info);
          sink.Counter("fabric_switch_port_link_down_transitions_total",
                       kDownsHelp, labels(),
                       static_cast<double>(CountDowns(s.guid, p)));
        }
        if (p.pesc) {
          EmitPesc(sink, kSwitchPortFamilies, labels(), *p.pesc,
                   PescLanes(p.info ? &*p.info : nullptr));
        }
        if (node && (!p.info || p.info->state >= 2)) {
          auto it = node->ports.find(p.num);
          if (it != node->ports.end() && it->second.remote_guid != 0) {
            const mad::FabricNode* remote =
                topology_->Find(it->second.remote_guid);
            sink.Gauge(
                "fabric_switch_port_link_info", kLinkHelp,
                {{"port", port},
                 {"remote_guid", mad::GuidString(it->second.remote_guid)},
                 {"remote_name", NameOf(it->second.remote_guid,
                                        remote ? remote->description : "")},
                 {"remote_port", std::to_string(it->second.remote_port)},
                 {"switch", name},
                 {"switch_guid", guid}},
                1);
          }
        }
        if (p.extended) {
          sink.Counter("fabric_switch_port_transmit_bytes_total",
                       "Bytes sent (PortCountersExtended PortXmitData x 4).",
                       labels(), 4.0 * p.extended->xmit_data);
          sink.Counter("fabric_switch_port_receive_bytes_total",
                       "Bytes received (PortCountersExtended PortRcvData x 4).",
                       labels(), 4.0 * p.extended->rcv_data);
          sink.Counter("fabric_switch_port_transmit_packets_total",
                       "Packets sent (PortCountersExtended PortXmitPkts).",
                       labels(), static_cast<double>(p.extended->xmit_pkts));
          sink.Counter("fabric_switch_port_receive_packets_total",
                       "Packets received (PortCountersExtended PortRcvPkts).",
                       labels(), static_cast<double>(p.extended->rcv_pkts));
        }
        if (p.xmit_wait) {
          sink.Counter("fabric_switch_port_transmit_wait_total",
                       "Ticks with data to send but no credits (PortXmitWait: "
                       "the 64-bit PortCountersExtended one where the switch "
                       "PMA advertises it, else the 32-bit PortCounters one, "
                       "which saturates: see "
                       "fabric_switch_port_counters_saturated).",
                       labels(), static_cast<double>(p.xmit_wait->ticks));
        }
        if (p.counters) {
          for (const auto& [error, value] : p.counters->errors) {
            Labels l = labels();
            l.insert(l.begin(), {"error", error});
            sink.Counter("fabric_switch_port_errors_total", kErrorsHelp,
                         std::move(l), static_cast<double>(value));
          }
          // Only the stuck ones (not a 0 for every field): 13 more series
          // per port would double a 2,000-switch fabric's series count.
          for (const std::string& counter : p.counters->saturated) {
            Labels l = labels();
            l.insert(l.begin(), {"counter", counter});
            sink.Gauge("fabric_switch_port_counters_saturated", kSaturatedHelp,
                       std::move(l), 1);
          }
        }
      }
    }
    EmitSwitchHealth(sink, sweep);
    for (const auto& [result, n] :
         {std::pair<const char*, std::uint64_t>{"error", error_},
          {"ok", ok_},
          {"timeout", timeout_},
          {"unsupported", unsupported_}}) {
      sink.Counter("fabric_sweep_mads_total", kMadsHelp, {{"result", result}},
                   static_cast<double>(n));
    }
    sink.Gauge("fabric_sweep_unreachable_nodes", kUnreachableHelp, {},
               discovery_unreachable_ + sweep.unreachable);
    // With PESC off no PMA was asked: a 0 here would claim they all have it.
    if (settings_.pesc) {
      sink.Gauge("fabric_sweep_pesc_unsupported_switches", kPescUnsupportedHelp,
                 {}, sweep.pesc_unsupported);
    }
  }

  // ACTIVE -> not ACTIVE transitions the sweeps saw on this port: what
  // FabricPortFlapping reads where the switch's LinkDownedCounter does not
  // count (ibsim never does; some firmware saturates it at 255). A flap
  // shorter than one sweep interval is not seen.
  std::uint64_t CountDowns(std::uint64_t guid, const mad::SwitchPortSample& p) {
    LinkMemory& m = links_[{guid, p.num}];
    if (m.state == 4 && p.info->state != 4) ++m.downs;
    m.state = p.info->state;
    return m.downs;
  }

  // Per switch: MADs that got no answer (cumulative) and how many sweeps in
  // a row it answered nothing at all; a switch gone from the topology is
  // forgotten.
  void EmitSwitchHealth(MetricSink& sink, const mad::SweepResult& sweep) {
    std::map<std::uint64_t, SwitchHealth> kept;
    for (const mad::SwitchSample& s : sweep.switches) {
      SwitchHealth h = health_[s.guid];
      h.failed += static_cast<std::uint64_t>(s.failed_mads);
      h.unanswered = s.reachable ? 0 : h.unanswered + 1;
      const Labels labels = {{"switch", NameOf(s.guid, s.description)},
                             {"switch_guid", mad::GuidString(s.guid)}};
      sink.Counter("fabric_switch_mad_failures_total", kSwitchFailuresHelp,
                   labels, static_cast<double>(h.failed));
      sink.Gauge("fabric_switch_unanswered_sweeps", kUnansweredHelp, labels,
                 h.unanswered);
      kept[s.guid] = h;
    }
    health_ = std::move(kept);
    // The link memory of switches gone from the sweep goes with them.
    std::erase_if(links_, [&](const auto& entry) {
      return !health_.count(entry.first.first);
    });
  }

  CollectorEnv env_;
  CollectorConfig config_;
  FabricSettings settings_;
  MadPorts ports_;
  std::unique_ptr<MadTransport> transport_;
  mad::LocalPort held_;  // transport_'s port, as its PortInfo last said
  std::unique_ptr<mad::Topology> topology_;
  double discovered_at_ = 0;
  int discovery_unreachable_ = 0;
  std::map<std::uint64_t, std::string> names_;
  std::uint64_t ok_ = 0, timeout_ = 0, error_ = 0, unsupported_ = 0;
  // This topology's PESC support and PMA ClassPortInfo per switch.
  mad::PescCache pesc_;
  // Switch ports' last PortInfo, asked again only when it may have changed
  // (sources/mad/sweep.h).
  mad::PortInfoMemory port_info_;
  FabricTrees trees_;  // congestion roots and victims (issue 42)
  struct SwitchHealth {
    std::uint64_t failed = 0;
    int unanswered = 0;
  };
  std::map<std::uint64_t, SwitchHealth> health_;
  struct LinkMemory {
    int state = 0;  // PortState at the last sweep that read it
    std::uint64_t downs = 0;
  };
  std::map<std::pair<std::uint64_t, int>, LinkMemory> links_;  // guid, port
  bool open_failed_ = false;
  bool open_ok_ = true;      // HoldActivePort's verdict when it found no port
  std::string sm_switches_;  // LogSmSwitches' last line
};

}  // namespace

std::unique_ptr<Collector> MakeFabricCollector(const CollectorEnv& env,
                                               const CollectorConfig& config,
                                               mad::LocalPortLister ports) {
  return std::make_unique<FabricCollector>(
      env, config, SettingsAs<FabricSettings>(config), std::move(ports));
}

CollectorSpec FabricCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "fabric";
  spec.enabled = false;
  spec.interval = std::chrono::seconds(30);
  spec.timeout = std::chrono::seconds(25);
  spec.keys = {"discovery_interval",
               "ca",
               "ca_port",
               "shard",
               "max_outstanding",
               kMadTimeoutKey,
               kMadRetriesKey,
               "node_name_map",
               "pesc",
               "congestion_trees",
               "port_info_every"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    FabricSettings s;
    ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark& mark) {
          if (ReadMadKey(key, value, key_path, s.mad)) return;
          if (key == "discovery_interval") {
            s.discovery_interval = Duration(value, key_path, kMinInterval);
          } else if (key == "ca") {
            s.ca = Scalar(value, key_path);
          } else if (key == "ca_port") {
            s.ca_port = static_cast<int>(
                Integer(value, key_path, 0, 254, "a port number (e.g. 1)"));
          } else if (key == "shard") {
            const auto shard = mad::ParseShard(Scalar(value, key_path));
            if (!shard) {
              Fail(key_path, mark,
                   "is not a shard \"i/n\" with 1 <= i <= n (e.g. \"2/4\")");
            }
            s.shard = *shard;
          } else if (key == "max_outstanding") {
            s.max_outstanding = static_cast<int>(Integer(
                value, key_path, 1, 4096, "a MAD count (1 to 4096, e.g. 64)"));
          } else if (key == "node_name_map") {
            s.node_name_map = Scalar(value, key_path);
          } else if (key == "pesc") {
            s.pesc = Bool(value, key_path);
          } else if (key == "congestion_trees") {
            s.congestion_trees = Bool(value, key_path);
          } else if (key == "port_info_every") {
            s.port_info_every = static_cast<int>(
                Integer(value, key_path, 1, 1000,
                        "a sweep count (1: every sweep; e.g. 4)"));
          }
        });
    return std::make_shared<SettingsOf<FabricSettings>>(s);
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeFabricCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
