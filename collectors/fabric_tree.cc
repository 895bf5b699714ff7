#include "collectors/fabric_tree.h"

#include <algorithm>
#include <ctime>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>

#include "congestion/xmit_wait.h"
#include "sources/mad/codec.h"
#include "sources/mad/routes.h"

namespace fabric {
namespace {

using congestion::PortRef;

double CpuNow() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

constexpr int kMaxEdgeRounds = 6;  // hops followed past the shard edge

constexpr char kWaitSecondsHelp[] =
    "Seconds this switch port had data to send but could not send "
    "(PortXmitWait converted with the ASIC's tick, see docs/congestion.md; "
    "summed since the daemon started).";
constexpr char kRootHelp[] =
    "A congestion root: a waiting port whose next hops do not wait; cause "
    "slow_receiver, oversubscribed or unbalanced. Value is always 1.";
constexpr char kSinceHelp[] =
    "Unix time at which this port became a congestion root (it has been "
    "one in every sweep since).";
constexpr char kVictimsHelp[] =
    "Waiting ports of this daemon's shard whose congestion root this port "
    "is (sum over shards: fabric:congestion_tree_victims:sum).";
constexpr char kTreeLostHelp[] =
    "Bandwidth the root and its victims (of this shard) could not send, "
    "bytes per second, over the last sweep interval.";
constexpr char kVictimHelp[] =
    "A waiting switch port whose traffic waits behind congestion root "
    "root_guid:root_port. Value is always 1.";
constexpr char kPortLostHelp[] =
    "Bandwidth a waiting switch port could not send over the last sweep "
    "interval, bytes per second; role root, victim or unknown.";
constexpr char kHostVictimHelp[] =
    "A host port (node_guid, port) that sends into a switch whose waiting "
    "ports lead to congestion root root_guid:root_port: its own transmit "
    "wait is that tree's. Value is always 1.";
constexpr char kUndecidedHelp[] =
    "Waiting switch ports of the last sweep that could not be named root or "
    "victim (counters or forwarding tables missing): a partial answer.";

double RateBytes(const mad::PortInfo& info) {
  const int lanes = mad::WidthLanes(info.link_width_active);
  const double gbps =
      mad::LaneGbps(info.link_speed_active, info.link_speed_ext_active);
  return lanes * gbps * 1e9 / 8;
}

}  // namespace

FabricTrees::SwitchSlots& FabricTrees::SlotsOf(const mad::Topology& topology,
                                               const mad::FabricNode* node,
                                               std::uint64_t guid,
                                               int max_port) {
  SwitchSlots& sw = slots_[guid];
  const int size = std::max(max_port, node ? node->num_ports : 0) + 1;
  if (sw.generation == generation_ &&
      sw.ports.size() >= static_cast<std::size_t>(size)) {
    return sw;
  }
  // A new topology (or a port beyond the known ones): the links again;
  // the counters stay.
  if (sw.ports.size() < static_cast<std::size_t>(size)) sw.ports.resize(size);
  for (std::size_t q = 0; q < sw.ports.size(); ++q) {
    PortSlot& slot = sw.ports[q];
    slot.remote = {};
    slot.remote_is_hca = false;
    if (!node) continue;
    auto it = node->ports.find(static_cast<int>(q));
    if (it != node->ports.end() && it->second.remote_guid) {
      slot.remote = {it->second.remote_guid, it->second.remote_port};
      const mad::FabricNode* remote = topology.Find(it->second.remote_guid);
      slot.remote_is_hca = remote && remote->type == 1;
    }
  }
  sw.generation = generation_;
  return sw;
}

void FabricTrees::AddSample(const mad::FabricNode* node, std::uint64_t guid,
                            const mad::SwitchPortSample& p, double now,
                            PortSlot& slot) {
  congestion::PortSample& s = samples_.emplace_back();
  s.ref = {guid, p.num};
  s.device_id = node ? node->device_id : 0;
  if (p.info) {
    s.lanes = mad::WidthLanes(p.info->link_width_active);
    s.rate_bytes_per_second = RateBytes(*p.info);
  }
  s.remote = slot.remote;
  s.remote_is_hca = slot.remote_is_hca;
  Prev& prev = slot.prev;
  // Not read by the last Update (gone for a while, or an edge port no
  // longer needed): no delta against what it read before.
  if (prev.at != last_sweep_) prev = Prev{};
  const double interval = now - prev.at;
  bool waits = false;
  // A counter that went down (reset, wrap) or sits saturated gives no
  // delta this sweep: unknown, never a wrong wait. Nor does a change of
  // source (32-bit PortCounters <-> 64-bit PortCountersExtended, when a
  // rediscovery learns the PMA's ClassPortInfo anew): the two may differ.
  const mad::PortXmitWait* wait = p.xmit_wait ? &*p.xmit_wait : nullptr;
  if (wait && !wait->saturated) {
    if (prev.wait_ok && prev.wait_wide == wait->wide &&
        wait->ticks >= prev.xmit_wait && prev.at > 0) {
      s.xmit_wait_ticks = static_cast<double>(wait->ticks - prev.xmit_wait);
      congestion::WaitTick tick = congestion::WaitTickFor(
          s.device_id, thresholds_.fallback_tick_seconds);
      const double secs = congestion::WaitSeconds(
          *s.xmit_wait_ticks, tick, s.lanes, s.rate_bytes_per_second);
      if (secs >= 0) prev.wait_seconds_total += std::min(secs, interval);
      // As Classify measures it: a port it may call waiting (either
      // threshold) or a waiting next hop.
      const double span = input_.interval_seconds;
      waits = secs >= 0 && span > 0 &&
              std::min(1.0, secs / span) >=
                  std::min(thresholds_.wait, thresholds_.next_hop_wait);
    }
    prev.xmit_wait = wait->ticks;
    prev.wait_wide = wait->wide;
    prev.wait_ok = true;
  } else {
    prev.wait_ok = false;
  }
  if (p.extended) {
    if (prev.data_ok && prev.at > 0 &&
        p.extended->xmit_data >= prev.xmit_data &&
        p.extended->rcv_data >= prev.rcv_data) {
      s.xmit_bytes =
          4.0 * static_cast<double>(p.extended->xmit_data - prev.xmit_data);
      s.rcv_bytes =
          4.0 * static_cast<double>(p.extended->rcv_data - prev.rcv_data);
    }
    prev.xmit_data = p.extended->xmit_data;
    prev.rcv_data = p.extended->rcv_data;
    prev.data_ok = true;
  } else {
    prev.data_ok = false;
  }
  prev.at = now;
  waits_.push_back(waits);
}

void FabricTrees::AddSwitch(const mad::Topology& topology,
                            const mad::SwitchSample& s, double now,
                            const std::set<int>* only) {
  const mad::FabricNode* node = topology.Find(s.guid);
  int max_port = 0;
  for (const mad::SwitchPortSample& p : s.ports) {
    max_port = std::max(max_port, p.num);
  }
  SwitchSlots& sw = SlotsOf(topology, node, s.guid, max_port);
  Range range{s.guid, samples_.size(), samples_.size()};
  for (const mad::SwitchPortSample& p : s.ports) {
    if (p.num < 0 || (only && !only->count(p.num))) continue;
    AddSample(node, s.guid, p, now, sw.ports[p.num]);
  }
  range.end = samples_.size();
  ranges_.push_back(range);
}

void FabricTrees::Compact() {
  input_.ports.clear();
  if (!compact_input_) {
    input_.ports.assign(samples_.begin(), samples_.end());
    return;
  }
  std::unordered_set<std::uint64_t> look;
  for (const congestion::PortRef& r : tracker_.Tracked()) look.insert(r.guid);
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    if (!waits_[i]) continue;
    look.insert(samples_[i].ref.guid);
    if (samples_[i].remote.guid) look.insert(samples_[i].remote.guid);
  }
  for (const Range& r : ranges_) {
    if (!look.count(r.guid)) continue;
    input_.ports.insert(input_.ports.end(), samples_.begin() + r.begin,
                        samples_.begin() + r.end);
  }
}

