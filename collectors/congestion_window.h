// Congestion window: the pure arithmetic behind the `congestion` collector.
// It turns successive fast polls of one port's cumulative counters into
// per-interval ratios (utilisation, transmit-wait fraction, CNP rate) and
// keeps the intervals of a sliding window so a slow scrape can read the
// *peak* interval instead of an average that hides a 300 ms burst.
//
// Peak = max over the poll intervals that ended within the last `window`
// seconds of that interval's ratio. An interval in which a counter went down
// (reset, 32-bit wrap, device re-probe) is skipped for that counter only.
//
// The time a counter's increase is divided by is the time it moved over, not
// always the last poll interval: a counter can move in steps (firmware that
// refreshes every 200 ms; the simulator's renderer) and then one poll
// interval can see two steps (two updates' worth of traffic in 100 ms: a
// peak of twice the truth) or none. So each counter learns its step: the
// gaps, in polls, between the polls at which it moved; the upper median of
// the last eight (gaps over eight polls are idle time, not steps) is its
// update period U (1 for a counter that moves at every poll). An increase seen
// G polls after the counter last moved is spread over:
//   max(G, U) polls  when G <= U + 1: a step that came late or early (a
//                    phase slip against the poll) is spread over the period
//                    it accumulated in, and two steps seen together over
//                    both;
//   U polls          when G >= U + 2: the counter sat still for whole
//                    periods (idle), so what it shows now accumulated in its
//                    last period.
// A counter that moves at every poll gets exactly the per-poll ratio.
// Residual error: a stepped counter whose steps do not fall a whole number
// of polls apart (every 250 ms under a 100 ms poll: gaps of 2 and 3) reads
// low (0.83 of the truth there), not high; a counter stepping once per poll
// whose steps drift late for several polls in a row and then catch up can
// still show one interval at twice the truth (from the counter alone that
// is indistinguishable from a real doubling); and utilisation is always
// bounded by the line rate (clamped to [0, 1]).
//
// Which counters a fast poll needs (issue 44 item 4): a counter's peak can
// only come from a poll interval in which it moved, so a counter that sits
// still needs no 100 ms reads until it moves. Each counter of a port is
// *hot* for one window after an interval in which it moved by at least
// `quiet_ratio` of one fast interval's worth (utilisation or transmit wait
// x the interval's length; any CNP at all), read at every fast poll while
// hot, and otherwise only at the slow polls (the publishes, 1 s). What that
// costs: the interval in which a counter wakes from a window of quiet is
// read slow (a burst there shows its average over the slow interval, not
// its 100 ms peak); every later interval of the window is read fast and
// exact; and a peak below `quiet_ratio` of a fast interval reads low (at
// least its slow-interval average), never high. bench/congestion_fast_reads
// measures it.
//
// No I/O, no clock: callers pass timestamps. Parsers take string_view.
//
// Thread-safety: none; a PortWindow belongs to one collector instance, which
// the scheduler runs one Collect() at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <utility>

namespace fabric {

// The cumulative counters of a port's poll, as bits of
// CongestionSample::polled.
enum CongestionCounter : std::uint8_t {
  kXmitData,
  kRcvData,
  kXmitWait,
  kCnpHandled,
  kCnpSent,
  kCongestionCounters,
};
inline constexpr std::uint8_t kAllCongestionCounters =
    (1u << kCongestionCounters) - 1;
constexpr std::uint8_t CounterBit(CongestionCounter c) {
  return static_cast<std::uint8_t>(1u << c);
}

// One poll of one port. Absent fields were not readable (or the hardware
// does not have them); absent is not zero. A counter whose bit is not in
// `polled` was not read this poll (a fast poll of a quiet counter): it keeps
// its baseline, and its next interval spans the polls it was not read at.
struct CongestionSample {
  double time_seconds = 0;                       // monotonic clock
  std::uint8_t polled = kAllCongestionCounters;  // CounterBit()s read
  std::optional<std::uint64_t> xmit_data_words;  // counters/port_xmit_data
  std::optional<std::uint64_t> rcv_data_words;   // counters/port_rcv_data
  std::optional<std::uint64_t> xmit_wait_ticks;  // counters/port_xmit_wait
  std::optional<std::uint64_t> cnp_handled;      // hw_counters/rp_cnp_handled
  std::optional<std::uint64_t> cnp_sent;         // hw_counters/np_cnp_sent
  std::optional<double> rate_bytes_per_second;   // rate
};

// Ratios over one poll interval (previous sample -> this sample), each
// counter's increase spread over the time it moved over (file comment).
struct IntervalRatios {
  double end_seconds = 0;
  std::optional<double> transmit_utilization;  // [0, 1]
  std::optional<double> receive_utilization;   // [0, 1]
  std::optional<double> transmit_wait;         // [0, 1]
  std::optional<double> cnp_handled_per_second;
  std::optional<double> cnp_sent_per_second;
};

// Max of each field over the intervals in the window; a field is absent
// when no interval in the window had it.
using CongestionPeaks = IntervalRatios;

// A 32-bit PortXmitWait stuck at its maximum: unknown, not calm (no ratio).
inline constexpr std::uint64_t kXmitWaitSaturated = 0xFFFFFFFFull;

// The recent poll times of one port (or netdev priority), for the last
// kSteps + 1 polls.
class PollClock {
 public:
  static constexpr int kSteps = 8;  // longest update period learned, polls
  // Records poll number index() + 1 at `time_seconds` (after the last).
  void Tick(double time_seconds);
  std::uint64_t index() const { return index_; }
  // Seconds from the poll `polls` polls before the latest to the latest
  // (from the oldest kept when there are fewer); needs one Tick.
  double Since(int polls) const;

