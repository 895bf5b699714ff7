#include "sources/ethtool_parse.h"

#include <charconv>

#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

bool Consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

void SetOnce(OptU64& field, std::uint64_t value, std::size_t& recognized) {
  if (field) return;  // first occurrence wins
  field = value;
  ++recognized;
}

// "{rx,tx}_prio{p}_<suffix>" -> the field, or nullptr.
OptU64* PriorityField(RoceEthtoolStats& out, std::string_view name) {
  int dir;
  if (Consume(name, "rx_prio")) {
    dir = kRx;
  } else if (Consume(name, "tx_prio")) {
    dir = kTx;
  } else {
    return nullptr;
  }
  if (name.size() < 3 || name[0] < '0' || name[0] > '7' || name[1] != '_') {
    return nullptr;
  }
  PriorityStats& p = out.prio[name[0] - '0'];
  name.remove_prefix(2);
  if (name == "pause") return &p.pause[dir];
  if (name == "pause_duration") return &p.pause_duration_us[dir];
  if (name == "pause_transition") return &p.pause_transition[dir];
  if (name == "bytes") return &p.bytes[dir];
  if (name == "packets") return &p.packets[dir];
  if (dir != kRx) return nullptr;
  if (name == "buf_discard") return &p.buf_discard;
  if (name == "cong_discard") return &p.cong_discard;
  if (name == "discards") return &p.discards;
  if (name == "marked") return &p.marked;
  return nullptr;
}

OptU64* PortField(RoceEthtoolStats& out, std::string_view name) {
  if (name == "tx_pause_storm_warning_events") return &out.pause_storm_warning;
  if (name == "tx_pause_storm_error_events") return &out.pause_storm_error;
  if (name == "rx_global_pause") return &out.global_pause[kRx];
  if (name == "tx_global_pause") return &out.global_pause[kTx];
  if (name == "rx_global_pause_duration") {
    return &out.global_pause_duration_us[kRx];
  }
  if (name == "tx_global_pause_duration") {
    return &out.global_pause_duration_us[kTx];
  }
  if (name == "rx_pause_ctrl_phy") return &out.pause_ctrl_phy[kRx];
  if (name == "tx_pause_ctrl_phy") return &out.pause_ctrl_phy[kTx];
  // Early mlx5 drivers (kernel 4.4-4.8) named the same PPCNT field this way.
  if (name == "pause_ctrl_rx") return &out.pause_ctrl_phy[kRx];
  if (name == "pause_ctrl_tx") return &out.pause_ctrl_phy[kTx];
  if (name == "rx_discards_phy") return &out.discards_phy[kRx];
  if (name == "tx_discards_phy") return &out.discards_phy[kTx];
  if (name == "rx_out_of_buffer") return &out.rx_out_of_buffer;
  if (name == "rx_buffer_passed_thres_phy") {
    return &out.rx_buffer_passed_thres_phy;
  }
  if (name == "rx_ecn_mark") return &out.rx_ecn_mark;
  if (name == "rx_corrected_bits_phy") return &out.phy_corrected_bits;
  if (name == "rx_pcs_symbol_err_phy") return &out.phy_pcs_symbol_errors;
  if (name == "rx_symbol_err_phy") return &out.phy_symbol_errors;
  if (name == "rx_crc_errors_phy") return &out.phy_crc_errors;
  if (name == "link_down_events_phy") return &out.phy_link_down_events;
  // Early mlx5 drivers' names for the same IEEE 802.3 PPCNT fields
  // (aSymbolErrorDuringCarrier, aFrameCheckSequenceErrors).
  if (name == "symbol_err") return &out.phy_symbol_errors;
  if (name == "check_seq_err") return &out.phy_crc_errors;
  return nullptr;
}

// "rx_err_lane_<l>_phy" with l a single decimal digit below kMaxLanes.
OptU64* LaneField(RoceEthtoolStats& out, std::string_view name) {
  if (!Consume(name, "rx_err_lane_") || name.size() != 5 ||
      !name.ends_with("_phy") || name[0] < '0' ||
      name[0] >= '0' + RoceEthtoolStats::kMaxLanes) {
    return nullptr;
  }
  return &out.phy_lane_errors[name[0] - '0'];
}

// "rx{N}_ecn_mark" with N decimal.
bool IsQueueEcnMark(std::string_view name) {
  if (!Consume(name, "rx") || !name.ends_with("_ecn_mark")) return false;
  name.remove_suffix(sizeof("_ecn_mark") - 1);
  if (name.empty()) return false;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

RoceEthtoolStats ParseEthtoolStats(const std::vector<std::string>& names,
                                   const std::vector<std::uint64_t>& values) {
  RoceEthtoolStats out;
  std::size_t n = std::min(names.size(), values.size());
  OptU64 queue_ecn_sum;
  std::size_t queue_ecn_seen = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view name = names[i];
    if (OptU64* f = PriorityField(out, name)) {
      SetOnce(*f, values[i], out.recognized);
    } else if (OptU64* g = PortField(out, name)) {
      SetOnce(*g, values[i], out.recognized);
    } else if (OptU64* l = LaneField(out, name)) {
      SetOnce(*l, values[i], out.recognized);
    } else if (IsQueueEcnMark(name)) {
      // Unsigned wrap of the sum matches the counters' own modulo-2^64 wrap.
      queue_ecn_sum = queue_ecn_sum.value_or(0) + values[i];
      ++queue_ecn_seen;
    }
  }
  if (!out.rx_ecn_mark && queue_ecn_sum) {
    out.rx_ecn_mark = queue_ecn_sum;
    out.recognized += queue_ecn_seen;
  }
  return out;
}

EthtoolText ParseEthtoolText(std::string_view text) {
  EthtoolText out;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = TrimValue(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty() || line == "NIC statistics:") continue;
    std::size_t colon = line.rfind(':');
    if (colon == std::string_view::npos) {
      ++out.bad_lines;
      continue;
    }
    std::string_view name = TrimValue(line.substr(0, colon));
    std::string_view value = TrimValue(line.substr(colon + 1));
    std::uint64_t v = 0;
    auto [end, ec] =
        std::from_chars(value.data(), value.data() + value.size(), v);
    if (name.empty() || value.empty() || ec != std::errc() ||
        end != value.data() + value.size()) {
      ++out.bad_lines;
      continue;
    }
    out.stats.names.emplace_back(name);
    out.stats.values.push_back(v);
  }
  return out;
}

}  // namespace fabric