void FabricTrees::ReadTables(MadTransport& transport, const MadOptions& options,
                             const mad::Topology& topology,
                             const congestion::SweepInput& input,
                             MetricSink& sink) {
  // Only switches that a waiting port leaves or enters: a calm fabric
  // reads no table; each is read once per topology generation.
  std::set<std::uint64_t> want;
  for (const congestion::PortSample& s : input.ports) {
    if (!s.xmit_wait_ticks || *s.xmit_wait_ticks <= 0 ||
        input.interval_seconds <= 0) {
      continue;
    }
    congestion::WaitTick tick =
        congestion::WaitTickFor(s.device_id, thresholds_.fallback_tick_seconds);
    const double secs = congestion::WaitSeconds(
        *s.xmit_wait_ticks, tick, s.lanes, s.rate_bytes_per_second);
    if (secs < thresholds_.next_hop_wait * input.interval_seconds) continue;
    for (std::uint64_t g : {s.ref.guid, s.remote.guid}) {
      const mad::FabricNode* n = topology.Find(g);
      if (n && n->type == 2 && !lfts_.count(g)) want.insert(g);
    }
  }
  if (want.empty()) return;
  mad::RouteTracer tracer(transport, options);
  tracer.SetTopology(&topology);
  std::map<std::uint64_t, std::string> errors;
  auto tables = tracer.Tables({want.begin(), want.end()}, &errors);
  for (auto& [g, t] : tables) lfts_[g] = std::move(t);
  for (const auto& [g, why] : errors) {
    sink.Skip("fabric: forwarding table of " + mad::GuidString(g) + ": " + why);
  }
  if (!tables.empty()) index_.Reset();
}

