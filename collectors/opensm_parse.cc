#include "collectors/opensm_parse.h"

#include "sources/sysfs_parse.h"

namespace fabric {

const std::array<std::string_view, kSwitchPortErrorFields>
    kSwitchPortErrorNames = {
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_rcv_switch_relay_errors",
        "port_xmit_discards",
        "port_xmit_constraint_errors",
        "port_rcv_constraint_errors",
        "local_link_integrity_errors",
        "excessive_buffer_overrun_errors",
        "VL15_dropped",
};

namespace {

constexpr std::string_view kEventsHelp =
    "OpenSM events received from the libfabricmon_osm.so event plugin.";
constexpr std::string_view kErrorsHelp =
    "Switch port error counters, accumulated from OpenSM PerfMgr deltas.";

}  // namespace

OpensmTotals::SwitchPort* OpensmTotals::PortFor(const osm::PortId& id) {
  const bool is_switch = id.node_type == osm::NodeType::kSwitch ||
                         (id.node_type == osm::NodeType::kUnknown &&
                          switches_.count(id.node_guid));
  if (!is_switch) {
    // A host port (exported by that host's own daemon), or unknown.
    if (id.node_type == osm::NodeType::kUnknown) ++unclassified_;
    return nullptr;
  }
  auto it = ports_.find({id.node_guid, id.port});
  if (it == ports_.end()) {
    if (ports_.size() >= max_ports_) {
      ++over_cap_;
      return nullptr;
    }
    it = ports_.try_emplace({id.node_guid, id.port}).first;
    switches_.insert(id.node_guid);
  }
  it->second.name.assign(id.NameView());
  return &it->second;
}

void OpensmTotals::Apply(const osm::Message& m) {
  ++events_[static_cast<int>(m.event)];
  dropped_ += m.dropped;
  if (const auto* pe = std::get_if<osm::PortErrors>(&m.body)) {
    if (SwitchPort* p = PortFor(pe->id)) {
      const uint64_t values[kSwitchPortErrorFields] = {
          pe->symbol_error,
          pe->link_error_recovery,
          pe->link_downed,
          pe->port_rcv_errors,
          pe->port_rcv_remote_physical_errors,
          pe->port_rcv_switch_relay_errors,
          pe->port_xmit_discards,
          pe->port_xmit_constraint_errors,
          pe->port_rcv_constraint_errors,
          pe->local_link_integrity_errors,
          pe->excessive_buffer_overrun_errors,
          pe->vl15_dropped};
      for (int i = 0; i < kSwitchPortErrorFields; ++i) {
        p->errors[i] += values[i];
      }
      // PortXmitWait comes with the error counters since OpenSM 3.3.19;
      // port_select events carry the same quantity and are not added.
      p->xmit_wait += pe->port_xmit_wait;
      p->has_errors = true;
    }
  } else if (const auto* dc = std::get_if<osm::PortData>(&m.body)) {
    if (SwitchPort* p = PortFor(dc->id)) {
      p->xmit_words += dc->xmit_data;
      p->rcv_words += dc->rcv_data;
      p->xmit_pkts += dc->xmit_pkts;
      p->rcv_pkts += dc->rcv_pkts;
      p->has_data = true;
    }
  } else if (const auto* trap = std::get_if<osm::Trap>(&m.body)) {
    ++traps_[trap->generic ? std::to_string(trap->trap_number) : "vendor"];
  } else if (m.event == osm::Event::kHeavySweepStart) {
    sweep_start_ns_ = m.monotonic_ns;
    sweep_started_ = true;
  } else if (m.event == osm::Event::kHeavySweepDone && sweep_started_ &&
             m.monotonic_ns >= sweep_start_ns_) {
    last_sweep_seconds_ = (m.monotonic_ns - sweep_start_ns_) * 1e-9;
    sweep_started_ = false;
  }
}

void OpensmTotals::Emit(MetricSink& sink, const NodeNameMap& names,
                        bool switch_ports) const {
  for (int e = 0; e < osm::kEventCount; ++e) {
    sink.Counter(
        "fabric_opensm_events_total", kEventsHelp,
        {{"event", std::string(osm::EventName(static_cast<osm::Event>(e)))}},
        static_cast<double>(events_[e]));
  }
  sink.Counter("fabric_opensm_events_dropped_total",
               "OpenSM events the plugin could not deliver (no daemon, full "
               "queue, no data from OpenSM).",
               {}, static_cast<double>(dropped_));
  if (last_sweep_seconds_ >= 0) {
    sink.Gauge("fabric_opensm_heavy_sweep_duration_seconds",
               "Duration of OpenSM's last heavy sweep, start to done.", {},
               last_sweep_seconds_);
  }
  for (const auto& [trap, count] : traps_) {
    sink.Counter("fabric_opensm_traps_total",
                 "Traps OpenSM received, by trap number (\"vendor\" for "
                 "vendor-specific traps).",
                 {{"trap", trap}}, static_cast<double>(count));
  }
  if (!switch_ports) return;
  for (const auto& [key, p] : ports_) {
    const auto mapped = names.names.find(key.first);
    const std::string& name =
        mapped != names.names.end() ? mapped->second : p.name;
    const Labels labels = {{"switch_guid", FormatGuid(key.first)},
                           {"switch", name},
                           {"port", std::to_string(key.second)}};
    if (p.has_data) {
      sink.Counter("fabric_switch_port_transmit_bytes_total",
                   "Bytes transmitted by the switch port (PortXmitData x 4).",
                   labels, 4.0 * static_cast<double>(p.xmit_words));
      sink.Counter("fabric_switch_port_receive_bytes_total",
                   "Bytes received by the switch port (PortRcvData x 4).",
                   labels, 4.0 * static_cast<double>(p.rcv_words));
      sink.Counter("fabric_switch_port_transmit_packets_total",
                   "Packets transmitted by the switch port.", labels,
                   static_cast<double>(p.xmit_pkts));
      sink.Counter("fabric_switch_port_receive_packets_total",
                   "Packets received by the switch port.", labels,
                   static_cast<double>(p.rcv_pkts));
    }
    if (p.has_errors) {
      sink.Counter("fabric_switch_port_transmit_wait_total",
                   "Ticks the switch port had data to send but could not "
                   "(PortXmitWait).",
                   labels, static_cast<double>(p.xmit_wait));
      for (int i = 0; i < kSwitchPortErrorFields; ++i) {
        Labels with_error = labels;
        with_error.push_back({"error", std::string(kSwitchPortErrorNames[i])});
        sink.Counter("fabric_switch_port_errors_total", kErrorsHelp,
                     std::move(with_error), static_cast<double>(p.errors[i]));
      }
    }
  }
}

}  // namespace fabric
