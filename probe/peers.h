// Peer lists for probes and fabricmon-bench: `host:port` entries from the
// config, from a plain peers file (one per line, `#` comments, blank lines)
// or from a Prometheus file_sd JSON file (`[{"targets": ["h:p", ...],
// "labels": {...}}]`, labels ignored). IPv6 literals are bracketed:
// `[::1]:10916`. An entry without a port gets `default_port`.
//
// A file_sd target is a scrape target: its port is the metrics port
// (10915), where no probe responder listens. So every file_sd target's
// port is replaced by `default_port` (the caller's probe port), and the
// peer is named by its host alone, as the same host written without a port
// in a plain list is (issue 39: probes to the metrics port were all lost).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::probe {

inline constexpr std::uint16_t kDefaultProbePort = 10916;

struct Peer {
  // The entry as written (trimmed): the `peer` label.
  std::string name;
  // Host name or IP literal, without brackets.
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const Peer&) const = default;
};

// One `host:port`, `host`, `[v6]:port` or `[v6]`. nullopt with the reason.
std::optional<Peer> ParsePeer(std::string_view text, std::string* error,
                              std::uint16_t default_port = kDefaultProbePort);

// A plain list: one peer per line, text after `#` ignored. Errors name the
// 1-based line. Duplicates (same name) are kept once.
std::optional<std::vector<Peer>> ParsePeerLines(
    std::string_view text, std::string* error,
    std::uint16_t default_port = kDefaultProbePort);

// Prometheus file_sd JSON: every string in every group's "targets", each at
// `default_port` whatever port it names, named by its host (`[v6]`).
std::optional<std::vector<Peer>> ParseFileSd(
    std::string_view text, std::string* error,
    std::uint16_t default_port = kDefaultProbePort);

// A peers file of either kind: file_sd when it opens with '[' and then '{'
// or ']', else lines.
std::optional<std::vector<Peer>> ParsePeersFile(
    std::string_view text, std::string* error,
    std::uint16_t default_port = kDefaultProbePort);

}  // namespace fabric::probe
