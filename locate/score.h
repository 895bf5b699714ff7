// fabricmon-locate's judgement, as pure functions: which probe pairs are
// bad (Classify) and which links their paths blame (ScoreLinks), the way
// 007 (NSDI'18) votes: each bad pair spreads one vote evenly over the links
// of its path (1/len each), so a link that many bad pairs share rises above
// the links each of them crosses alone; a link that carries enough good
// pairs and no bad one is cleared (listed, not ranked), which tells the
// reader how much of the fabric the good pairs vouched for.
//
// Nothing here knows Prometheus or MADs: the inputs are numbers and paths
// (lists of cables), so the tests build them by hand.
//
// Thread-safety: pure functions on values.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fabric::locate {

// What the window says about one probe pair (prober -> peer).
struct PairMeasure {
  double sent = 0;  // probes sent in the window
  double lost = 0;  // of those, lost
  // Median network RTT in the window, and the pair's usual one (its own
  // history, else the fabric's median pair); nullopt when unknown.
  std::optional<double> rtt_seconds;
  std::optional<double> baseline_seconds;
};

struct Thresholds {
  // Bad when lost / sent exceeds this.
  double loss_ratio = 0.01;
  // Bad when the RTT exceeds the baseline by more than
  // max(rtt_excess_floor_seconds, rtt_excess_ratio * baseline).
  double rtt_excess_ratio = 1.0;
  double rtt_excess_floor_seconds = 50e-6;
  // Fewer probes than this in the window: no verdict (kUnknown).
  double min_probes = 10;
};

enum class Verdict { kUnknown, kGood, kBad };

struct Classification {
  Verdict verdict = Verdict::kUnknown;
  std::string reason;  // "loss 0.12 > 0.01", "rtt +310us > 50us", ...
};

Classification Classify(const PairMeasure& m, const Thresholds& t);

// One cable: the two ends (node GUID, port), the smaller end first, so that
// a path traced A->B and one traced B->A name the same link. An IP-level
// link (a RoCE path traced hop by hop, issue 29 item 4) has ends named by
// address instead (guid and port 0), in the direction crossed: each hop
// names the interface a packet arrived by, so the two directions of one
// cable are two links.
struct LinkEnd {
  std::uint64_t guid = 0;
  int port = 0;
  std::string ip;  // IP-level links only
  auto operator<=>(const LinkEnd&) const = default;
};
struct Link {
  LinkEnd a, b;
  auto operator<=>(const Link&) const = default;
};
// The link between two ends, ordered.
Link MakeLink(LinkEnd x, LinkEnd y);
// The IP-level links of a traced path: consecutive addresses of `path`
// (the prober's address first, the routers', the peer's last), directed.
std::vector<Link> IpLinks(const std::vector<std::string>& path);

struct PathObservation {
  Verdict verdict = Verdict::kUnknown;  // kUnknown paths are ignored
  std::vector<Link> links;              // a link twice counts once
  // The hosts of the pair (prober, peer; locate/jobs.h), bad pairs only:
  // whose jobs a link they cross hurts.
  std::vector<std::string> hosts;
};

struct ScoreOptions {
  // A link with no bad pair and at least this many good ones is cleared.
  int clear_min_good = 1;
};

struct LinkScore {
  Link link;
  double votes = 0;             // sum over bad pairs of 1 / (links on its path)
  int bad_pairs = 0;            // bad paths crossing the link
  int good_pairs = 0;           // good paths crossing the link
  std::set<std::string> hosts;  // of the bad paths crossing it
};

struct Scores {
  // Links with votes, most first; ties: fewer good pairs first (a good pair
  // over a link is evidence against it), then the link's ends.
  std::vector<LinkScore> ranked;
  std::vector<LinkScore> cleared;  // no bad pair, >= clear_min_good good
  int bad_paths = 0, good_paths = 0;
};

Scores ScoreLinks(const std::vector<PathObservation>& paths,
                  const ScoreOptions& options = {});

}  // namespace fabric::locate
