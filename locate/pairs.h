// fabricmon-locate's step 1: the probe pairs of a window, joined from
// Prometheus answers (loss, network RTT, the pair's usual RTT) to the
// fabric ports fabric_probe_pair_info names, each with a verdict. The
// queries are strings built here; the join is a pure function of their
// answers, so hostile or partial answers are unit-tested.
//
// A pair is the prober (every label of its series but __name__,
// transport, le, the local_/remote_ port labels and the path labels:
// instance, job, ...) and its peer. Pairs whose ports give no LID (RoCE, a
// side that is not a fabric port, no pair info, ports that changed within
// the window) are kept, unmapped, with the reason; those with a traced IP
// path (fabric_probe_path_info, one in the window) get its links, and the
// peer's own trace back to the prober's address when it has one (answers
// take that flow's path). Pairs with neither are listed by the report.
//
// Thread-safety: pure functions on values; a PairJoin is used by one
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "locate/prometheus.h"
#include "locate/score.h"

namespace fabric::locate {

struct PairQueries {
  std::string sent, lost, rtt, baseline, info, path;
};
// `window` and `baseline` are PromQL durations ("30m", "1d").
PairQueries MakePairQueries(const std::string& window,
                            const std::string& baseline);

struct PairAnswers {
  std::vector<PromSample> sent, lost, rtt, baseline, info, path;
};

struct ProbePair {
  std::string prober;  // the prober's identifying labels, "k=v,..."
  std::string peer;
  bool mapped = false;
  std::string unmapped_reason;
  std::uint16_t src_lid = 0, dst_lid = 0;  // when mapped
  // Not mapped but IP-routed: the IP-level links of its traced path, and of
  // the peer's path back when known (IpLinks); empty otherwise.
  std::vector<Link> ip_links;
  PairMeasure measure;
  Classification verdict;
};

// One entry per pair seen in `sent`, ordered by (prober, peer). Baselines:
// the pair's own when the answer has it, else the median of the window's
// RTTs over all pairs (a hotspot stands out from the rest of the fabric).
std::vector<ProbePair> JoinPairs(const PairAnswers& answers,
                                 const Thresholds& thresholds);

// The same join, fed one answer at a time, so that the caller holds one
// answer's samples (a label map per series) at a time and, across answers,
// only one row per pair (docs/locate.md, "Memory": at 250,000 pairs this
// is what keeps the peak near one answer's size instead of five).
// JoinPairs is Add of each answer, then Join.
class PairJoin {
 public:
  enum class Answer { kSent, kLost, kRtt, kBaseline, kInfo, kPath };
  void Add(Answer which, const std::vector<PromSample>& samples);
  bool HasSent() const { return has_sent_; }
  std::vector<ProbePair> Join(const Thresholds& thresholds) const;

 private:
  struct Row {
    bool in_sent = false;
    double sent = 0, lost = 0;
    std::optional<double> rtt, baseline;
    // The distinct (local LID, remote LID) the pair was seen with.
    std::set<std::pair<std::string, std::string>> ports;
  };
  std::map<std::pair<std::string, std::string>, Row> rows_;
  std::vector<PromSample> path_;  // routed pairs' traces only: few
  bool has_sent_ = false;
};

}  // namespace fabric::locate
