// node_exporter 1.5.0's infiniband metrics and the fabricmon metric each
// one corresponds to, shared by the parity tests on recorded and simulated
// trees. Thread-safety: a function-local static, safe to read anywhere.
#pragma once

#include <map>
#include <string>

namespace fabric::testing {

struct Target {
  std::string metric;
  std::string error;  // fabric_port_errors_total{error=...} when set
};

// node_exporter 1.5.0 infiniband metric -> fabricmon metric.
inline const std::map<std::string, Target>& Mapping() {
  static const std::map<std::string, Target> m = {
      {"port_data_received_bytes_total",
       {"fabric_port_receive_bytes_total", ""}},
      {"port_data_transmitted_bytes_total",
       {"fabric_port_transmit_bytes_total", ""}},
      {"port_packets_received_total",
       {"fabric_port_receive_packets_total", ""}},
      {"port_packets_transmitted_total",
       {"fabric_port_transmit_packets_total", ""}},
      {"unicast_packets_received_total",
       {"fabric_port_unicast_receive_packets_total", ""}},
      {"unicast_packets_transmitted_total",
       {"fabric_port_unicast_transmit_packets_total", ""}},
      {"multicast_packets_received_total",
       {"fabric_port_multicast_receive_packets_total", ""}},
      {"multicast_packets_transmitted_total",
       {"fabric_port_multicast_transmit_packets_total", ""}},
      {"port_transmit_wait_total", {"fabric_port_transmit_wait_total", ""}},
      {"state_id", {"fabric_port_state", ""}},
      {"physical_state_id", {"fabric_port_physical_state", ""}},
      {"rate_bytes_per_second", {"fabric_port_rate_bytes_per_second", ""}},
      {"symbol_error_total", {"fabric_port_errors_total", "symbol_error"}},
      {"link_downed_total", {"fabric_port_errors_total", "link_downed"}},
      {"link_error_recovery_total",
       {"fabric_port_errors_total", "link_error_recovery"}},
      {"local_link_integrity_errors_total",
       {"fabric_port_errors_total", "local_link_integrity_errors"}},
      {"excessive_buffer_overrun_errors_total",
       {"fabric_port_errors_total", "excessive_buffer_overrun_errors"}},
      {"port_constraint_errors_received_total",
       {"fabric_port_errors_total", "port_rcv_constraint_errors"}},
      {"port_constraint_errors_transmitted_total",
       {"fabric_port_errors_total", "port_xmit_constraint_errors"}},
      {"port_discards_received_total",
       {"fabric_port_errors_total", "port_rcv_discards"}},
      {"port_discards_transmitted_total",
       {"fabric_port_errors_total", "port_xmit_discards"}},
      {"port_errors_received_total",
       {"fabric_port_errors_total", "port_rcv_errors"}},
      {"port_receive_remote_physical_errors_total",
       {"fabric_port_errors_total", "port_rcv_remote_physical_errors"}},
      {"port_receive_switch_relay_errors_total",
       {"fabric_port_errors_total", "port_rcv_switch_relay_errors"}},
      {"vl15_dropped_total", {"fabric_port_errors_total", "VL15_dropped"}},
  };
  return m;
}

}  // namespace fabric::testing
