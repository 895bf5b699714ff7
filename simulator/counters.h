// Counter arithmetic the way InfiniBand/mlx5 hardware does it, and the table
// of PortCounters files the simulator renders.
//
// - PortCounters error fields (symbol_error, link_downed, ...) are 4/8/16-bit
//   and SATURATE at their maximum (IBA 16.1.3.5); they stay there until a
//   reset, which fabricmon never does.
// - Data/packet counters come from PortCountersExtended (64-bit) on every
//   ConnectX-7/BlueField-3; port_*_data counts 4-byte words.
// - mlx5 hw_counters Q-counters are read as 32-bit and WRAP; the congestion
//   counters (np_cnp_sent, rp_cnp_handled, ...) are 64-bit.
//
// Thread-safety: pure functions and constant tables.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace fabric::sim {

// value + delta, wrapping at 2^bits (bits in 1..64).
constexpr std::uint64_t AddWrapping(std::uint64_t value, std::uint64_t delta,
                                    int bits) {
  const std::uint64_t sum = value + delta;  // unsigned: wraps at 2^64
  if (bits >= 64) return sum;
  return sum & ((std::uint64_t{1} << bits) - 1);
}

// value + delta, sticking at 2^bits - 1.
constexpr std::uint64_t AddSaturating(std::uint64_t value, std::uint64_t delta,
                                      int bits) {
  const std::uint64_t max =
      bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  if (value >= max || delta >= max - value) return max;
  return value + delta;
}

// PortCounters/PortCountersExtended fields as rendered under counters/.
enum class Ctr : int {
  kSymbolError,
  kLinkErrorRecovery,
  kLinkDowned,
  kPortRcvErrors,
  kPortRcvRemotePhysicalErrors,
  kPortRcvSwitchRelayErrors,
  kPortXmitDiscards,
  kPortXmitConstraintErrors,
  kPortRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kVL15Dropped,
  kPortXmitData,
  kPortRcvData,
  kPortXmitPackets,
  kPortRcvPackets,
  kUnicastXmitPackets,
  kUnicastRcvPackets,
  kMulticastXmitPackets,
  kMulticastRcvPackets,
  kPortXmitWait,
  kCount,
};

struct CounterSpec {
  std::string_view file;  // name under ports/<n>/counters/
  int bits;
  bool saturating;  // else wrapping
};

inline constexpr std::array<CounterSpec, static_cast<int>(Ctr::kCount)>
    kCounterSpecs = {{
        {"symbol_error", 16, true},
        {"link_error_recovery", 8, true},
        {"link_downed", 8, true},
        {"port_rcv_errors", 16, true},
        {"port_rcv_remote_physical_errors", 16, true},
        {"port_rcv_switch_relay_errors", 16, true},
        {"port_xmit_discards", 16, true},
        {"port_xmit_constraint_errors", 8, true},
        {"port_rcv_constraint_errors", 8, true},
        {"local_link_integrity_errors", 4, true},
        {"excessive_buffer_overrun_errors", 4, true},
        {"VL15_dropped", 16, true},
        {"port_xmit_data", 64, false},
        {"port_rcv_data", 64, false},
        {"port_xmit_packets", 64, false},
        {"port_rcv_packets", 64, false},
        {"unicast_xmit_packets", 64, false},
        {"unicast_rcv_packets", 64, false},
        {"multicast_xmit_packets", 64, false},
        {"multicast_rcv_packets", 64, false},
        // PortXmitWait from PortCountersExtended (64-bit, IBA 1.3); see
        // docs/simulator.md for the tick length.
        {"port_xmit_wait", 64, false},
    }};

constexpr const CounterSpec& Spec(Ctr c) {
  return kCounterSpecs[static_cast<int>(c)];
}

// A port's PortCounters, in sysfs units (data in 4-byte words).
class PortCounters {
 public:
  std::uint64_t Get(Ctr c) const { return v_[static_cast<int>(c)]; }
  void Add(Ctr c, std::uint64_t delta) {
    auto& v = v_[static_cast<int>(c)];
    const auto& s = Spec(c);
    v = s.saturating ? AddSaturating(v, delta, s.bits)
                     : AddWrapping(v, delta, s.bits);
  }
  void Set(Ctr c, std::uint64_t value) { v_[static_cast<int>(c)] = value; }
  void Clear() { v_.fill(0); }

 private:
  std::array<std::uint64_t, static_cast<int>(Ctr::kCount)> v_{};
};

// mlx5 hw_counters rendered on every port (the ConnectX-7/BlueField-3 set of
// the recorded H100 tree), all 32-bit Q-counters.
// (`lifespan`, the cache time in ms, is rendered separately.)
inline constexpr std::array<std::string_view, 25> kQCounters = {
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_icrc_encapsulated",
    "rx_read_requests",
    "rx_write_requests",
};
inline constexpr int kQCounterBits = 32;

// mlx5 congestion-control counters (64-bit), present on RoCE ports when the
// firmware allows cc queries (kernel mlx5 counters.c "cong" group).
inline constexpr std::array<std::string_view, 4> kCongestionCounters = {
    "np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled",
    "rp_cnp_ignored"};
inline constexpr int kCongestionCounterBits = 64;

}  // namespace fabric::sim
