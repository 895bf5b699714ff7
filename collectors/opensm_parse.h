// opensm_parse: the pure part of the `opensm` collector, the accumulator
// that turns decoded plugin events (osm/event_wire.h) into the collector's
// samples.
//
// Thread-safety: OpensmTotals is a plain value; its owner serialises
// access.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "core/metric_sink.h"
#include "osm/event_wire.h"
#include "sources/node_name_map.h"

namespace fabric {

// The PortCounters error fields OpenSM's PerfMgr reports, with the `error`
// label the host side uses for the same field (the sysfs file name).
inline constexpr int kSwitchPortErrorFields = 12;
extern const std::array<std::string_view, kSwitchPortErrorFields>
    kSwitchPortErrorNames;

// A large real fabric's switch ports (256 switches of 64 ports). Each port
// costs up to 17 series and ~34 KB of the daemon's RSS (docs/opensm.md,
// Bounds).
inline constexpr int kDefaultMaxSwitchPorts = 16384;

// Everything the collector has accumulated since it started.
class OpensmTotals {
 public:
  // Tracks at most `max_switch_ports` switch ports: PerfMgr events for
  // further ports are counted in over_cap() and not accumulated, so what
  // OpenSM (or anyone who may write to the socket) sends cannot grow the
  // exposition and the daemon's memory without bound.
  explicit OpensmTotals(int max_switch_ports = kDefaultMaxSwitchPorts)
      : max_ports_(max_switch_ports) {}

  // Adds one decoded datagram. Port counters are accumulated for switch
  // ports only (see docs/opensm.md); an event whose node type the plugin
  // could not look up counts as a switch's when an earlier event said the
  // GUID is a switch (of a port tracked), and is otherwise not accumulated
  // (counted in unclassified()).
  void Apply(const osm::Message& message);
  // Counts a datagram the decoder rejected.
  void Reject() { ++rejected_; }
  // Writes every sample; `names` (node-name-map) overrides event names.
  // Without `switch_ports`, the fabric_switch_port_* samples are left out.
  void Emit(MetricSink& sink, const NodeNameMap& names,
            bool switch_ports = true) const;

  uint64_t rejected() const { return rejected_; }
  uint64_t unclassified() const { return unclassified_; }
  uint64_t over_cap() const { return over_cap_; }
  std::size_t switch_ports() const { return ports_.size(); }

 private:
  struct SwitchPort {
    std::string name;
    std::array<uint64_t, kSwitchPortErrorFields> errors{};
    uint64_t xmit_words = 0, rcv_words = 0, xmit_pkts = 0, rcv_pkts = 0;
    uint64_t xmit_wait = 0;
    bool has_errors = false, has_data = false;
  };
  SwitchPort* PortFor(const osm::PortId& id);

  std::size_t max_ports_;
  std::array<uint64_t, osm::kEventCount> events_{};
  uint64_t dropped_ = 0;
  uint64_t rejected_ = 0;
  uint64_t unclassified_ = 0;
  uint64_t over_cap_ = 0;
  uint64_t sweep_start_ns_ = 0;
  bool sweep_started_ = false;
  double last_sweep_seconds_ = -1;
  std::map<std::string, uint64_t> traps_;
  // GUIDs of the switches with a port in ports_ (so bounded with it).
  std::unordered_set<uint64_t> switches_;
  std::map<std::pair<uint64_t, uint8_t>, SwitchPort> ports_;
};

}  // namespace fabric
