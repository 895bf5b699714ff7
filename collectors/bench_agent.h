// The `bench_agent` collector: lets `fabricmon-bench run --hosts` use this
// daemon as an agent (benchtool/agent.h). Off by default: a benchmark loads
// the fabric, so a host takes part only when its operator enabled it. When
// enabled, the config parser loads and checks `key_file` (the probe key:
// same rules, 0600) and Start(io) opens the TCP listener `listen_address`
// on the daemon's io_context with that key;
// disabled means no listener at all. Collect() exports
//   fabric_bench_agent_listening (gauge 0/1),
//   fabric_bench_agent_sessions_total,
//   fabric_bench_agent_refused_total{reason} (malformed, version, bad_mac,
//     replay, busy),
//   fabric_bench_agent_transmit_bytes_total / _receive_bytes_total
//     (benchmark payload moved by this agent),
// and returns whether the listener is open (retrying it, and the key, on the
// io thread when not). The agent reads this host's fabric counters around
// each iteration through the daemon's sysfs (env.sysfs).
//
// Thread-safety: Start/Stop and the retry run on the io thread; Collect()
// reads the agent's counters (which lock) and the agent pointer under mu_.
#pragma once

#include <memory>
#include <string>

#include "auth/key_file.h"
#include "collectors/collector.h"

namespace fabric {

struct BenchAgentSettings {
  // TCP host:port; ":10916" = every address (the probe port, docs/probes.md).
  std::string listen_address = ":10916";
  // Required when enabled: the shared key (auth/key_file.h).
  std::string key_file;
  // Its key, read and checked once, when the config is parsed.
  Key key;
  bool operator==(const BenchAgentSettings&) const = default;
};

std::unique_ptr<Collector> MakeBenchAgentCollector(
    const CollectorEnv& env, const CollectorConfig& config);
// The registry row: disabled by default.
CollectorSpec BenchAgentCollectorSpec();

}  // namespace fabric