 private:
  std::uint64_t index_ = 0;
  std::deque<double> times_;  // the latest last
};

// One cumulative counter's steps (see the file comment). Add() returns the
// increase since the last poll and the seconds it moved over, or nothing
// for a baseline (first value, after an unreadable one or a decrease).
class CounterSteps {
 public:
  struct Increase {
    double delta = 0;
    double seconds = 0;
  };
  // `learn` false: the gap to this move is not learned as a step (polls
  // of a counter read slow, whose gaps are idle time, not firmware steps).
  std::optional<Increase> Add(const PollClock& clock,
                              std::optional<std::uint64_t> value,
                              bool learn = true);

 private:
  int Period() const;                                             // U, in polls
  std::optional<std::pair<std::uint64_t, std::uint64_t>> moved_;  // poll, v
  std::deque<int> gaps_;  // the last kSteps gaps, in polls (<= kSteps)
};

// Running maximum of values tagged with non-decreasing end times, over a
// sliding window: a monotonic queue that keeps only the values no later value
// is at least as large as, so the maximum is its front and each value is
// pushed and popped once (amortised O(1) per poll instead of a scan of the
// whole window: 600 intervals per port at 100 ms polls and a 60 s window).
class SlidingMax {
 public:
  // `end` must not be before the previous Push's.
  void Push(double end, double value);
  // Drops values that ended at or before `cutoff`.
  void Expire(double cutoff);
  // Max of the values that ended after `cutoff` (all of them pushed so far).
  std::optional<double> Max(double cutoff) const;

 private:
  std::deque<std::pair<double, double>> q_;  // (end, value), values falling
};

// When a counter needs fast reads (file comment). quiet_ratio <= 0: always
// (every counter read at every poll).
struct FastReads {
  double sample_seconds = 0;  // the fast poll interval
  double quiet_ratio = 0;
};

class PortWindow {
 public:
  PortWindow(double window_seconds, double tick_seconds, FastReads fast = {})
      : window_seconds_(window_seconds),
        tick_seconds_(tick_seconds),
        fast_(fast) {}

  // Adds a poll. The first poll (and a poll whose time is not after the
  // previous one) only sets the baseline.
  void Add(const CongestionSample& sample);
  // Peaks over intervals that ended in (now - window, now]. `now` is no
  // earlier than the last Add() (the collector asks at its monotonic now,
  // after the poll): only the per-field maxima are kept, not the intervals.
  CongestionPeaks Peaks(double now_seconds) const;
  // Drops intervals that ended at or before now - window.
  void Expire(double now_seconds);
  // Whether a fast poll at `now` should read counter `c`: it moved enough
  // within the last window (file comment), or gating is off.
  bool Hot(CongestionCounter c, double now_seconds) const {
    return fast_.quiet_ratio <= 0 || now_seconds < counters_[c].hot_until;
  }
  // Seconds the port could not send, summed over every interval since the
  // first poll (Δport_xmit_wait x tick, at most the interval's length;
  // intervals with a decrease or a saturated counter left out); nullopt
  // until one interval had it. Exported as a counter
  // (fabric_port_transmit_wait_seconds_total, issue 42).
  std::optional<double> wait_seconds_total() const {
    return has_wait_ ? std::optional<double>(wait_seconds_total_)
                     : std::nullopt;
  }

 private:
  // One counter's polls: its own clock, ticked only when it was read, so a
  // counter read every slow poll counts its steps in slow polls.
  struct Counter {
    PollClock clock;
    CounterSteps steps;
    double hot_until = -1e300;
  };
  // The increase of counter `c` in this sample, if it was read; marks it
  // hot when `busy_seconds(increase)` fills quiet_ratio of a fast interval.
  template <typename Busy>
  std::optional<CounterSteps::Increase> Step(CongestionCounter c,
                                             const CongestionSample& sample,
                                             std::optional<std::uint64_t> value,
                                             Busy busy_seconds);

  double window_seconds_;
  double tick_seconds_;
  FastReads fast_;
  double wait_seconds_total_ = 0;
  bool has_wait_ = false;
  std::optional<double> last_time_;
  std::optional<double> rate_;  // the last rate read
  Counter counters_[kCongestionCounters];
  SlidingMax transmit_utilization_, receive_utilization_, transmit_wait_,
      cnp_handled_max_, cnp_sent_max_;
};

// Peak over a sliding window of one cumulative counter's rate times
// `scale`, clamped to [0, 1]: used for PFC pause durations (microseconds
// paused per second -> fraction of time paused, scale 1e-6). Same rules as
// PortWindow: a decrease skips the interval, the first sample is a baseline.
class CounterPeakWindow {
 public:
  CounterPeakWindow(double window_seconds, double scale)
      : window_seconds_(window_seconds), scale_(scale) {}
  void Add(double time_seconds, std::optional<std::uint64_t> value);
  std::optional<double> Peak(double now_seconds) const;
  void Expire(double now_seconds);

 private:
  double window_seconds_;
  double scale_;
  std::optional<double> last_time_;
  PollClock clock_;
  CounterSteps steps_;
  SlidingMax peak_;
};

}  // namespace fabric