void FabricTrees::Update(MadTransport& transport, const MadOptions& options,
                         const mad::Topology& topology, const mad::Shard& shard,
                         const mad::SweepResult& sweep, double now,
                         double wall_now, const NameOf& names,
                         MetricSink& sink) {
  const double cpu_start = CpuNow();
  const std::uint64_t generation = mad::StampedGeneration(topology);
  if (generation != generation_) {
    // Routes may differ: tables and next hops start again; the links of
    // each port are looked up again (SlotsOf).
    generation_ = generation;
    lfts_.clear();
    edge_pma_.clear();
    index_.Reset();
    std::erase_if(slots_,
                  [&](const auto& e) { return !topology.Find(e.first); });
  }
  input_.interval_seconds = last_sweep_ > 0 ? now - last_sweep_ : 0;
  input_.pauses.clear();
  samples_.clear();
  waits_.clear();
  ranges_.clear();
  std::set<std::pair<std::uint64_t, int>> seen;  // edge ports read
  for (const mad::SwitchSample& s : sweep.switches) {
    AddSwitch(topology, s, now, nullptr);
  }
  auto own_port = [&](std::uint64_t g, int q) {
    return shard.Contains(g) || seen.count({g, q}) > 0;
  };
  Compact();
  const double cpu_samples = CpuNow();
  ReadTables(transport, options, topology, input_, sink);
  auto own = [&](std::uint64_t g) { return shard.Contains(g); };
  if (shard.count > 1) {
    // The shard edge: read the foreign next hops of waiting ports, one hop
    // further per round.
    for (int round = 0; round < kMaxEdgeRounds; ++round) {
      input_.lfts = std::move(lfts_);
      auto edge = congestion::EdgeReads(input_, thresholds_, &index_, own);
      lfts_ = std::move(input_.lfts);
      std::map<std::uint64_t, std::set<int>> ports;
      for (const PortRef& r : edge) {
        const mad::FabricNode* n = topology.Find(r.guid);
        if (n && n->type == 2 && r.port <= n->num_ports &&
            !own_port(r.guid, r.port)) {
          ports[r.guid].insert(r.port);
        }
      }
      if (ports.empty()) break;
      mad::Topology edge_topology;
      for (const auto& [g, wanted] : ports) {
        edge_topology.by_guid[g] = edge_topology.nodes.size();
        edge_topology.nodes.push_back(*topology.Find(g));
      }
      // No PESC here; the ClassPortInfo once per switch and generation, so
      // a foreign next hop's PortXmitWait is 64-bit where its owner's is.
      const mad::SweepResult extra =
          mad::Sweep(transport, edge_topology, mad::Shard{}, options,
                     &edge_pma_, {}, /*pesc_mads=*/false);
      for (const mad::SwitchSample& s : extra.switches) {
        const std::set<int>& wanted = ports[s.guid];
        AddSwitch(topology, s, now, &wanted);
        for (int q : wanted) seen.insert({s.guid, q});
      }
      // Ports asked but not answered: known as asked, not asked again.
      for (const auto& [g, wanted] : ports) {
        for (int q : wanted) seen.insert({g, q});
      }
      Compact();
      ReadTables(transport, options, topology, input_, sink);
    }
  }
  input_.lfts = std::move(lfts_);  // lent, not copied (MBs on a big fabric)
  last_sweep_ = now;
  congestion::Classification all =
      tracker_.Run(input_, thresholds_, now, &index_);
  lfts_ = std::move(input_.lfts);
  last_ = shard.count > 1 ? congestion::OwnedOnly(all, own) : std::move(all);
  const double cpu_classified = CpuNow();
  for (const std::string& p : last_.partial)
    sink.Skip("fabric: congestion: " + p);
  ExportWaitSeconds(sweep, names, sink);
  Export(last_, names, topology, now, wall_now, sink);
  cpu_ = {cpu_samples - cpu_start, cpu_classified - cpu_samples,
          CpuNow() - cpu_classified};
}

