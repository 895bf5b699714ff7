// Burst visibility, deterministic: the simulator's model (congestion-hotspot
// as a 300 ms burst every 10 s) drives the real congestion collector through
// a fake sysfs whose files read the model's counters, with one stepped clock
// for both.
// The model steps in 10 ms ticks (close to hardware's continuous counters),
// fabricmon polls every 200 ms, and a Prometheus-like scrape every 15 s
// reads (a) fabricmon's peak gauge and (b) the raw counter, from which
// rate(fabric_port_transmit_wait_total[30s]) x tick is computed the way
// Prometheus does without extrapolation (last - first sample in the range).
//
// Claim under test (issue 5): the peak gauge shows >= 0.8 of the true peak
// transmit-wait ratio, the 30 s rate < 0.1 of it - for every poll phase,
// provided the poll interval is at most half the burst (<= 150 ms for
// 300 ms): then one poll interval always lies inside the burst. At 200 ms
// the worst phase splits the burst 150/150 between two intervals and the
// peak shows 0.75 of the truth (sampling bound, asserted as such below).
// scripts/measure_burst.sh measures the same live, with a real Prometheus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "collectors/congestion.h"
#include "core/metric_sink.h"
#include "simulator/counters.h"
#include "simulator/model.h"
#include "simulator/timeline.h"
#include "tests/support/fake_sysfs.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

// What the collector reads of the model (port 1 of each device of `host`:
// rate, counters/, hw_counters/) as files of the tests' fake sysfs whose
// contents are read from the model at each read. The tree's shape is laid
// out once: the model creates every port's hw_counters when it is built, and
// the congestion-hotspot scenario removes no device.
void ModelTree(const sim::Cluster& cluster, int host, testing::FakeSysfs& fs) {
  for (int d : cluster.hosts()[host].devices) {
    const std::string name = cluster.devices()[d].name;
    const sim::Port* port = cluster.FindPort(host, name, 1);
    if (port == nullptr) continue;
    const std::string files = "class/infiniband/" + name + "/ports/1/";
    fs.ComputedFile(files + "rate",
                    [port] { return port->RateString() + "\n"; });
    for (int i = 0; i < static_cast<int>(sim::Ctr::kCount); ++i) {
      fs.ComputedFile(
          files + "counters/" + std::string(sim::kCounterSpecs[i].file),
          [port, i] {
            return std::to_string(port->counters.Get(sim::Ctr(i))) + "\n";
          });
    }
    for (const auto& [file, unused] : port->hw_counters) {
      fs.ComputedFile(files + "hw_counters/" + file, [port, file] {
        return std::to_string(port->hw_counters.at(file)) + "\n";
      });
    }
  }
}

std::optional<double> Gauge(const std::vector<prometheus::MetricFamily>& fams,
                            const std::string& name, const std::string& dev) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      for (const auto& l : m.label) {
        if (l.name == "device" && l.value == dev) return m.gauge.value;
      }
    }
  }
  return std::nullopt;
}

struct Result {
  double true_peak = 0, fabricmon = 0, rate_view = 0;
};

