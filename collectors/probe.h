// The `probe` collector: active probes between fabricmon daemons (issue 13,
// docs/probes.md). Probes every configured peer on a jittered schedule over
// UDP (an RDMA transport where configured and available), answers the
// probes of others on the same port, and exports
//   fabric_probe_rtt_seconds{peer,transport} (summary: sum and count; a
//     histogram with per_peer_histograms),
//   fabric_probe_network_rtt_seconds{peer,transport} (the same),
//   fabric_probe_rtt_max_seconds{peer,transport} (the last minute's max),
//   fabric_probe_port_rtt_seconds{transport} (histogram over all peers),
//   fabric_probe_sent_total, fabric_probe_lost_total{peer,transport},
//   fabric_probe_rejected_total{reason}, fabric_probe_answered_total,
//   fabric_probe_peers_over_cap.
// The protocol lives in probe/ (library fabric_probe).
//
// Per rail (`rails`, issue 29): one engine, socket and peer list per rail,
// each series labelled with its rail; without `rails`, one engine of the
// top-level `listen_address` and peers, unlabelled. A rail may be named by
// its RDMA `device` and `port` instead of (or as well as) its address: each
// collection finds that port's netdev and address again
// (sources/netdev_address.h) and, when the address changed (DHCP, a renamed
// netdev), closes the rail's socket and binds it to the new one.
//
// Path traces (issue 29 item 4, probe/path_trace.h): every
// `trace_interval` each rail traces its peers' probe flows on its own
// socket, one peer at a time, and exports fabric_probe_path_info{peer,
// src,dst,path,hops} for each peer behind a router, plus
// fabric_probe_path_trace_failures_total.
//
// Event-driven: Start(io) loads the key, binds the socket and runs the
// schedule and responder on `io`; Collect() re-reads `peers_file` when it
// changed (or after SIGHUP), resolves peer names, emits the statistics and
// returns whether the socket is bound. Stop() closes it. `interval` is how
// often each peer is probed (1 ms works); statistics are published once a
// second at most (PublishInterval), so a fast schedule does not mean fast
// snapshots.
//
// Thread-safety: the engines' handlers run on the io thread; Collect() on
// the poll thread reads the statistics under each engine's mutex and hands
// new peer lists to the io thread by posting.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/key_file.h"
#include "collectors/collector.h"
#include "probe/peers.h"
#include "probe/transport.h"
#include "sources/netdev_address.h"

namespace fabric {

// A large real mesh: Pingmesh-style peer lists run to a few thousand;
// 2,048 peers are ~16,000 series (~200,000 with per_peer_histograms;
// docs/probes.md, Bounds).
inline constexpr int kDefaultMaxPeers = 2048;
// The largest `max_peers` accepted.
inline constexpr long long kMaxPeersLimit = 100'000;

// The probe port when none is given.
inline constexpr int kDefaultProbePort = 10916;

// `:10916`: every address, IPv6 and IPv4 (probe/udp_transport.h).
inline probe::Endpoint DefaultListenAddress() {
  return probe::Endpoint(boost::asio::ip::address_v6::any(), kDefaultProbePort);
}

// One rail (`collectors.probe.rails[]`, issue 29): a local port or
// address with its own responder and its own peers. Its series carry
// `rail="<name>"`.
// Addresses and peers are parsed once, when the config is (issue 41 item
// 4): the collector uses them as typed here and parses no text again.
struct ProbeRail {
  std::string name;
  // `listen_address`; nullopt when `device` is set without it: the address
  // is the port's.
  std::optional<probe::Endpoint> listen_address = DefaultListenAddress();
  // `device` / `port`: the RDMA port whose netdev address the rail binds
  // (empty / 0: the rail is its `listen_address`).
  std::string device;
  int port = 0;
  // `listen_port`: the UDP port of a `device` rail without listen_address.
  int listen_port = kDefaultProbePort;
  // `peers`; an entry without a port has the rail's ProbePort().
  std::vector<probe::Peer> peers;
  std::string peers_file;
  bool operator==(const ProbeRail&) const = default;
};

// The UDP port `rail` listens on: its listen_address's, else listen_port.
// Peers without a port, and every file_sd target, are probed there.
int ProbePort(const ProbeRail& rail);

// `collectors.probe` keys of its own.
struct ProbeSettings {
  // `transport`: auto (RDMA where both ends allow it, else UDP), rdma, udp.
  std::string transport = "auto";
  // `listen_address`: where the responder listens and probes leave from.
  probe::Endpoint listen_address = DefaultListenAddress();
  // `probe_timeout`: a probe with no valid answer after this is lost.
  std::chrono::microseconds probe_timeout = std::chrono::seconds(1);
  // `peers`: host:port entries (without a port: listen_address's).
  std::vector<probe::Peer> peers;
  // `peers_file`: one peer per line, or Prometheus file_sd JSON.
  std::string peers_file;
  // `key_file`: the shared key (auth/key_file.h); required when enabled.
  std::string key_file;
  // Its key, read and checked once, when the config is parsed (so a
  // rotated key file and a SIGHUP restart the responder with the new key).
  Key key;
  // `rate_limit`: answers per second per source address.
  double rate_limit = 2000;
  // `max_peers`: peers probed at most (those of `peers` first, then the
  // file's in its order); the rest are counted
  // (fabric_probe_peers_over_cap), not probed. Each peer costs at most 8
  // series (~100 with per_peer_histograms).
  int max_peers = kDefaultMaxPeers;
  // `per_peer_histograms`: full RTT and network-RTT histograms per peer
  // (~100 series each) instead of their sum and count (docs/probes.md).
  bool per_peer_histograms = false;
  // `rails`: one responder and peer list per rail. Empty: one rail of
  // `listen_address`, `peers` and `peers_file`, without a `rail` label
  // (the configuration before rails).
  std::vector<ProbeRail> rails;
  // `trace_interval`: how often each IP peer's probe flow is path-traced
  // (probe/path_trace.h; fabric_probe_path_info). 0: never.
  std::chrono::microseconds trace_interval = std::chrono::minutes(5);
  bool operator==(const ProbeSettings&) const = default;
};

// The rails `settings` probe on: `rails`, or the one unnamed rail of the
// top-level keys.
std::vector<ProbeRail> RailsOf(const ProbeSettings& settings);

std::unique_ptr<Collector> MakeProbeCollector(const CollectorEnv& env,
                                              const CollectorConfig& config);
// The same with the interface addresses `device` rails are looked up in
// (tests; the one above uses SystemInterfaceAddresses).
std::unique_ptr<Collector> MakeProbeCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    InterfaceAddressLister list_addresses);
// The registry row: disabled by default.
CollectorSpec ProbeCollectorSpec();

}  // namespace fabric