// Wait seconds of every own port whose tick is known to convert, in the
// order the exposition sorts them (port number as text, then switch name,
// then GUID: core/metric_sink.cc). A collection refills the samples of an
// earlier one, which Take() left in that order: emitted in it, sample i
// gets the label storage it had, walked in memory order; emitted in sweep
// order, 128,000 samples cost a cache miss each (perf: 60 % of Update).
void FabricTrees::ExportWaitSeconds(const mad::SweepResult& sweep,
                                    const NameOf& names, MetricSink& sink) {
  struct Own {
    std::string name, guid;
    const SwitchSlots* slots = nullptr;
    std::vector<bool> read;  // by port number: sampled this sweep
  };
  std::vector<Own> own(sweep.switches.size());
  std::size_t ports = 0;
  // The own switches' ranges come first, in the sweep's order.
  for (std::size_t i = 0; i < sweep.switches.size(); ++i) {
    const mad::SwitchSample& s = sweep.switches[i];
    const Range& r = ranges_[i];
    Own& o = own[i];
    o.name = names(s.guid, s.description);
    o.guid = mad::GuidString(s.guid);
    o.slots = &slots_.at(s.guid);
    o.read.assign(o.slots->ports.size(), false);
    for (std::size_t j = r.begin; j < r.end; ++j) {
      o.read[samples_[j].ref.port] = true;
    }
    ports = std::max(ports, o.read.size());
  }
  std::vector<std::size_t> by_name(own.size());
  for (std::size_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(own[a].name, own[a].guid) <
           std::tie(own[b].name, own[b].guid);
  });
  std::vector<std::string> port_text(ports);
  std::vector<std::size_t> by_text(ports);
  for (std::size_t p = 0; p < ports; ++p) {
    port_text[p] = std::to_string(p);
    by_text[p] = p;
  }
  std::sort(by_text.begin(), by_text.end(), [&](std::size_t a, std::size_t b) {
    return port_text[a] < port_text[b];
  });
  for (std::size_t p : by_text) {
    for (std::size_t i : by_name) {
      const Own& o = own[i];
      if (p >= o.read.size() || !o.read[p]) continue;
      const Prev& prev = o.slots->ports[p].prev;
      if (!prev.wait_ok) continue;
      sink.Counter("fabric_switch_port_transmit_wait_seconds_total",
                   kWaitSecondsHelp,
                   LabelRefs{{"port", port_text[p]},
                             {"switch", o.name},
                             {"switch_guid", o.guid}},
                   prev.wait_seconds_total);
    }
  }
}

