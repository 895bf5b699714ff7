// Congestion window: the pure arithmetic behind the `congestion` collector.
// It turns successive fast polls of one port's cumulative counters into
// per-interval ratios (utilisation, transmit-wait fraction, CNP rate) and
// keeps their running maximum over a sliding window so a slow scrape can
// read the *peak* interval instead of an average that hides a 300 ms burst.
//
// Peak = max over the poll intervals that ended within the last `window`
// seconds of that interval's ratio. An interval in which a counter went down
// (reset, 32-bit wrap, device re-probe) is skipped for that counter only.
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

// One poll of one port. Absent fields were not readable (or the hardware
// does not have them); absent is not zero.
struct CongestionSample {
  double time_seconds = 0;                       // monotonic clock
  std::optional<std::uint64_t> xmit_data_words;  // counters/port_xmit_data
  std::optional<std::uint64_t> rcv_data_words;   // counters/port_rcv_data
  std::optional<std::uint64_t> xmit_wait_ticks;  // counters/port_xmit_wait
  std::optional<std::uint64_t> cnp_handled;      // hw_counters/rp_cnp_handled
  std::optional<std::uint64_t> cnp_sent;         // hw_counters/np_cnp_sent
  std::optional<double> rate_bytes_per_second;   // rate
};

// Ratios over one poll interval (previous sample -> this sample).
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

// Ratios between two samples. `tick_seconds` is the duration of one
// port_xmit_wait tick. Returns absent fields for counters that decreased,
// are missing in either sample, or when no time passed.
IntervalRatios ComputeInterval(const CongestionSample& previous,
                               const CongestionSample& current,
                               double tick_seconds);

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

class PortWindow {
 public:
  PortWindow(double window_seconds, double tick_seconds)
      : window_seconds_(window_seconds), tick_seconds_(tick_seconds) {}

  // Adds a poll. The first poll (and a poll whose time is not after the
  // previous one) only sets the baseline.
  void Add(const CongestionSample& sample);
  // Peaks over intervals that ended in (now - window, now]. `now` is not
  // before the latest poll (the collector asks at its monotonic clock's
  // now), so every interval kept has ended by then.
  CongestionPeaks Peaks(double now_seconds) const;
  // Drops intervals that ended at or before now - window.
  void Expire(double now_seconds);

 private:
  double window_seconds_;
  double tick_seconds_;
  std::optional<CongestionSample> last_;
  SlidingMax transmit_utilization_, receive_utilization_, transmit_wait_,
      cnp_handled_, cnp_sent_;
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
  // As PortWindow::Peaks: `now` is not before the latest Add.
  std::optional<double> Peak(double now_seconds) const;
  void Expire(double now_seconds);

 private:
  double window_seconds_;
  double scale_;
  std::optional<std::pair<double, std::uint64_t>> last_;  // time, value
  SlidingMax peak_;
};

}  // namespace fabric
