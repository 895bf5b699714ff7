#include "collectors/sm.h"

#include <spdlog/spdlog.h>

#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "collectors/mad_ports.h"
#include "config/yaml_keys.h"
#include "sources/mad/codec.h"
#include "sources/mad/live_ports.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/sm_directory.h"

namespace fabric {
namespace {

constexpr char kInfoHelp[] =
    "An SM: the master a local port names, or (with the fabric collector) any "
    "SM its discovery found; node is the SM node's NodeDescription; value is "
    "always 1.";
constexpr char kStateHelp[] =
    "SMInfo SMState: 0 not active, 1 discovering, 2 standby, 3 master.";
constexpr char kPriorityHelp[] = "SMInfo Priority (0-15).";
constexpr char kActivityHelp[] =
    "SMInfo ActCount: the SM's activity counter (moves while it works).";
constexpr char kStalledHelp[] =
    "1 when a master SM's ActCount did not move for collectors.sm.stall_after "
    "(a hung SM).";
constexpr char kMastersHelp[] =
    "SMs that answered SMInfo with state MASTER, of every SM the fabric "
    "discovery found (1 is healthy; 0 and >1 are outages).";
constexpr char kChangesHelp[] =
    "Times the master SM GUID this daemon sees changed (failovers).";

class SmCollector : public Collector {
 public:
  SmCollector(CollectorEnv env, SmSettings settings, LocalPortLister ports)
      : env_(std::move(env)),
        settings_(settings),
        ports_("sm", env_, settings.mad, std::move(ports)) {}

  std::string_view Name() const override { return "sm"; }

  bool Collect(MetricSink& sink) override { return CollectOnce(sink); }

 private:
  struct Reached {  // the SM a local port reached last time
    std::uint16_t sm_lid = 0;
    std::uint64_t sm_guid = 0;
  };
  struct History {
    std::uint32_t act_count = 0;
    double changed_at = 0;
  };

  bool CollectOnce(MetricSink& sink) {
    if (!ports_.available()) return true;
    const MadOptions options = ports_.options();
    // Chosen again at every collection, from each port's own PortInfo: a
    // port the SM made ACTIVE after the daemon started is used from then
    // on, one that went down is dropped, and the SM LID a failover moved
    // is followed (libibumad's copy may lag, and under umad2sim never
    // moves).
    MadPorts::Found found = ports_.Find(sink);
    bool ok = found.error.empty();  // libibumad itself failed
    mad::LivePorts& live = found.live;
    for (const auto& w : live.waiting) sink.Skip("sm: " + w + ": not ACTIVE");
    if (!live.unopenable.empty()) {
      if (!open_failed_) {
        spdlog::warn(
            "sm: cannot open MAD port {} (the MAD broker's error is logged "
            "when it starts; in_process: umad permission?)",
            Join(live.unopenable));
      }
      open_failed_ = true;
      ok = false;
    } else {
      open_failed_ = false;
    }
    LogChoice(live);
    std::map<std::uint64_t, bool> emitted;
    std::unique_ptr<MadTransport> every_sm_transport;
    queried_.clear();
    masters_ = 0;
    // Each SM once per collection, not once per port: a port whose SM LID
    // is the one it had last time, and whose SM (by GUID) another port
    // already asked this time, is not asked again. Eight rails of one
    // subnet cost one SMInfo; eight rails of eight subnets (each its own
    // SM, perhaps all at LID 1) still ask all eight, because every port
    // asks once and learns whose SM it reaches before it is ever skipped.
    std::map<std::pair<std::string, int>, Reached> reached;
    for (auto& [port, transport] : live.active) {
      if (port.sm_lid == 0) {
        sink.Skip("sm: " + port.ca + " port has no SM LID");
        continue;
      }
      const auto key = std::make_pair(port.ca, port.port);
      auto last = reached_.find(key);
      if (last != reached_.end() && last->second.sm_lid == port.sm_lid &&
          emitted.count(last->second.sm_guid)) {
        reached[key] = last->second;  // its SM answered another port
        continue;
      }
      const auto guid =
          Query(*transport, port.sm_lid, options, true, sink, &emitted);
      if (!guid) {
        ok = false;
      } else {
        reached[key] = {port.sm_lid, *guid};
      }
      if (!every_sm_transport) every_sm_transport = std::move(transport);
    }
    reached_ = std::move(reached);
    // With the fabric collector here, every SM its discovery found too
    // (standbys included), and how many of all of them are MASTER.
    const auto discovered = mad::DiscoveredSmLids();
    if (discovered && every_sm_transport) {
      for (std::uint16_t lid : *discovered) {
        if (queried_.count(lid)) continue;  // (same subnet as that port)
        Query(*every_sm_transport, lid, options, false, sink, &emitted);
      }
      sink.Gauge("fabric_sm_masters", kMastersHelp, {},
                 static_cast<double>(masters_));
    }
    // Names of SMs that answered this time only.
    for (auto it = names_.begin(); it != names_.end();) {
      it = emitted.count(it->first) ? std::next(it) : names_.erase(it);
    }
    // Once per collection, not per SM: it has no labels, and one exposition
    // must not carry a series twice.
    if (!emitted.empty()) {
      sink.Counter("fabric_sm_master_changes_total", kChangesHelp, {},
                   static_cast<double>(master_changes_));
    }
    return ok;
  }

