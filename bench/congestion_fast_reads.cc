// What each choice of `collectors.congestion.fast_read_ratio` buys (issue 44
// item 4): the peak a scrape still sees and the counter reads per second,
// like bench/poll_freshness.py does for the poll interval. Deterministic: the
// real congestion collector runs as the daemon runs it (a sample every
// 100 ms, a publish every tenth tick) over a fake sysfs port whose counters
// accrue in 10 ms steps of a stepped clock; nothing sleeps.
//
//   congestion_fast_reads [RATIO ...]   (default 0 0.01 0.05 0.2 100)
//
// Scenarios, each over every phase of the burst against the poll grid
// (10 ms steps; the worst phase is printed):
//   first burst   one 300 ms burst (transmit wait 1.0, line rate) after a
//                 quiet minute: what a counter woken from quiet shows.
//   next burst    a second such burst 10 s after the first: the all-reduce
//                 case, bursts within one window of each other.
//   blips         4 ms of waiting and of line-rate traffic once a second
//                 (a 100 ms peak of 0.04, under 5 % of a sample): the peak
//                 read against the truth, and the reads it costs.
//   idle / busy   reads per second with every counter still (the recorded
//                 tree of bench/quiet_daemon.sh) and with traffic and
//                 waiting at every tick (a node running a job).
// RATIO 100: no counter is ever hot, every counter is read at the 1 s
// publishes only (the slow interval alone).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/congestion.h"
#include "core/metric_sink.h"
#include "tests/support/fake_sysfs.h"

namespace {

using namespace fabric;

constexpr double kRate = 400e9 / 8;  // 400 Gb/s, bytes per second
constexpr double kTick = 256e-9;
constexpr double kStep = 0.01;  // model step, seconds
const std::string kDir = "class/infiniband/mlx5_0/ports/1/";

// (utilisation, transmit-wait share) during the 10 ms step `i` (from 0).
using Load = std::function<std::pair<double, double>(long)>;

struct Run {
  double wait_peak = 0, util_peak = 0;  // the gauges at the end
  double reads_per_second = 0;          // counter files, all polls
};

// `seconds` of model time; publishes at 1 s, 2 s, ..., samples in between.
Run Drive(double ratio, double seconds, const Load& load) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  double xmit = 0, rcv = 0, wait = 0, now = 0;
  auto render = [&] {
    fs->File(kDir + "counters/port_xmit_data",
             std::to_string(static_cast<std::uint64_t>(xmit)) + "\n");
    fs->File(kDir + "counters/port_rcv_data",
             std::to_string(static_cast<std::uint64_t>(rcv)) + "\n");
    fs->File(kDir + "counters/port_xmit_wait",
             std::to_string(static_cast<std::uint64_t>(wait)) + "\n");
  };
  fs->File(kDir + "rate", "400 Gb/sec (4X NDR)\n");
  render();
  CollectorEnv env;
  env.sysfs = fs;
  CongestionOptions options;
  options.quiet_ratio = ratio;
  CongestionCollector collector(env, options, [&] { return now; });
  MetricSink first;
  collector.Collect(first);
  auto counter_reads = [&] {
    return fs->Reads(kDir + "counters/port_xmit_data") +
           fs->Reads(kDir + "counters/port_rcv_data") +
           fs->Reads(kDir + "counters/port_xmit_wait");
  };
  const int reads0 = counter_reads();
  Run r;
  const long steps = static_cast<long>(seconds / kStep + 0.5);
  for (long i = 1; i <= steps; ++i) {
    const auto [util, waiting] = load(i - 1);
    xmit += util * kRate * kStep / 4;
    rcv += util * kRate * kStep / 4;
    wait += waiting * kStep / kTick;
    now = static_cast<double>(i) * kStep;
    render();
    if (i % 10 != 0) continue;  // polls every 100 ms
    if (i % 100 == 0) {
      MetricSink sink;
      collector.Collect(sink);
      if (i == steps) {
        for (const auto& f : sink.Take()) {
          if (f.metric.empty()) continue;
          const double v = f.metric.front().gauge.value;
          if (f.name == "fabric_port_transmit_wait_peak_ratio") r.wait_peak = v;
          if (f.name == "fabric_port_transmit_utilization_peak_ratio") {
            r.util_peak = v;
          }
        }
      }
    } else {
      collector.Sample();
    }
  }
  r.reads_per_second = (counter_reads() - reads0) / seconds;
  return r;
}

// One 300 ms burst from step `start` (and a second 10 s later when `two`).
Load Bursts(long start, bool two) {
  return [=](long i) {
    const bool in = (i >= start && i < start + 30) ||
                    (two && i >= start + 1000 && i < start + 1030);
    return in ? std::pair{1.0, 1.0} : std::pair{0.0, 0.0};
  };
}

// Worst over the burst's phase against the poll grid (10 ms steps).
Run WorstPhase(double ratio, bool two) {
  Run worst{1e9, 1e9, 0};
  for (int p = 0; p < 100; ++p) {
    const Run r = Drive(ratio, two ? 75 : 63, Bursts(6000 + p, two));
    worst.wait_peak = std::min(worst.wait_peak, r.wait_peak);
    worst.util_peak = std::min(worst.util_peak, r.util_peak);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> ratios;
  for (int i = 1; i < argc; ++i) ratios.push_back(std::atof(argv[i]));
  if (ratios.empty()) ratios = {0, 0.01, 0.05, 0.2, 100};
  std::printf(
      "| fast_read_ratio | first 300 ms burst after a quiet minute: wait / "
      "utilisation peak seen (worst phase; truth 1.0) | the next burst 10 s "
      "later | 4 ms blips: wait / utilisation peak seen (truth 0.04), "
      "reads/s | counter reads/s: idle | busy |\n"
      "|---:|---|---|---|---:|---:|\n");
  for (const double ratio : ratios) {
    const Run first = WorstPhase(ratio, false);
    const Run next = WorstPhase(ratio, true);
    const Run blips = Drive(ratio, 30, [](long i) {
      return i % 100 == 50 ? std::pair{0.4, 0.4} : std::pair{0.0, 0.0};
    });
    const Run idle = Drive(ratio, 30, [](long) { return std::pair{0.0, 0.0}; });
    // A 300 ms burst every 2 s over steady traffic.
    const Run busy = Drive(ratio, 30, [](long i) {
      return i % 200 < 30 ? std::pair{1.0, 0.5} : std::pair{0.6, 0.02};
    });
    std::printf(
        "| %g | %.2f / %.2f | %.2f / %.2f | %.3f / %.3f, %.1f | %.1f | %.1f "
        "|\n",
        ratio, first.wait_peak, first.util_peak, next.wait_peak, next.util_peak,
        blips.wait_peak, blips.util_peak, blips.reads_per_second,
        idle.reads_per_second, busy.reads_per_second);
  }
  return 0;
}
