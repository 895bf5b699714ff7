// A netdev's link speed against what it and its link partner can do
// (issue 28: a RoCE link running below what both ends support), from ethtool
// link settings: the active speed, and the link modes the NIC supports, the
// ones it advertises and the ones its link partner advertised (auto-
// negotiation). Link modes are kept by the names the kernel gives them
// ("100000baseCR4/Full", the ETH_SS_LINK_MODES strings `ethtool` prints), and
// a mode's speed is read from its name, so a kernel newer than this build
// (800G modes) needs no table here.
//
// Two sources produce it (sources/ethtool_source.h EthtoolSource::Link): the
// ETHTOOL_GLINKSETTINGS ioctl (sources/ethtool_ioctl.h) and, for recorded
// or simulated trees, the text `ethtool <netdev>` prints
// (ParseEthtoolLinkText; sources/ethtool_file.h reads `<dir>/<netdev>.link`).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fabric {

struct EthtoolLink {
  // Active speed in Mb/s; nullopt when the kernel says unknown (link down,
  // or a driver that does not know).
  std::optional<std::uint64_t> speed_mbps;
  std::vector<std::string> supported;   // link mode names
  std::vector<std::string> advertised;  // what this end offers
  std::vector<std::string> partner;     // what the link partner offered
};

// The speed in Mb/s a link mode name stands for ("25000baseCR/Full" ->
// 25000); nullopt for names that are not a speed (Autoneg, TP, Pause,
// FEC_RS, ...).
std::optional<std::uint64_t> LinkModeSpeedMbps(std::string_view name);

// The fastest of `modes`; nullopt when none names a speed.
std::optional<std::uint64_t> FastestMbps(const std::vector<std::string>& modes);

// The fastest this end can run at: its advertised modes (what it has
// enabled), or, with auto-negotiation off (nothing advertised), its
// supported ones.
std::optional<std::uint64_t> CapableMbps(const EthtoolLink& link);

// The names of the bits set in `words` (the kernel's u32 mask words, bit i
// of the mask = bit i%32 of word i/32), looked up in `names` (the kernel's
// ETH_SS_LINK_MODES strings); bits past the table are left out.
std::vector<std::string> LinkModeNames(std::span<const std::uint32_t> words,
                                       const std::vector<std::string>& names);

// Parses what `ethtool <netdev>` prints: "Supported link modes:",
// "Advertised link modes:", "Link partner advertised link modes:" (each
// continuing on indented lines; "Not reported" = none) and "Speed:
// 100000Mb/s" ("Unknown!" = none). Lines it does not know are ignored; a
// text with none of these is not a link settings dump (nullopt).
std::optional<EthtoolLink> ParseEthtoolLinkText(std::string_view text);

}  // namespace fabric
