// The collective patterns fabricmon-bench runs, as plans of transport steps
// for one rank, and the nccl-tests bandwidth arithmetic
// (shared/reference/counters-and-probes.md A.5). Pure functions.
//
// Memory: every pattern works on one transport Region() of
// RegionBytes(size): [0, size) is the rank's buffer (input, and output in
// place), [size, 2*size) scratch where reductions receive.
//
// Thread-safety: pure functions; Execute drives one transport from the
// calling thread.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "benchtool/transport.h"

namespace fabric::bench {

enum class Pattern {
  kAllreduceRing,
  kAllgatherRing,
  kReducescatterRing,
  kAlltoall,
  kSendrecvPairs,
  kTpDp,
};
std::optional<Pattern> ParsePattern(std::string_view name);
std::string_view PatternName(Pattern p);
const std::vector<std::string>& PatternNames();

// Whether `ranks` ranks can run the pattern (pairs need an even count, tp-dp
// a multiple of tp, every pattern at least two ranks); the reason otherwise.
std::optional<std::string> CheckShape(Pattern p, int ranks, int tp);

// busbw = algbw * factor. nccl-tests: all-reduce 2(n-1)/n; all-gather,
// reduce-scatter and all-to-all (n-1)/n; send/recv 1. tp-dp (ours): one
// all-reduce of the whole buffer inside each group of tp ranks, then one
// across the n/tp groups, so each rank moves 2(tp-1)/tp + 2(g-1)/g buffer
// sizes: the factor is that sum, and busbw stays comparable to a link rate.
double BusBwFactor(Pattern p, int ranks, int tp);

std::size_t RegionBytes(std::size_t size);

// The steps rank `rank` of `ranks` takes for one operation on `size` bytes.
// slice > 0 cuts each step of the ring patterns into slices of about `slice`
// bytes (at most 64 per step; the count depends on size and the ring only,
// so every rank cuts alike): on a transport that runs a plan as a dataflow
// (BulkTransport::PipelineSlice), a slice goes on as soon as it has arrived
// and been reduced. Every rank of a run must use the same slice.
std::vector<Step> Plan(Pattern p, int rank, int ranks, int tp, std::size_t size,
                       std::size_t slice = 0);

// Whether the plans of all `ranks` ranks for one operation on `size` bytes
// fit together: the k-th send from A to B has the length of the k-th
// receive at B from A, and every op lies in its rank's region. The reason,
// naming the pattern and the size, otherwise. The coordinator checks every
// size before a run starts, so a plan bug is refused up front rather than
// reported mid-run as a host sending the wrong number of bytes.
std::optional<std::string> CheckPlans(Pattern p, int ranks, int tp,
                                      std::size_t size, std::size_t slice = 0);

// The ranks `rank` sends to and receives from in any Plan of the pattern.
struct Links {
  std::set<int> send_to, recv_from;
};
Links LinksOf(Pattern p, int rank, int ranks, int tp);

// Runs `steps` once over `transport` (its Region() at least
// RegionBytes(size)): transport.Run(steps).
TransportStatus Execute(BulkTransport& transport,
                        const std::vector<Step>& steps);

// Chunk i of n of a `size`-byte buffer: starts are multiples of 4 so float
// reductions stay aligned; the last chunk ends at `size`.
std::size_t ChunkBegin(std::size_t size, int i, int n);

}  // namespace fabric::bench
