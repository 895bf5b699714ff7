#include "collectors/fabric_class_rules.h"

#include <array>
#include <charconv>
#include <cstdint>

#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// "xxxx:xxxx:...:xxxx" (8 groups of 4 hex digits, sysfs gids/<n>).
std::optional<std::array<std::uint16_t, 8>> ParseGid(std::string_view text) {
  text = TrimValue(text);
  if (text.size() != 39) return std::nullopt;
  std::array<std::uint16_t, 8> groups{};
  for (int i = 0; i < 8; ++i) {
    std::string_view g = text.substr(i * 5, 4);
    if (i < 7 && text[i * 5 + 4] != ':') return std::nullopt;
    auto [end, ec] = std::from_chars(g.data(), g.data() + 4, groups[i], 16);
    if (ec != std::errc() || end != g.data() + 4) return std::nullopt;
  }
  return groups;
}

}  // namespace

bool IsSuperNicClass(std::string_view model) {
  return model == "BlueField-3" || model == "BlueField-4" ||
         model == "ConnectX-8";
}

std::string_view CcLabel(CcState cc) {
  switch (cc) {
    case CcState::kOn:
      return "on";
    case CcState::kOff:
      return "off";
    case CcState::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<RailClass> ClassifyRail(const RailFacts& f) {
  // Rule 1: the port's link layer. IB needs no more: every IB port is on
  // an InfiniBand subnet whatever the HCA.
  if (f.link_layer == "InfiniBand") {
    return RailClass{"infiniband", "link_layer_infiniband"};
  }
  if (f.link_layer != "Ethernet") return std::nullopt;
  // Rule 2: Spectrum-X's congestion control and adaptive routing need a
  // SuperNIC-class endpoint; anything else is plain RoCE whatever its
  // configuration.
  if (f.model.empty()) return RailClass{"roce", "nic_unknown"};
  if (!IsSuperNicClass(f.model)) return RailClass{"roce", "nic_not_supernic"};
  // Rule 3: the firmware's RoCE acceleration (adaptive retransmission,
  // tolerating the out-of-order arrival adaptive routing causes).
  if (!f.adaptive_retransmission) {
    return RailClass{"roce", "no_adaptive_retransmission"};
  }
  // Rule 4: congestion control on the lossless priority. Not visible (no
  // ecn/ tree: upstream driver, recorded tree) is not proof: plain RoCE.
  if (f.cc == CcState::kOff) return RailClass{"roce", "cc_off"};
  if (f.cc == CcState::kUnknown) return RailClass{"roce", "cc_not_visible"};
  return RailClass{"roce_spectrum_x", "supernic_cc_adaptive_retransmission"};
}

std::optional<std::string> IbSubnetPrefix(std::string_view gid) {
  if (!ParseGid(gid)) return std::nullopt;
  return std::string(TrimValue(gid).substr(0, 19));
}

std::optional<std::string> RoceNetwork(std::string_view gid,
                                       int ipv4_prefix_length) {
  auto g = ParseGid(gid);
  if (!g) return std::nullopt;
  const auto& w = *g;
  if (w == std::array<std::uint16_t, 8>{}) return std::nullopt;
  const bool v4 = w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == 0 &&
                  w[4] == 0 && w[5] == 0xffff;
  if (!v4) return std::string(TrimValue(gid).substr(0, 19)) + "::/64";
  std::uint32_t addr = (std::uint32_t{w[6]} << 16) | w[7];
  const int len = ipv4_prefix_length;
  const std::uint32_t mask =
      len <= 0 ? 0 : (len >= 32 ? ~0u : ~((1u << (32 - len)) - 1));
  addr &= mask;
  return std::to_string(addr >> 24) + "." + std::to_string((addr >> 16) & 255) +
         "." + std::to_string((addr >> 8) & 255) + "." +
         std::to_string(addr & 255) + "/" + std::to_string(len);
}

}  // namespace fabric
