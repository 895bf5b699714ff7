#include "benchtool/patterns.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace fabric::bench {
namespace {

struct Named {
  Pattern p;
  const char* name;
};
constexpr Named kNames[] = {
    {Pattern::kAllreduceRing, "allreduce-ring"},
    {Pattern::kAllgatherRing, "allgather-ring"},
    {Pattern::kReducescatterRing, "reducescatter-ring"},
    {Pattern::kAlltoall, "alltoall"},
    {Pattern::kSendrecvPairs, "sendrecv-pairs"},
    {Pattern::kTpDp, "tp-dp"},
};

int Mod(int a, int n) { return ((a % n) + n) % n; }

// A ring over `members` (global ranks) in which `me` is at position `pos`.
struct Ring {
  std::vector<int> members;
  int pos = 0;
  int n() const { return static_cast<int>(members.size()); }
  int right() const { return members[Mod(pos + 1, n())]; }
  int left() const { return members[Mod(pos - 1, n())]; }
};

Op ChunkOp(int peer, std::size_t size, int chunk, int n, std::size_t base) {
  std::size_t b = ChunkBegin(size, chunk, n);
  std::size_t e = ChunkBegin(size, chunk + 1, n);
  return Op{peer, base + b, e - b};
}

// Reduce-scatter over the ring: after it, position p holds the sum of
// chunk p+1 (mod n).
void ReduceScatter(const Ring& r, std::size_t size, std::vector<Step>* out) {
  int n = r.n();
  for (int k = 0; k < n - 1; ++k) {
    Step s;
    s.sends.push_back(ChunkOp(r.right(), size, Mod(r.pos - k, n), n, 0));
    Op in = ChunkOp(r.left(), size, Mod(r.pos - k - 1, n), n, size);
    s.recvs.push_back(in);
    s.reduce.push_back({in.offset - size, in.offset, in.length});
    out->push_back(std::move(s));
  }
}

// All-gather over the ring, starting from position p holding chunk
// p + shift (mod n).
void AllGather(const Ring& r, std::size_t size, int shift,
               std::vector<Step>* out) {
  int n = r.n();
  for (int k = 0; k < n - 1; ++k) {
    Step s;
    s.sends.push_back(
        ChunkOp(r.right(), size, Mod(r.pos + shift - k, n), n, 0));
    s.recvs.push_back(
        ChunkOp(r.left(), size, Mod(r.pos + shift - k - 1, n), n, 0));
    out->push_back(std::move(s));
  }
}

Ring WholeRing(int rank, int ranks) {
  Ring r;
  for (int i = 0; i < ranks; ++i) r.members.push_back(i);
  r.pos = rank;
  return r;
}

// tp-dp: the tensor-parallel group (consecutive ranks) and the data-parallel
// group (same position in every tensor-parallel group).
Ring TpRing(int rank, int ranks, int tp) {
  (void)ranks;
  Ring r;
  int first = rank / tp * tp;
  for (int i = 0; i < tp; ++i) r.members.push_back(first + i);
  r.pos = rank - first;
  return r;
}
Ring DpRing(int rank, int ranks, int tp) {
  Ring r;
  for (int g = 0; g < ranks / tp; ++g) r.members.push_back(g * tp + rank % tp);
  r.pos = rank / tp;
  return r;
}

void AllReduce(const Ring& r, std::size_t size, std::vector<Step>* out) {
  if (r.n() < 2) return;
  ReduceScatter(r, size, out);
  AllGather(r, size, 1, out);
}

// Part j of m of an op's bytes, cut where ChunkBegin cuts (multiples of 4).
Op SliceOf(const Op& o, int j, int m) {
  std::size_t b = ChunkBegin(o.length, j, m);
  return Op{o.peer, o.offset + b, ChunkBegin(o.length, j + 1, m) - b};
}

// Appends a ring's steps (one send, one receive, at most one reduce of the
// received bytes each), every step cut into m sub-steps of one slice when
// `slice` > 0. m depends on size and the ring's n only, so every rank of
// the ring cuts the same slices.
void AppendRing(const std::vector<Step>& ring, int n, std::size_t size,
                std::size_t slice, std::vector<Step>* out) {
  std::size_t chunk = size / static_cast<std::size_t>(n);
  int m = slice == 0 ? 1
                     : static_cast<int>(std::clamp<std::size_t>(
                           (chunk + slice - 1) / slice, 1, 64));
  for (const Step& s : ring) {
    for (int j = 0; j < m; ++j) {
      Step sub;
      sub.sends.push_back(SliceOf(s.sends[0], j, m));
      Op in = SliceOf(s.recvs[0], j, m);
      sub.recvs.push_back(in);
      for (const Reduce& r : s.reduce) {
        sub.reduce.push_back(
            {r.dst + (in.offset - r.src), in.offset, in.length});
      }
      out->push_back(std::move(sub));
    }
  }
}

}  // namespace

std::optional<Pattern> ParsePattern(std::string_view name) {
  for (const auto& n : kNames) {
    if (name == n.name) return n.p;
  }
  return std::nullopt;
}

std::string_view PatternName(Pattern p) {
  for (const auto& n : kNames) {
    if (n.p == p) return n.name;
  }
  return "unknown";
}

const std::vector<std::string>& PatternNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& n : kNames) v.push_back(n.name);
    return v;
  }();
  return names;
}

