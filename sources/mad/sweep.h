// The fabric-wide switch sweep: for every switch of this shard, PortInfo
// of every port (directed route, so a link that went down shows at once)
// and PortCounters + PortCountersExtended of every port except 0 (PerfMgt
// at the switch's LID), all in flight together through the MadTransport
// engine. Only Get MADs: counters are never cleared.
//
// Shards: a switch belongs to shard i of n by a hash of its GUID, so
// shards 1/n..n/n together cover every switch exactly once.
//
// Thread-safety: pure functions of the transport's answers; one Sweep() at
// a time per transport.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad {

struct Shard {
  int index = 1;  // 1-based
  int count = 1;
  bool Contains(std::uint64_t switch_guid) const;
  bool operator==(const Shard&) const = default;
};

// "i/n" with 1 <= i <= n; nullopt otherwise.
std::optional<Shard> ParseShard(const std::string& text);

struct SwitchPortSample {
  int num = 0;
  std::optional<PortInfo> info;  // absent when PortInfo got no answer
  std::optional<PortCounters> counters;
  std::optional<PortCountersExtended> extended;
};

struct SwitchSample {
  std::uint64_t guid = 0;
  std::uint16_t lid = 0;
  std::string description;
  std::vector<SwitchPortSample> ports;  // 1..N
  bool reachable = false;               // at least one answer this sweep
};

struct SweepResult {
  std::vector<SwitchSample> switches;
  int unreachable = 0;              // switches that answered nothing
  std::vector<std::string> errors;  // malformed / non-zero status (first few)
  MadStats stats;
};

// The switches of `topology` in `shard`, swept once.
SweepResult Sweep(MadTransport& transport, const Topology& topology,
                  const Shard& shard, const MadOptions& options);

}  // namespace fabric::mad
