// How long a `fabricmon-bench run` takes. What it prints on stderr as each
// size completes: the size, its iterations, the time so far and an estimate
// of the time left for the run, so a user knows whether to wait or to stop
// a run that would take an hour. And the sizes a --local run takes when none
// are given, chosen so that a first run takes about a minute.
//
// The estimate: a collective's time is a fixed cost per operation plus its
// bytes over the link rate (the α-β model, docs/bench.md). The line through
// the last two completed sizes gives both (its slope is the cost per byte,
// at least 0), and a remaining size takes what the last one took plus its
// extra bytes at that cost. Sizes mostly run smallest first, so the last
// two are the best guide to the next. While the sizes are small their
// times are all fixed cost and noise, and a slope through two of them says
// nothing about the cost per byte (a run's first sizes gave "ETA 28h46m"
// for a 27 s run), so there is no estimate until the last two sizes each
// took at least twice the fastest one (their bytes show; one such size can
// be a scheduler delay), nor with fewer than two.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fabric::bench {

// One size's place in a run, as the coordinator reports it.
struct SizeProgress {
  std::size_t index = 0;  // 0-based among the run's sizes
  std::size_t count = 0;  // sizes in the run
  std::uint64_t size_bytes = 0;
  bool done = false;              // false: the size has just started
  int iterations_done = 0;        // measured iterations (0 until done)
  double size_seconds = 0;        // wall time of this size, warm-up included
  double elapsed_seconds = 0;     // since the first size started
  double remaining_seconds = -1;  // estimate for the run; -1 = unknown
};

// A completed size: its bytes and the seconds it took (warm-up included).
struct SizeTime {
  std::uint64_t size_bytes = 0;
  double seconds = 0;
};

// Seconds left for the `remaining` sizes after `done` (in run order); -1
// (unknown) with fewer than two done or while either of the last two took
// less than twice the fastest.
double EstimateRemaining(const std::vector<SizeTime>& done,
                         const std::vector<std::uint64_t>& remaining);

// "340ms", "4.5s", "42s", "3m05s", "1h02m"; negative = "?".
std::string FormatDuration(double seconds);

// "8 B", "64 KiB", "1.5 MiB".
std::string SizeText(double bytes);

// "[3/24] 64 KiB: 20 iterations in 1.2s; elapsed 4.5s, ETA 38s".
std::string ProgressLine(const SizeProgress& p);

// The largest size a first --local run measures take about this long; the
// smaller sizes together take about as long again (each half the next), so
// with setup and the latency-bound small sizes the run takes about a minute.
inline constexpr double kLocalTopSizeSeconds = 30;

// --local's default sizes: 8 B doubling up to the largest power of two
// whose `rounds` (warm-up + measured iterations) take at most
// kLocalTopSizeSeconds when each rank sends `bytes_per_byte` bytes per
// buffer byte (the pattern's busbw factor) over a link of
// `link_bytes_per_second`. Between 64 KiB and 1 GiB (the default --sizes
// top); an unknown rate (0: loopback, unshaped) gives 64 MiB, which
// loopback moves in well under that.
std::vector<std::uint64_t> LocalSizes(double link_bytes_per_second,
                                      double bytes_per_byte, int rounds);

}  // namespace fabric::bench
