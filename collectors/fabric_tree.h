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
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

  // Tests: false hands Classify every port of the sweep instead of the
  // compact input (below); the classification must be the same.
  void set_compact_input(bool on) { compact_input_ = on; }

 private:
  struct Prev {
    std::uint64_t xmit_wait = 0, xmit_data = 0, rcv_data = 0;
    bool wait_ok = false, data_ok = false;
    bool wait_wide = false;  // xmit_wait from the 64-bit field
    double at = 0;           // the Update that read it (0: never)
    double wait_seconds_total = 0;
  };
  // Per switch, by port number: the previous counters and the link each
  // port leads to (from the topology of `generation`). A flat array: one
  // lookup per switch and sweep, not one per port.
  struct PortSlot {
    Prev prev;
    congestion::PortRef remote;
    bool remote_is_hca = false;
  };
  struct SwitchSlots {
    std::uint64_t generation = 0;
    std::vector<PortSlot> ports;
  };
  // This sweep's samples of one switch: samples_[begin, end).
  struct Range {
    std::uint64_t guid = 0;
    std::size_t begin = 0, end = 0;
  };
  SwitchSlots& SlotsOf(const mad::Topology& topology,
                       const mad::FabricNode* node, std::uint64_t guid,
                       int max_port);
  // Sample of one port, against (and updating) its previous counters.
  void AddSample(const mad::FabricNode* node, std::uint64_t guid,
                 const mad::SwitchPortSample& p, double now, PortSlot& slot);
  // The switches' samples, appended as one range per switch.
  void AddSwitch(const mad::Topology& topology, const mad::SwitchSample& s,
                 double now, const std::set<int>* only);
  // input_.ports from samples_: every port of the switches Classify looks
  // at — those with a port waiting at the lower threshold, the switches
  // such ports send into (their next hops and parallel links), and those
  // of the roots the tracker holds; the other ports are known and calm,
  // and Classify never looks at them. Same order as samples_.
  void Compact();
  void ReadTables(MadTransport& transport, const MadOptions& options,
                  const mad::Topology& topology,
                  const congestion::SweepInput& input, MetricSink& sink);
  void ExportWaitSeconds(const mad::SweepResult& sweep, const NameOf& names,
                         MetricSink& sink);
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
  // Switch GUID -> its ports' last counters: every switch of the shard and
  // the edge switches read.
  std::unordered_map<std::uint64_t, SwitchSlots> slots_;
  // Reused between sweeps (no allocation in a steady sweep): every port's
  // sample, by switch; whether each sample waits (lower threshold);
  // Classify's input.
  std::vector<congestion::PortSample> samples_;
  std::vector<bool> waits_;
  std::vector<Range> ranges_;
  congestion::SweepInput input_;
  bool compact_input_ = true;
  double last_sweep_ = 0;
  congestion::Classification last_;
  Cpu cpu_;
};

// fabric_congestion_host_victim for every host port on a switch of a tree:
// the root the switch's waiting ports lead to that loses most, other than a
// root at that host's own switch port (there the host is the root's slow
// receiver). Pure: exported for tests.
void ExportHostVictims(const congestion::Classification& c,
                       const mad::Topology& topology, MetricSink& sink);

}  // namespace fabric
