// fabricmon-locate's step 4: the switch-port counters of the top links
// over the same window, from the series the fabric sweep exports
// (docs/metrics.md ## fabric): errors by kind, transmit wait, FEC
// corrected symbols (the BER's numerator, where PESC is read). Queries are
// built here and their answers joined per (switch GUID, port); a series
// that is absent (no sweep of that switch, no PESC) is simply not shown.
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "locate/prometheus.h"
#include "locate/score.h"

namespace fabric::locate {

// counter name -> increase over the window.
using PortCounters = std::map<std::string, double>;

struct CounterQuery {
  std::string promql;
  std::string name;  // the counter it fills; "" = by the `error` label
};

// Queries for the ports of `guids` (switch node GUIDs), "" window.
std::vector<CounterQuery> MakeCounterQueries(
    const std::string& window, const std::vector<std::uint64_t>& guids);

// Adds one query's answer to `out`; samples with a bad switch_guid or port
// are skipped.
void JoinCounters(const CounterQuery& query,
                  const std::vector<PromSample>& samples,
                  std::map<LinkEnd, PortCounters>* out);

std::string GuidText(std::uint64_t guid);  // "0x" + 16 hex digits

}  // namespace fabric::locate
