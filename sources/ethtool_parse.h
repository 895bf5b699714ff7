// Pure parsers for ethtool driver statistics (no I/O).
//
// ParseEthtoolStats turns the (names, values) pairs an EthtoolSource returns
// into the typed RoCE/PFC view the roce collector exports. It knows the mlx5
// names (kernel Documentation/networking/device_drivers/ethernet/mellanox/
// mlx5/counters.rst); any other string is ignored, so other drivers simply
// yield an empty view. Absent is not zero: a field is set only when the
// driver reported that statistic.
//
// ParseEthtoolText reads the text `ethtool -S <if>` prints (optionally with
// the "NIC statistics:" header and indentation): the recorded dumps in
// tests/fixtures and the dumps the file-backed EthtoolSource
// (sources/ethtool_file.h) reads go through it and then ParseEthtoolStats.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/ethtool_source.h"

namespace fabric {

using OptU64 = std::optional<std::uint64_t>;

enum Direction : int { kRx = 0, kTx = 1 };
inline const char* DirectionName(int d) { return d == kRx ? "rx" : "tx"; }

constexpr int kPriorities = 8;  // IEEE 802.1p priorities 0..7

// mlx5 per-priority counters; index [kRx]/[kTx] where both exist.
struct PriorityStats {
  std::array<OptU64, 2> pause;              // {rx,tx}_prio{p}_pause, frames
  std::array<OptU64, 2> pause_duration_us;  // {rx,tx}_prio{p}_pause_duration
  std::array<OptU64, 2> pause_transition;   // {rx,tx}_prio{p}_pause_transition
  std::array<OptU64, 2> bytes;              // {rx,tx}_prio{p}_bytes
  std::array<OptU64, 2> packets;            // {rx,tx}_prio{p}_packets
  OptU64 buf_discard;   // rx_prio{p}_buf_discard: no per-host buffer
  OptU64 cong_discard;  // rx_prio{p}_cong_discard: per-host congestion (WRED)
  OptU64 discards;      // rx_prio{p}_discards: no receive buffer
  OptU64 marked;        // rx_prio{p}_marked: ECN-marked by the device itself
};

struct RoceEthtoolStats {
  std::array<PriorityStats, kPriorities> prio;
  OptU64 pause_storm_warning;          // tx_pause_storm_warning_events
  OptU64 pause_storm_error;            // tx_pause_storm_error_events
  std::array<OptU64, 2> global_pause;  // {rx,tx}_global_pause
  std::array<OptU64, 2> global_pause_duration_us;  // ..._global_pause_duration
  std::array<OptU64, 2> pause_ctrl_phy;            // {rx,tx}_pause_ctrl_phy, or
                                                   // legacy pause_ctrl_{rx,tx}
  std::array<OptU64, 2> discards_phy;              // {rx,tx}_discards_phy
  OptU64 rx_out_of_buffer;                         // rx_out_of_buffer
  OptU64 rx_buffer_passed_thres_phy;               // rx_buffer_passed_thres_phy
  // ECN CE-marked packets delivered to the kernel's Ethernet receive queues:
  // rx_ecn_mark when the driver has the aggregate, else the sum of the
  // per-queue rx{N}_ecn_mark (per-queue series would explode cardinality).
  OptU64 rx_ecn_mark;
  // Physical-layer (PPCNT) error counters, the cable and link health view
  // (mlx5 counters.rst, "Physical Port Counters"). Which of them a NIC has
  // depends on the device and firmware: ConnectX-4 Lx reports none per lane.
  OptU64 phy_corrected_bits;     // rx_corrected_bits_phy: bits FEC corrected
  OptU64 phy_pcs_symbol_errors;  // rx_pcs_symbol_err_phy: symbol errors FEC
                                 // did not correct (or FEC off)
  OptU64 phy_symbol_errors;      // rx_symbol_err_phy, legacy symbol_err:
                                 // packets received with coding errors
  OptU64 phy_crc_errors;         // rx_crc_errors_phy, legacy check_seq_err
  OptU64 phy_link_down_events;   // link_down_events_phy
  // rx_err_lane_<l>_phy: raw (pre-FEC) bit errors per physical lane;
  // index = lane, absent lanes nullopt. mlx5 has up to 8 lanes.
  static constexpr int kMaxLanes = 8;
  std::array<OptU64, kMaxLanes> phy_lane_errors;
  std::size_t recognized = 0;  // names that mapped to a field
};

// Maps names[i] -> values[i]. Extra values or names (size mismatch) are
// ignored beyond the shorter of the two. The first occurrence of a duplicate
// name wins.
RoceEthtoolStats ParseEthtoolStats(const std::vector<std::string>& names,
                                   const std::vector<std::uint64_t>& values);

struct EthtoolText {
  EthtoolStats stats;         // driver stays empty
  std::size_t bad_lines = 0;  // lines that are not "name: <u64>"
};

// Parses `ethtool -S` output. Blank lines and the "NIC statistics:" header
// are skipped; any other line that is not `name: unsigned-decimal` (missing
// colon, empty name, negative, non-numeric, > 2^64-1, truncated) is counted
// in bad_lines and skipped.
EthtoolText ParseEthtoolText(std::string_view text);

}  // namespace fabric
