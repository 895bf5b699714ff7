// A real Prometheus scrapes 4 simulated hosts (scripts/demo.sh: one
// fabricmon-sim, four fabricmon daemons, /usr/bin/prometheus, 1 s scrape):
// the transmit rates it computes match the simulated offered load within 5%,
// and in congestion-hotspot only the victim port's transmit-wait grows.
// Bounded to about a minute; everything runs on 127.0.0.1 and is stopped by
// the demo's own trap (checked: no process of its session survives).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
using sim::PromQuery;

// Simulated traffic (passed to fabricmon-sim): bursts at 80% of line rate,
// 100 ms on / 100 ms off. Long-run offered load per port = 0.4 × line rate.
constexpr double kLoad = 0.8, kDuty = 0.5;
constexpr double kIbLineRate = 400e9 / 8, kRoceLineRate = 200e9 / 8;

TEST(SimPrometheus, RatesMatchOfferedLoadAndHotspotIsVisible) {
  if (!std::filesystem::exists("/usr/bin/prometheus")) {
    MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
  }
  const std::string log =
      std::filesystem::temp_directory_path() /
      ("sim_prometheus_test." + std::to_string(getpid()) + ".log");
  const std::string ports_file = log + ".ports";
  sim::Session demo(SourceDir() + "/scripts/demo.sh --build " + BinaryDir() +
                        " --hosts 4 --scenario congestion-hotspot"
                        " --duration 75 --scrape-interval 1s" +
                        sim::DemoPortArgs(1, ports_file) +
                        " -- --period 200ms --duty-cycle 0.5 --load 0.8",
                    log);
  const auto ports = sim::WaitDemoPorts(demo, ports_file, 90s);
  std::remove(ports_file.c_str());
  ASSERT_TRUE(ports) << "demo.sh did not start; see " << log;
  const int prom_port = ports->prometheus;

  // Wait until Prometheus holds 18+ s of samples for every target.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(demo.running()) << "demo.sh exited early; see " << log;
    auto r = PromQuery(prom_port,
                       "min(count_over_time(fabric_port_transmit_bytes_total"
                       "{device=\"mlx5_1\"}[30s]))");
    auto up = PromQuery(prom_port, "count(up == 1)");
    ready = r && r->size() == 1 && r->front().value >= 18 && up &&
            up->size() == 1 && up->front().value == 4;
  }
  ASSERT_TRUE(ready) << "Prometheus never had 18 s of data; see " << log;

  auto rates =
      PromQuery(prom_port, "rate(fabric_port_transmit_bytes_total[15s])");
  ASSERT_TRUE(rates);
  EXPECT_EQ(rates->size(), 4u * 9u);  // 4 hosts × 9 ports
  int checked = 0;
  double worst = 0;
  for (const auto& s : *rates) {
    const std::string host = s.labels.at("host"), dev = s.labels.at("device");
    if (host == "host0" && dev == "mlx5_0") continue;  // the victim
    const double line = dev == "mlx5_bond_0" ? kRoceLineRate : kIbLineRate;
    const double offered = kLoad * kDuty * line;
    EXPECT_NEAR(s.value, offered, 0.05 * offered) << host << " " << dev;
    worst = std::max(worst, std::abs(s.value - offered) / offered);
    ++checked;
  }
  EXPECT_EQ(checked, 35);
  RecordProperty("worst_rate_error_percent", std::to_string(worst * 100));
  std::printf("worst rate error vs offered load: %.2f%%\n", worst * 100);

  auto waits =
      PromQuery(prom_port, "increase(fabric_port_transmit_wait_total[15s])");
  ASSERT_TRUE(waits);
  EXPECT_EQ(waits->size(), 36u);
  bool victim_seen = false;
  for (const auto& s : *waits) {
    const std::string host = s.labels.at("host"), dev = s.labels.at("device");
    if (host == "host0" && dev == "mlx5_0") {
      victim_seen = true;
      EXPECT_GT(s.value, 0) << "victim transmit-wait did not grow";
    } else {
      EXPECT_EQ(s.value, 0) << host << " " << dev;
    }
  }
  EXPECT_TRUE(victim_seen);

  // Stop the demo; nothing it started may survive.
  std::string why;
  EXPECT_TRUE(sim::StopDemo(demo, &why)) << why;
  if (!HasFailure()) std::remove(log.c_str());
}

}  // namespace
}  // namespace fabric::testing
