// The `probe` collector: active probes between fabricmon daemons (issue 13,
// docs/probes.md). Probes every configured peer on a jittered schedule over
// UDP (an RDMA transport where configured and available), answers the
// probes of others on the same port, and exports
//   fabric_probe_rtt_seconds{peer,transport} (histogram),
//   fabric_probe_network_rtt_seconds{peer,transport} (histogram),
//   fabric_probe_sent_total, fabric_probe_lost_total{peer,transport},
//   fabric_probe_rejected_total{reason}, fabric_probe_answered_total,
//   fabric_probe_peers_over_cap.
// The protocol lives in probe/ (library fabric_probe).
//
// Event-driven: Start(io) loads the key, binds the socket and runs the
// schedule and responder on `io`; Collect() re-reads `peers_file` when it
// changed (or after SIGHUP), resolves peer names, emits the statistics and
// returns whether the socket is bound. Stop() closes it. `interval` is how
// often each peer is probed (1 ms works); statistics are published once a
// second at most (PublishInterval), so a fast schedule does not mean fast
// snapshots.
//
// Thread-safety: the engine's handlers run on the io thread; Collect() on
// the poll thread reads the statistics under the engine's mutex and hands
// new peer lists to the io thread by posting.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "auth/key_file.h"
#include "collectors/collector.h"

namespace fabric {

// A large real mesh: Pingmesh-style peer lists run to a few thousand;
// 2,048 peers are ~200,000 series (docs/probes.md, Bounds).
inline constexpr int kDefaultMaxPeers = 2048;
// The largest `max_peers` accepted.
inline constexpr long long kMaxPeersLimit = 100'000;

// `collectors.probe` keys of its own.
struct ProbeSettings {
  // `transport`: auto (RDMA where both ends allow it, else UDP), rdma, udp.
  std::string transport = "auto";
  // `listen_address`: where the responder listens and probes leave from.
  std::string listen_address = ":10916";
  // `probe_timeout`: a probe with no valid answer after this is lost.
  std::chrono::microseconds probe_timeout = std::chrono::seconds(1);
  // `peers`: host:port entries.
  std::vector<std::string> peers;
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
  // (fabric_probe_peers_over_cap), not probed. Each peer costs ~100 series.
  int max_peers = kDefaultMaxPeers;
  bool operator==(const ProbeSettings&) const = default;
};

std::unique_ptr<Collector> MakeProbeCollector(const CollectorEnv& env,
                                              const CollectorConfig& config);
// The registry row: disabled by default.
CollectorSpec ProbeCollectorSpec();

}  // namespace fabric
