// Congestion trees in the fabric collector (issue 42): after each sweep,
// turns the switch ports' counters into per-interval deltas, reads the
// forwarding tables of the switches with a waiting port and of their
// neighbours (RouteTracer::Tables, cached per topology generation), and
// classifies every waiting port (congestion/tree.h). With a sharded sweep
// it also reads, at the shard edge, the counters of the foreign next hops
// its waiting ports send into (EdgeReads: one extra small sweep per round
// of the switches concerned), so its own ports are decided exactly; it
// exports only its own ports, and per root the victims it holds
// (Prometheus sums them by root).
//
// Exports per switch port fabric_switch_port_transmit_wait_seconds_total
// (PortXmitWait in seconds, by the ASIC's tick: congestion/xmit_wait.h),
// and for the trees: fabric_congestion_root{cause}, _root_since_timestamp_
// seconds, _root_victims, _tree_lost_bytes_per_second (per root),
// fabric_congestion_victim{root_guid,root_port} (per victim port),
// fabric_congestion_port_lost_bytes_per_second{role} (per waiting port) and
// fabric_congestion_undecided_ports (waiting ports the sweep could not
// decide: a partial answer), and fabric_congestion_host_victim{node_guid,
// port,root_guid,root_port} for the host ports on switches of a tree (for
// the hosts' own alerts' inhibition). Only trees have series.
//
// Thread-safety: none; the fabric collector's thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "congestion/tree.h"
#include "core/metric_sink.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/routes.h"
#include "sources/mad/sweep.h"

namespace fabric {

class FabricTrees {
 public:
  // `names(guid, fallback)`: the switch name to export.
  using NameOf = std::function<std::string(std::uint64_t, const std::string&)>;

  // One sweep of `shard` at `now` (monotonic seconds; `wall_now` the same
  // instant in Unix time, for the exported since). `transport`/`options`
  // read the tables and, when sharded, the edge counters.
  void Update(MadTransport& transport, const MadOptions& options,
              const mad::Topology& topology, const mad::Shard& shard,
              const mad::SweepResult& sweep, double now, double wall_now,
              const NameOf& names, MetricSink& sink);

  // The classification of the last Update (tests).
  const congestion::Classification& last() const { return last_; }
  // Process CPU seconds of the last Update's parts (bench/congestion_cost):
  // the counters' deltas, the classification (tables read included), and
  // the exported series.
  struct Cpu {
    double samples = 0, classify = 0, export_series = 0;
  };
  const Cpu& cpu() const { return cpu_; }

 private:
  struct Prev {
    std::uint64_t xmit_wait = 0, xmit_data = 0, rcv_data = 0;
    bool wait_ok = false, data_ok = false;
    bool wait_wide = false;  // xmit_wait from the 64-bit field
    double at = 0;
    double wait_seconds_total = 0;
  };
  // Sample of one port, against (and updating) its previous counters.
  void AddSample(const mad::Topology& topology, const mad::FabricNode* node,
                 std::uint64_t guid, const mad::SwitchPortSample& p, double now,
                 congestion::SweepInput& input);
  void ReadTables(MadTransport& transport, const MadOptions& options,
                  const mad::Topology& topology,
                  const congestion::SweepInput& input, MetricSink& sink);
  void ExportHostVictims(const congestion::Classification& c,
                         const mad::Topology& topology, MetricSink& sink);
  void Export(const congestion::Classification& c, const NameOf& names,
              const mad::Topology& topology, double now, double wall_now,
              MetricSink& sink);

  std::uint64_t generation_ = 0;
  std::unique_ptr<mad::RouteTracer> tracer_;
  congestion::Lfts lfts_;
  mad::PescCache edge_pma_;  // edge switches' PMA ClassPortInfo
  std::map<std::uint64_t, std::string> table_errors_;
  congestion::RouteIndex index_;
  congestion::Tracker tracker_;
  congestion::Thresholds thresholds_;
  struct KeyHash {
    std::size_t operator()(const std::pair<std::uint64_t, int>& k) const {
      return std::hash<std::uint64_t>()(k.first * 0x9e3779b97f4a7c15ull ^
                                        static_cast<std::uint64_t>(k.second));
    }
  };
  // (switch GUID, port) -> last sweep's counters: every port of the shard.
  std::unordered_map<std::pair<std::uint64_t, int>, Prev, KeyHash> prev_;
  double last_sweep_ = 0;
  congestion::Classification last_;
  Cpu cpu_;
};

}  // namespace fabric
