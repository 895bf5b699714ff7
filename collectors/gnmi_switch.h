// gnmi collector (off by default; on the few nodes that run the fabric
// sweep): Ethernet switches (Spectrum-X under Cumulus Linux, SONiC) over
// gNMI, out of band. Per configured switch of its shard, one Subscribe RPC
// (STREAM, SAMPLE every `sample_interval`) on a thread of its own, over TLS
// (CA, optional client certificate) or, for tests, plaintext, with
// username/password metadata when set. Notifications are turned into
// fabric_switch_port_* series (collectors/gnmi_parse.h; names as the IB
// sweep's where the meaning is the same, plus per-queue/priority ECN, PFC,
// buffer and drop series) and LLDP neighbours into
// fabric_switch_port_link_info.
//
// A switch that does not answer costs its own series only: a stream that
// fails, ends, or brings no message for `deadline` is cancelled, the
// switch's port series are dropped (absent is not zero), fabric_gnmi_switch_up
// {switch} goes to 0 with one log line per failure streak, and the thread
// reconnects with exponential back-off (1 s doubling to `max_backoff`).
// Collect() only copies what the streams delivered; it never waits on a
// switch, so a dead switch never stalls a collection.
//
// Thread-safety: the per-switch threads and the watchdog write the state
// under mu_; Collect() reads it under mu_. Start/Stop on the io thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/gnmi_client.h"

namespace fabric {

struct GnmiSwitchTarget {
  std::string name;     // the `switch` label
  std::string address;  // host:port of its gNMI server
  // `paths: sonic`: SONiC's COUNTERS_DB tables instead of OpenConfig
  // (docs/gnmi.md: port counters and PFC only).
  bool sonic_counters_db = false;
  bool operator==(const GnmiSwitchTarget&) const = default;
};

struct GnmiSettings {
  std::vector<GnmiSwitchTarget> switches;
  // TLS unless `insecure` (plaintext: tests, a lab). Paths as resolved at
  // config load (`credential:NAME` allowed); "" = none (system roots, no
  // client certificate).
  bool insecure = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string tls_server_name;  // "" = the address' host
  std::string username;
  std::string password_file;
  // 5 s: as the host counters' poll (config/collector_config.h,
  // kCounterPollInterval): divides the usual scrape intervals; 1 s buys
  // fresher values at 5x the switch's streaming work and ours.
  std::chrono::microseconds sample_interval = std::chrono::seconds(5);
  // No message for this long: the stream is dead (3 samples missed).
  std::chrono::microseconds deadline = std::chrono::seconds(15);
  std::chrono::microseconds max_backoff = std::chrono::seconds(60);
  int shard_index = 1;  // "i/n": this node watches the switches whose name
  int shard_count = 1;  // hashes to i of n
  bool operator==(const GnmiSettings&) const = default;
};

// Whether switch `name` belongs to shard index/count (FNV-1a of the name).
bool GnmiShardContains(const std::string& name, int index, int count);

// `calls`: how a Subscribe stream is made (null: gRPC; a fake in tests).
std::unique_ptr<Collector> MakeGnmiSwitchCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    gnmi_switch::SubscribeCallFactory calls = nullptr);
CollectorSpec GnmiSwitchCollectorSpec();

}  // namespace fabric