  // SMInfo of the SM at `lid` (and its NodeDescription the first time
  // this GUID answers); its GUID, or nullopt when it did not answer well.
  // `local_master`: the master a local port names (failovers are counted
  // on those).
  std::optional<std::uint64_t> Query(MadTransport& transport, std::uint16_t lid,
                                     const MadOptions& options,
                                     bool local_master, MetricSink& sink,
                                     std::map<std::uint64_t, bool>* emitted) {
    queried_.insert(lid);
    std::string error;
    const MadResult r = transport.Send(
        {.dlid = lid, .mad = mad::SmpGet(mad::kAttrSmInfo, 0)}, options);
    if (!r.ok()) {
      sink.Skip("sm: SMInfo at LID " + std::to_string(lid) + ": " +
                r.error().message());
      return std::nullopt;
    }
    const auto si = mad::DecodeSmInfo(*r, &error);
    if (!si) {
      sink.Skip("sm: SMInfo: " + error);
      return std::nullopt;
    }
    if ((*emitted)[si->guid]) return si->guid;  // two ports, one SM
    (*emitted)[si->guid] = true;
    if (si->state == 3) ++masters_;
    // The node's name does not change with its state: asked once per SM
    // (and again after the SM was gone for a collection), not every time.
    auto name = names_.find(si->guid);
    if (name == names_.end()) {
      std::string node;
      const MadResult d = transport.Send(
          {.dlid = lid, .mad = mad::SmpGet(mad::kAttrNodeDescription, 0)},
          options);
      if (d.ok()) {
        if (auto desc = mad::DecodeNodeDescription(*d, &error)) node = *desc;
      }
      name = names_.emplace(si->guid, node).first;
    }
    Emit(sink, *si, lid, name->second, local_master);
    return si->guid;
  }

  static std::string Join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  // One line when the set of ports in use (or their SM LIDs) changes, e.g.
  // the first time the SM brings a late port up: not one per collection.
  void LogChoice(const mad::LivePorts& live) {
    std::vector<std::string> now;
    for (const auto& a : live.active) {
      now.push_back(a.port.ca + " port " + std::to_string(a.port.port) +
                    " (LID " + std::to_string(a.port.lid) + ", SM LID " +
                    std::to_string(a.port.sm_lid) + ")");
    }
    const std::string line = Join(now);
    if (line == last_choice_) return;
    if (!line.empty()) {
      spdlog::info("sm: using {}", line);
    } else if (!last_choice_.empty()) {
      spdlog::info("sm: no ACTIVE IB port any more ({})", Join(live.waiting));
    }
    last_choice_ = line;
  }

  void Emit(MetricSink& sink, const mad::SmInfo& si, std::uint16_t lid,
            const std::string& node, bool local_master) {
    const std::string guid = mad::GuidString(si.guid);
    const double now = env_.clock();
    auto [it, fresh] =
        history_.try_emplace(si.guid, History{si.act_count, now});
    if (!fresh && it->second.act_count != si.act_count) {
      it->second = {si.act_count, now};
    }
    if (si.state == 3 && local_master) {
      if (master_ != 0 && master_ != si.guid) ++master_changes_;
      master_ = si.guid;
    }
    const double stall =
        std::chrono::duration<double>(settings_.stall_after).count();
    const bool stalled = si.state == 3 && now - it->second.changed_at >= stall;
    sink.Gauge(
        "fabric_sm_info", kInfoHelp,
        {{"node", node}, {"sm_guid", guid}, {"sm_lid", std::to_string(lid)}},
        1);
    sink.Gauge("fabric_sm_state", kStateHelp, {{"sm_guid", guid}}, si.state);
    sink.Gauge("fabric_sm_priority", kPriorityHelp, {{"sm_guid", guid}},
               si.priority);
    sink.Counter("fabric_sm_activity_total", kActivityHelp, {{"sm_guid", guid}},
                 si.act_count);
    sink.Gauge("fabric_sm_activity_stalled", kStalledHelp, {{"sm_guid", guid}},
               stalled ? 1 : 0);
  }

  CollectorEnv env_;
  SmSettings settings_;
  MadPorts ports_;
  std::map<std::uint64_t, History> history_;
  std::set<std::uint16_t> queried_;                         // this collection
  std::map<std::pair<std::string, int>, Reached> reached_;  // ca, port
  std::map<std::uint64_t, std::string> names_;  // SM GUID -> NodeDescription
  std::uint64_t masters_ = 0;  // answered MASTER, this collection
  std::uint64_t master_ = 0;
  std::uint64_t master_changes_ = 0;
  bool open_failed_ = false;
  std::string last_choice_;  // LogChoice's last line
};

}  // namespace

std::unique_ptr<Collector> MakeSmCollector(const CollectorEnv& env,
                                           const CollectorConfig& config,
                                           LocalPortLister ports) {
  return std::make_unique<SmCollector>(env, SettingsAs<SmSettings>(config),
                                       std::move(ports));
}

CollectorSpec SmCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "sm";
  // SMInfo from every node of a 10,000-node fabric: keep it rare.
  spec.interval = std::chrono::seconds(60);
  spec.timeout = std::chrono::seconds(10);
  spec.keys = {kMadTimeoutKey, kMadRetriesKey, "stall_after"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    SmSettings s;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark&) {
                 if (ReadMadKey(key, value, key_path, s.mad)) return;
                 if (key == "stall_after") {
                   s.stall_after = Duration(value, key_path);
                 }
               });
    return std::make_shared<SettingsOf<SmSettings>>(s);
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeSmCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
