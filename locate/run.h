// fabricmon-locate's fabric half, on any MadTransport: umad behind the MAD
// broker's allow-list (the binary), fabricmon-sim's MAD socket, or the
// in-process simulator (bench/locate_cost.cc, tests). Given the pairs of
// step 1, LocateLinks discovers the fabric, traces the bad pairs and up to
// max_good good ones both ways in one TraceAll (each LFT block read once),
// votes and fills the report but its counters; LocateLink answers --link.
// Prometheus stays in the binary, so these run on synthetic pairs too.
//
// Thread-safety: one call at a time per transport.
#pragma once

#include <string>
#include <vector>

#include "locate/link.h"
#include "locate/pairs.h"
#include "locate/report.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"

namespace fabric::locate {

struct LocateOptions {
  MadOptions mad;
  int top = 10;
  int max_good = 2000;
  int clear_min_good = 1;
};

// What the MADs cost, as the stats line prints it.
struct FabricCost {
  std::uint64_t discovery_mads = 0, switch_info = 0, lft_blocks = 0, failed = 0;
  std::string Text() const;
};

// The report's pair counts (total, bad, good, without a verdict).
void CountVerdicts(const std::vector<ProbePair>& pairs, Report* report);

// Steps 2-3 (CountVerdicts included; no MAD when no mapped pair is bad).
// `report` gets the pair counts, ranked links (names from the topology, no
// counters), cleared links, unplaced bad pairs and the cost; `topology` the
// discovered fabric. Pairs with IP links (RoCE, traced by the probers) vote on
// those beside the IB pairs' cables; `transport` may be null when no mapped
// pair is bad (NeedsFabric), and is then not used.
void LocateLinks(MadTransport* transport, const LocateOptions& options,
                 const std::vector<ProbePair>& pairs, Report* report,
                 mad::Topology* topology, FabricCost* cost);
inline void LocateLinks(MadTransport& transport, const LocateOptions& options,
                        const std::vector<ProbePair>& pairs, Report* report,
                        mad::Topology* topology, FabricCost* cost) {
  LocateLinks(&transport, options, pairs, report, topology, cost);
}
// Whether LocateLinks needs the fabric: a bad pair is mapped to LIDs.
bool NeedsFabric(const std::vector<ProbePair>& pairs);

// --link: the destinations whose LFT entry at `link` is its port, named
// from the topology, with the mapped pairs toward them whose route crosses
// the port. False with *error (unknown switch or port, an unreadable
// table): then nothing is listed.
bool LocateLink(MadTransport& transport, const MadOptions& options,
                const LinkSpec& link, const std::vector<ProbePair>& pairs,
                LinkReport* report, FabricCost* cost, std::string* error);

}  // namespace fabric::locate
