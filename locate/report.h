// fabricmon-locate's output: the ranked links for a person (a table) and
// for tools (--json), with the pairs that could not be placed on a path
// listed, never dropped. Pure formatting of a Report the binary filled.
//
// Thread-safety: pure functions on values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "locate/counters.h"
#include "locate/jobs.h"
#include "locate/pairs.h"
#include "locate/score.h"

namespace fabric::locate {

struct RankedLink {
  LinkScore score;
  std::string a_name, b_name;  // node descriptions ("" if unknown)
  PortCounters a_counters, b_counters;
  // The jobs on the hosts of the bad pairs crossing it (locate/jobs.h),
  // filled by the binary from Prometheus; empty when none is known.
  std::vector<Job> jobs;
};

struct UnplacedPair {
  std::string prober, peer, verdict_reason, why;
};

struct Report {
  std::string window;
  int pairs = 0, bad = 0, good = 0, unknown = 0;
  int bad_traced = 0, good_traced = 0;
  std::vector<RankedLink> ranked;      // the top links, best first
  int cleared = 0;                     // links the good pairs cleared
  std::vector<UnplacedPair> unplaced;  // bad pairs with no path
  std::string trace_stats;             // "discovery_mads N lft_blocks N ..."
};

std::string FormatTable(const Report& report);
std::string FormatJson(const Report& report);

}  // namespace fabric::locate
