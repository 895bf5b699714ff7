#include "collectors/series_names.h"

#include <initializer_list>
#include <span>

#include "collectors/hw_counters.h"
#include "collectors/opensm_parse.h"

namespace fabric {
namespace {

// PortCounters' error fields, as sysfs counters/ files and as the sweep's
// `error` values: kSwitchPortErrorNames (collectors/opensm_parse.h), and
// port_rcv_discards, which some kernels add.
constexpr std::string_view kPortRcvDiscards[] = {"port_rcv_discards"};

// The counters/ and counters_ext/ files with a metric of their own
// (collectors/ib_port.cc), and port_xmit_wait's saturation flag.
constexpr std::string_view kPortCounters[] = {
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
    "port_xmit_wait",
    "port_xmit_data_64",
    "port_rcv_data_64",
    "port_xmit_packets_64",
    "port_rcv_packets_64",
    "port_unicast_xmit_packets",
    "port_unicast_rcv_packets",
    "port_multicast_xmit_packets",
    "port_multicast_rcv_packets",
};

// mlx5's hw_counters/ files (drivers/infiniband/hw/mlx5/counters.c) besides
// the 32-bit Q-counters (collectors/hw_counters.h): the congestion and
// extended PPCNT sets. Other drivers' names are exported as well; they are
// just not known here.
constexpr std::string_view kHwCounters64[] = {
    "rx_icrc_encapsulated",       "rp_cnp_ignored", "rp_cnp_handled",
    "np_ecn_marked_roce_packets", "np_cnp_sent",
};

// mlx5's optional counters that RDMA netlink shows once enabled
// (`rdma statistic set ... optional-counters`).
constexpr std::string_view kOptionalCounters[] = {
    "cc_rx_ce_pkts",
    "cc_rx_cnp_pkts",
    "cc_tx_cnp_pkts",
};

using NameList = std::span<const std::string_view>;

std::vector<std::string> Names(std::initializer_list<std::string_view> families,
                               std::initializer_list<NameList> counters) {
  std::vector<std::string> out(families.begin(), families.end());
  for (NameList names : counters)
    out.insert(out.end(), names.begin(), names.end());
  return out;
}

}  // namespace

std::vector<std::string> KnownSeries(std::string_view collector) {
  if (collector == "ib_port") {
    return Names(
        {
            "fabric_device_info",
            "fabric_port_info",
            "fabric_port_state",
            "fabric_port_physical_state",
            "fabric_port_rate_bytes_per_second",
            "fabric_port_link_width_lanes",
            "fabric_port_lid",
            "fabric_port_sm_lid",
            "fabric_port_sm_sl",
            "fabric_port_capability_mask",
            "fabric_port_transmit_bytes_total",
            "fabric_port_receive_bytes_total",
            "fabric_port_transmit_packets_total",
            "fabric_port_receive_packets_total",
            "fabric_port_unicast_transmit_packets_total",
            "fabric_port_unicast_receive_packets_total",
            "fabric_port_multicast_transmit_packets_total",
            "fabric_port_multicast_receive_packets_total",
            "fabric_port_transmit_wait_total",
            "fabric_port_errors_total",
            "fabric_port_counters_saturated",
            "fabric_port_other_total",
        },
        {kSwitchPortErrorNames, kPortRcvDiscards, kPortCounters});
  }
  if (collector == "hw_counters") {
    return Names(
        {
            "fabric_hw_counters_total",
            "fabric_device_hw_counters_total",
            "fabric_roce_cnp_sent_total",
            "fabric_roce_cnp_handled_total",
            "fabric_roce_cnp_ignored_total",
            "fabric_roce_ecn_marked_packets_total",
            "fabric_roce_out_of_sequence_total",
            "fabric_roce_packet_sequence_errors_total",
            "fabric_roce_local_ack_timeout_errors_total",
            "fabric_roce_adaptive_retransmissions_total",
            "fabric_roce_slow_restarts_total",
        },
        {QCounter32Names(), kHwCounters64});
  }
  if (collector == "roce") {
    return Names(
        {
            "fabric_roce_netdev_info",
            "fabric_pfc_pause_frames_total",
            "fabric_pfc_pause_duration_seconds_total",
            "fabric_pfc_pause_transitions_total",
            "fabric_pfc_pause_storm_events_total",
            "fabric_roce_priority_bytes_total",
            "fabric_roce_priority_packets_total",
            "fabric_roce_priority_discarded_packets_total",
            "fabric_roce_priority_ecn_marked_packets_total",
            "fabric_roce_rx_ecn_marked_packets_total",
            "fabric_roce_global_pause_frames_total",
            "fabric_roce_global_pause_duration_seconds_total",
            "fabric_roce_phy_discarded_packets_total",
            "fabric_roce_rx_out_of_buffer_total",
            "fabric_roce_rx_buffer_passed_threshold_total",
            "fabric_roce_phy_corrected_bit_errors_total",
            "fabric_roce_phy_lane_errors_total",
            "fabric_roce_phy_pcs_symbol_errors_total",
            "fabric_roce_phy_symbol_errors_total",
            "fabric_roce_phy_crc_errors_total",
            "fabric_roce_phy_link_down_events_total",
            "fabric_roce_fec_mode_info",
            "fabric_roce_fec_corrected_blocks_total",
            "fabric_roce_fec_uncorrectable_blocks_total",
            "fabric_roce_fec_corrected_bit_errors_total",
            "fabric_roce_fec_lane_corrected_blocks_total",
            "fabric_roce_fec_lane_uncorrectable_blocks_total",
            "fabric_roce_fec_lane_corrected_bit_errors_total",
            "fabric_roce_ecn_enabled",
            "fabric_roce_pfc_enabled",
            "fabric_roce_pfc_capable_traffic_classes",
            "fabric_roce_dcb_pfc_frames_total",
            "fabric_roce_ets_willing",
            "fabric_roce_priority_traffic_class",
            "fabric_roce_trust_info",
            "fabric_roce_gid_entries",
            "fabric_roce_optional_counter_total",
            "fabric_roce_link_speed_bytes_per_second",
            "fabric_roce_link_speed_capable_bytes_per_second",
            "fabric_roce_link_partner_speed_capable_bytes_per_second",
        },
        {kOptionalCounters});
  }
  if (collector == "fabric") {
    return Names(
        {
            "fabric_switch_info",
            "fabric_switch_port_state",
            "fabric_switch_port_physical_state",
            "fabric_switch_port_link_info",
            "fabric_switch_port_transmit_bytes_total",
            "fabric_switch_port_receive_bytes_total",
            "fabric_switch_port_transmit_packets_total",
            "fabric_switch_port_receive_packets_total",
            "fabric_switch_port_transmit_wait_total",
            "fabric_switch_port_errors_total",
            "fabric_switch_port_counters_saturated",
            "fabric_switch_port_link_width_lanes",
            "fabric_switch_port_link_width_capable_lanes",
            "fabric_switch_port_lane_rate_bytes_per_second",
            "fabric_switch_port_lane_rate_capable_bytes_per_second",
            "fabric_switch_port_rate_bytes_per_second",
            "fabric_switch_port_sync_header_errors_total",
            "fabric_switch_port_unknown_blocks_total",
            "fabric_switch_port_fec_corrected_symbols_total",
            "fabric_switch_port_fec_lane_corrected_symbols_total",
            "fabric_switch_port_fec_corrected_blocks_total",
            "fabric_switch_port_fec_uncorrectable_blocks_total",
            "fabric_switch_port_phy_lane_errors_total",
            "fabric_switch_port_fec_lane_corrected_blocks_total",
            "fabric_switch_port_fec_lane_uncorrectable_blocks_total",
            "fabric_switch_port_link_down_transitions_total",
            "fabric_switch_mad_failures_total",
            "fabric_switch_unanswered_sweeps",
            "fabric_sweep_pesc_unsupported_switches",
            "fabric_sweep_mads_total",
            "fabric_sweep_unreachable_nodes",
            // Congestion trees (collectors/fabric_tree.h).
            "fabric_switch_port_transmit_wait_seconds_total",
            "fabric_congestion_root",
            "fabric_congestion_root_since_timestamp_seconds",
            "fabric_congestion_root_victims",
            "fabric_congestion_tree_lost_bytes_per_second",
            "fabric_congestion_victim",
            "fabric_congestion_port_lost_bytes_per_second",
            "fabric_congestion_host_victim",
            "fabric_congestion_undecided_ports",
        },
        {kSwitchPortErrorNames});
  }
  return {};
}

}  // namespace fabric