void FabricTrees::Export(const congestion::Classification& c,
                         const NameOf& names, const mad::Topology& topology,
                         double now, double wall_now, MetricSink& sink) {
  auto name_of = [&](std::uint64_t g) {
    const mad::FabricNode* n = topology.Find(g);
    return names(g, n ? n->description : "");
  };
  auto labels = [&](const PortRef& r) {
    return Labels{{"port", std::to_string(r.port)},
                  {"switch", name_of(r.guid)},
                  {"switch_guid", mad::GuidString(r.guid)}};
  };
  int undecided = 0;
  for (const congestion::PortVerdict& v : c.ports) {
    Labels l = labels(v.ref);
    l.insert(l.begin(), {"role", congestion::RoleName(v.role)});
    sink.Gauge("fabric_congestion_port_lost_bytes_per_second", kPortLostHelp,
               std::move(l), v.lost_bytes_per_second);
    if (v.role == congestion::Role::kUnknown) ++undecided;
    if (v.role == congestion::Role::kVictim && v.root.guid) {
      Labels vl = labels(v.ref);
      vl.insert(vl.begin(), {{"root_guid", mad::GuidString(v.root.guid)},
                             {"root_port", std::to_string(v.root.port)}});
      sink.Gauge("fabric_congestion_victim", kVictimHelp, std::move(vl), 1);
    }
  }
  for (const congestion::RootSummary& r : c.roots) {
    if (r.cause != congestion::Cause::kNone) {
      Labels l = labels(r.ref);
      l.insert(l.begin(), {"cause", congestion::CauseName(r.cause)});
      sink.Gauge("fabric_congestion_root", kRootHelp, l, 1);
      sink.Gauge("fabric_congestion_root_since_timestamp_seconds", kSinceHelp,
                 std::move(l), wall_now - (now - r.since_seconds));
    }
    sink.Gauge("fabric_congestion_root_victims", kVictimsHelp, labels(r.ref),
               r.victims);
    sink.Gauge("fabric_congestion_tree_lost_bytes_per_second", kTreeLostHelp,
               labels(r.ref), r.tree_lost_bytes_per_second);
  }
  sink.Gauge("fabric_congestion_undecided_ports", kUndecidedHelp, {},
             undecided);
  ExportHostVictims(c, topology, sink);
}

// A host port sends into its switch; if that switch has waiting ports that
// lead to a root, the host's own transmit wait (FabricPortCongestionHotspot)
// is that root's too: the root losing most bandwidth among them, other than
// a root at the host's own switch port (there the host is that root's slow
// receiver, not its victim; a switch may hold one root held over from an
// earlier tree at a host's port and a new one whose victim that host is).
void ExportHostVictims(const congestion::Classification& c,
                       const mad::Topology& topology, MetricSink& sink) {
  std::map<PortRef, double> root_lost;
  for (const congestion::RootSummary& r : c.roots) {
    root_lost[r.ref] = r.tree_lost_bytes_per_second;
  }
  // Per switch, the roots its waiting ports lead to.
  std::map<std::uint64_t, std::set<PortRef>> roots;
  for (const congestion::PortVerdict& v : c.ports) {
    PortRef root = v.role == congestion::Role::kRoot ? v.ref : v.root;
    if (v.role == congestion::Role::kUnknown || !root.guid) continue;
    roots[v.ref.guid].insert(root);
  }
  for (const auto& [guid, candidates] : roots) {
    const mad::FabricNode* sw = topology.Find(guid);
    if (!sw) continue;
    for (const auto& [num, port] : sw->ports) {
      const mad::FabricNode* host =
          port.remote_guid ? topology.Find(port.remote_guid) : nullptr;
      if (!host || host->type != 1) continue;
      const PortRef* best = nullptr;
      for (const PortRef& root : candidates) {
        if (root == PortRef{guid, num}) continue;
        if (!best || root_lost[root] > root_lost[*best]) best = &root;
      }
      if (!best) continue;
      sink.Gauge("fabric_congestion_host_victim", kHostVictimHelp,
                 Labels{{"node_guid", mad::GuidString(port.remote_guid)},
                        {"port", std::to_string(port.remote_port)},
                        {"root_guid", mad::GuidString(best->guid)},
                        {"root_port", std::to_string(best->port)}},
                 1);
    }
  }
}

}  // namespace fabric