// One run: 70 s of model time, polls at `poll_phase` + k x `poll`.
Result RunBurst(sim::Duration poll, sim::Duration poll_phase) {
  sim::SimConfig config;
  config.hosts = 2;
  config.tick = 10ms;
  config.timeline = sim::SingleScenario(sim::Scenario::kCongestionHotspot);
  for (auto& e : config.timeline.events) {
    e.burst_length = 300ms;
    e.burst_period = 10s;
  }
  sim::Cluster cluster(config);
  const sim::Port* victim = cluster.FindPort(0, "mlx5_0", 1);
  EXPECT_NE(victim, nullptr);
  if (victim == nullptr) return {};

  double now = 0;
  CollectorEnv env;
  auto sysfs = std::make_shared<testing::FakeSysfs>();
  ModelTree(cluster, 0, *sysfs);
  env.sysfs = sysfs;
  CongestionCollector collector(env, CongestionOptions{}, [&] { return now; });
  const double tick = CongestionOptions{}.xmit_wait_tick_seconds;
  Result r;
  std::vector<std::pair<double, double>> scraped;  // (t, counter)
  double last_gauge = 0;
  std::uint64_t prev_wait = victim->counters.Get(sim::Ctr::kPortXmitWait);
  const sim::Duration end = 70s, scrape = 15s;
  sim::Duration next_poll = poll_phase, next_scrape = 15s;
  while (cluster.now() < end) {
    cluster.Step();
    now = std::chrono::duration<double>(cluster.now()).count();
    const std::uint64_t wait = victim->counters.Get(sim::Ctr::kPortXmitWait);
    r.true_peak = std::max(
        r.true_peak, (wait - prev_wait) * tick /
                         std::chrono::duration<double>(config.tick).count());
    prev_wait = wait;
    if (cluster.now() >= next_poll) {
      MetricSink sink;
      collector.Collect(sink);
      last_gauge =
          Gauge(sink.Take(), "fabric_port_transmit_wait_peak_ratio", "mlx5_0")
              .value_or(0);
      next_poll += poll;
    }
    if (cluster.now() >= next_scrape) {
      // What Prometheus stores: the cached peak gauge and the raw counter.
      r.fabricmon = std::max(r.fabricmon, last_gauge);
      scraped.emplace_back(now, static_cast<double>(wait));
      // rate(...[30s]) at this evaluation: samples in (now - 30 s, now].
      std::vector<std::pair<double, double>> in;
      for (const auto& s : scraped) {
        if (s.first > now - 30.0 + 1e-9) in.push_back(s);
      }
      if (in.size() >= 2) {
        const double rate = (in.back().second - in.front().second) /
                            (in.back().first - in.front().first);
        r.rate_view = std::max(r.rate_view, rate * tick);
      }
      next_scrape += scrape;
    }
  }
  return r;
}

// Worst case over poll phases (10 ms steps) for one poll interval.
Result Worst(sim::Duration poll) {
  Result worst{0, 1e9, 0};
  for (sim::Duration phase{0}; phase < poll; phase += 10ms) {
    const Result r = RunBurst(poll, phase);
    EXPECT_GT(r.true_peak, 0.05) << "the burst produced no transmit wait";
    if (r.true_peak <= 0) return r;
    worst.true_peak = r.true_peak;
    worst.fabricmon = std::min(worst.fabricmon, r.fabricmon / r.true_peak);
    worst.rate_view = std::max(worst.rate_view, r.rate_view / r.true_peak);
    // A peak of whole poll intervals can never exceed the true peak.
    EXPECT_LE(r.fabricmon, r.true_peak + 1e-9);
  }
  std::printf(
      "poll %3lld ms: true peak %.3f; worst over phases: fabricmon peak %.2f "
      "of true, rate(...[30s]) x tick %.3f of true\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(poll).count()),
      worst.true_peak, worst.fabricmon, worst.rate_view);
  return worst;
}

TEST(CongestionBurstTest, PeakSeesTheBurstWhenPollIsAtMostHalfOfIt) {
  for (auto poll : {100ms, 150ms}) {
    const Result w = Worst(poll);
    EXPECT_GE(w.fabricmon, 0.8);
    EXPECT_LT(w.rate_view, 0.1);
  }
}

TEST(CongestionBurstTest, DefaultPollIntervalBound) {
  const Result w = Worst(kCongestionRecommendedInterval);
  // 300 ms burst, interval P: worst share = max(P, 300 - P... ) / P, i.e.
  // 0.75 at 200 ms, 1.0 at <= 150 ms.
  const double p =
      std::chrono::duration<double>(kCongestionRecommendedInterval).count();
  const double bound = p <= 0.15 ? 1.0 : std::max(0.3 - p, 0.15) / p;
  EXPECT_GE(w.fabricmon, bound - 0.02);
  EXPECT_LT(w.rate_view, 0.1);
  ::testing::Test::RecordProperty("default_poll_worst_peak_share",
                                  std::to_string(w.fabricmon));
}

}  // namespace
}  // namespace fabric