std::optional<std::string> CheckShape(Pattern p, int ranks, int tp) {
  if (ranks < 2) return "a pattern needs at least 2 hosts";
  if (p == Pattern::kSendrecvPairs && ranks % 2 != 0) {
    return "sendrecv-pairs needs an even number of hosts";
  }
  if (p == Pattern::kTpDp && (tp < 2 || ranks % tp != 0 || ranks / tp < 2)) {
    return "tp-dp needs --tp >= 2 dividing the host count into >= 2 groups";
  }
  return std::nullopt;
}

double BusBwFactor(Pattern p, int n, int tp) {
  switch (p) {
    case Pattern::kAllreduceRing:
      return 2.0 * (n - 1) / n;
    case Pattern::kAllgatherRing:
    case Pattern::kReducescatterRing:
    case Pattern::kAlltoall:
      return static_cast<double>(n - 1) / n;
    case Pattern::kSendrecvPairs:
      return 1.0;
    case Pattern::kTpDp: {
      int g = n / tp;
      return 2.0 * (tp - 1) / tp + 2.0 * (g - 1) / g;
    }
  }
  return 1.0;
}

std::size_t RegionBytes(std::size_t size) { return 2 * size; }

std::size_t ChunkBegin(std::size_t size, int i, int n) {
  if (i >= n) return size;
  // size * i / n without overflow for sizes up to 2^54 and n <= 4096.
  std::size_t b = static_cast<std::size_t>(
      static_cast<unsigned __int128>(size) * static_cast<unsigned>(i) /
      static_cast<unsigned>(n));
  return b / 4 * 4;
}

std::vector<Step> Plan(Pattern p, int rank, int ranks, int tp, std::size_t size,
                       std::size_t slice) {
  std::vector<Step> steps, ring;
  switch (p) {
    case Pattern::kAllreduceRing:
      AllReduce(WholeRing(rank, ranks), size, &ring);
      AppendRing(ring, ranks, size, slice, &steps);
      break;
    case Pattern::kAllgatherRing:
      // Rank r's contribution is chunk r of the output buffer.
      AllGather(WholeRing(rank, ranks), size, 0, &ring);
      AppendRing(ring, ranks, size, slice, &steps);
      break;
    case Pattern::kReducescatterRing:
      ReduceScatter(WholeRing(rank, ranks), size, &ring);
      AppendRing(ring, ranks, size, slice, &steps);
      break;
    case Pattern::kAlltoall: {
      // Blocks are indexed by distance j (rank + j receives block j, and
      // the block from rank - j lands in scratch block j), not by rank: both
      // ends of every message then name the same chunk, whose length
      // ChunkBegin fixes, even when n does not divide the size and chunks
      // differ (by rank index, the sender's chunk `to` and the receiver's
      // chunk `from` could differ in length).
      Step s;
      for (int j = 1; j < ranks; ++j) {
        int to = Mod(rank + j, ranks), from = Mod(rank - j, ranks);
        s.sends.push_back(ChunkOp(to, size, j, ranks, 0));
        s.recvs.push_back(ChunkOp(from, size, j, ranks, size));
      }
      steps.push_back(std::move(s));
      break;
    }
    case Pattern::kSendrecvPairs: {
      Step s;
      s.sends.push_back(Op{rank ^ 1, 0, size});
      s.recvs.push_back(Op{rank ^ 1, size, size});
      steps.push_back(std::move(s));
      break;
    }
    case Pattern::kTpDp:
      AllReduce(TpRing(rank, ranks, tp), size, &ring);
      AppendRing(ring, tp, size, slice, &steps);
      ring.clear();
      AllReduce(DpRing(rank, ranks, tp), size, &ring);
      AppendRing(ring, ranks / tp, size, slice, &steps);
      break;
  }
  return steps;
}

Links LinksOf(Pattern p, int rank, int ranks, int tp) {
  Links l;
  // Small sizes still give every chunk a step, so plan one with a chunk
  // of 4 bytes per rank and collect the peers.
  for (const Step& s : Plan(p, rank, ranks, tp, 4 * ranks)) {
    for (const Op& o : s.sends) l.send_to.insert(o.peer);
    for (const Op& o : s.recvs) l.recv_from.insert(o.peer);
  }
  return l;
}

std::optional<std::string> CheckPlans(Pattern p, int ranks, int tp,
                                      std::size_t size, std::size_t slice) {
  const std::string at = std::string(PatternName(p)) + " at " +
                         std::to_string(size) + " bytes over " +
                         std::to_string(ranks) + " hosts";
  if (auto why = CheckShape(p, ranks, tp)) return at + ": " + *why;
  // (from, to) -> the lengths of its messages, in order, as each end plans.
  std::map<std::pair<int, int>, std::vector<std::size_t>> sent, expected;
  const std::size_t region = RegionBytes(size);
  for (int r = 0; r < ranks; ++r) {
    for (const Step& s : Plan(p, r, ranks, tp, size, slice)) {
      for (const auto* ops : {&s.sends, &s.recvs}) {
        for (const Op& o : *ops) {
          if (o.peer < 0 || o.peer >= ranks || o.peer == r ||
              o.offset + o.length > region) {
            return at + ": rank " + std::to_string(r) +
                   " plans an op outside its region or to no peer (a "
                   "fabricmon-bench bug)";
          }
        }
      }
      for (const Op& o : s.sends) sent[{r, o.peer}].push_back(o.length);
      for (const Op& o : s.recvs) expected[{o.peer, r}].push_back(o.length);
    }
  }
  if (sent != expected) {
    return at +
           ": the ranks' plans do not pair their messages (a "
           "fabricmon-bench bug)";
  }
  return std::nullopt;
}

TransportStatus Execute(BulkTransport& transport,
                        const std::vector<Step>& steps) {
  return transport.Run(steps);
}

}  // namespace fabric::bench
