// Tests for the congestion collector and its window arithmetic, with a fake
// sysfs and a stepped clock (no sleeping, no timing assertions).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "collectors/congestion.h"
#include "collectors/congestion_window.h"
#include "collectors/registry.h"
#include "core/metric_sink.h"
#include "sources/sysfs_parse.h"
#include "tests/support/fake_ethtool.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

// A port counter file as the kernel writes it.
void SetPort(testing::FakeSysfs& fs, const std::string& dev,
             const std::string& port, const std::string& file,
             std::uint64_t value) {
  fs.File("class/infiniband/" + dev + "/ports/" + port + "/" + file,
          std::to_string(value) + "\n");
}

// A simulated IB port whose counters accrue in continuous time, so the test
// can place a burst anywhere between polls.
struct SimPort {
  double rate_bytes = 400e9 / 8;  // 400 Gb/s
  double tick = 256e-9;
  double xmit_words = 0, rcv_words = 0, wait_ticks = 0;
  // Advance by dt with the given utilisation and waiting fraction.
  void Run(double dt, double util, double wait) {
    xmit_words += util * rate_bytes * dt / 4;
    rcv_words += util * rate_bytes * dt / 4 / 2;
    wait_ticks += wait * dt / tick;
  }
  void Render(testing::FakeSysfs& fs, const std::string& dev,
              const std::string& port) {
    SetPort(fs, dev, port, "counters/port_xmit_data",
            static_cast<std::uint64_t>(xmit_words));
    SetPort(fs, dev, port, "counters/port_rcv_data",
            static_cast<std::uint64_t>(rcv_words));
    SetPort(fs, dev, port, "counters/port_xmit_wait",
            static_cast<std::uint64_t>(wait_ticks));
    fs.File("class/infiniband/" + dev + "/ports/" + port + "/rate",
            "400 Gb/sec (4X NDR)\n");
  }
};

std::optional<double> Value(const std::vector<prometheus::MetricFamily>& fams,
                            const std::string& name, const std::string& dev,
                            const std::string& port) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const auto& lp : m.label) l[lp.name] = lp.value;
      if (l["device"] == dev && l["port"] == port) return m.gauge.value;
    }
  }
  return std::nullopt;
}

class CongestionCollectorTest : public ::testing::Test {
 protected:
  std::shared_ptr<testing::FakeSysfs> fs =
      std::make_shared<testing::FakeSysfs>();
  double now = 1000.0;
  CongestionOptions options;
  std::unique_ptr<CongestionCollector> collector;

  void Make() {
    CollectorEnv env;
    env.sysfs = fs;
    collector = std::make_unique<CongestionCollector>(env, options,
                                                      [this] { return now; });
  }
  std::vector<prometheus::MetricFamily> Collect(bool* ok = nullptr) {
    MetricSink sink;
    const bool result = collector->Collect(sink);
    if (ok) *ok = result;
    return sink.Take();
  }
};

// A sample polls the ports the last publish found without listing
// anything; ports that appear are picked up, and ports that vanish
// forgotten, at the next publish.
TEST_F(CongestionCollectorTest, SamplesPollKnownPortsAndPublishesWalk) {
  options.quiet_ratio = 0;  // every counter at every sample
  Make();
  SimPort a;
  a.Render(*fs, "mlx5_0", "1");
  Collect();
  const std::size_t listed = fs->calls().size();
  SimPort b;
  b.Render(*fs, "mlx5_1", "1");  // appears between publishes
  for (int i = 0; i < 3; ++i) {
    now += 0.1;
    a.Run(0.1, 0.5, 0.25);
    a.Render(*fs, "mlx5_0", "1");
    collector->Sample();
  }
  std::vector<std::string> sampled(fs->calls().begin() + listed,
                                   fs->calls().end());
  for (const auto& call : sampled) {
    EXPECT_TRUE(call.starts_with("read class/infiniband/mlx5_0/")) << call;
  }
  EXPECT_EQ(sampled.size(), 3u * 3u);  // xmit_data, rcv_data, xmit_wait
  // The samples' intervals are in the published peaks.
  auto fams = Collect();
  EXPECT_NEAR(Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1")
                  .value_or(-1),
              0.25, 0.01);
  // The publish walked: mlx5_1 is polled from now on.
  now += 0.1;
  b.Run(0.1, 1.0, 0.0);
  b.Render(*fs, "mlx5_1", "1");
  fs->Remove("class/infiniband/mlx5_0");
  collector->Sample();  // mlx5_0's reads fail quietly
  fams = Collect();
  EXPECT_NEAR(
      Value(fams, "fabric_port_transmit_utilization_peak_ratio", "mlx5_1", "1")
          .value_or(-1),
      1.0, 0.01);
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"));
}

// The headline case: polls every 200 ms, a 300 ms burst of full
// transmit-wait (and line-rate transmit) lands between polls. The peak over
// the window sees (nearly) the whole burst, while the 30 s average that a
// slow scrape's rate() would give is ~1 %.
// (Every counter read at every sample: with the default quiet_ratio this
// burst, the first transmit wait after a quiet window, reads as its average
// over the publish interval; FirstBurstAfterQuietReadsSlowThenFast.)
TEST_F(CongestionCollectorTest, BurstBetweenPollsShowsAsPeak) {
  options.quiet_ratio = 0;
  Make();
  SimPort sim;
  sim.Render(*fs, "mlx5_0", "1");
  Collect();  // baseline
  double t = 0;
  const double poll = 0.2;
  double total_wait_time = 0;
  // 30 s of calm traffic with one 300 ms burst starting 10.1 s in, i.e.
  // 100 ms after a poll, so it spans the end of one interval and all of the
  // next one.
  for (int i = 0; i < 150; ++i) {
    const double start = t, end = t + poll;
    const double burst_start = 10.1, burst_end = 10.4;
    const double in_burst =
        std::max(0.0, std::min(end, burst_end) - std::max(start, burst_start));
    sim.Run(poll - in_burst, 0.1, 0.0);
    sim.Run(in_burst, 1.0, 1.0);
    total_wait_time += in_burst;
    t = end;
    now += poll;
    sim.Render(*fs, "mlx5_0", "1");
    // As the daemon runs it: samples between publishes feed the peaks too.
    if (i % 5 == 4) {
      Collect();
    } else {
      collector->Sample();
    }
  }
  const auto fams = Collect();  // no time passed: only re-reads
  const auto wait =
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1");
  ASSERT_TRUE(wait.has_value());
  // The interval [10.2, 10.4] was entirely inside the burst.
  EXPECT_NEAR(*wait, 1.0, 0.01);
  EXPECT_NEAR(total_wait_time / 30.0, 0.01, 0.001);  // what rate() would see
  const auto tx =
      Value(fams, "fabric_port_transmit_utilization_peak_ratio", "mlx5_0", "1");
  ASSERT_TRUE(tx.has_value());
  EXPECT_NEAR(*tx, 1.0, 0.01);
  const auto rx =
      Value(fams, "fabric_port_receive_utilization_peak_ratio", "mlx5_0", "1");
  ASSERT_TRUE(rx.has_value());
  EXPECT_NEAR(*rx, 0.5, 0.01);

  // 60 s later the burst has left the window: the peak is the calm level.
  for (int i = 0; i < 310; ++i) {
    sim.Run(poll, 0.1, 0.0);
    now += poll;
    sim.Render(*fs, "mlx5_0", "1");
    Collect();
  }
  const auto later = Collect();
  EXPECT_NEAR(
      *Value(later, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"), 0.0,
      1e-9);
  EXPECT_NEAR(*Value(later, "fabric_port_transmit_utilization_peak_ratio",
                     "mlx5_0", "1"),
              0.1, 0.01);
}

TEST_F(CongestionCollectorTest, WindowLengthIsExportedAndConfigurable) {
  options.window_seconds = 5;
  Make();
  SimPort sim;
  sim.Render(*fs, "mlx5_0", "1");
  Collect();
  sim.Run(1, 1.0, 0.5);  // one congested second
  now += 1;
  sim.Render(*fs, "mlx5_0", "1");
  auto fams = Collect();
  for (const auto& f : fams) {
    if (f.name == "fabric_congestion_window_seconds") {
      ASSERT_EQ(f.metric.size(), 1u);
      EXPECT_EQ(f.metric[0].gauge.value, 5);
    }
  }
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"), 0.5,
      0.01);
  for (int i = 0; i < 5; ++i) {
    sim.Run(1, 0.0, 0.0);
    now += 1;
    sim.Render(*fs, "mlx5_0", "1");
    fams = Collect();
  }
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"), 0.0,
      1e-9);
}

TEST_F(CongestionCollectorTest, CounterDecreaseSkipsThatInterval) {
  Make();
  SetPort(*fs, "mlx5_0", "1", "counters/port_xmit_wait", 1'000'000'000);
  fs->File("class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)");
  Collect();
  now += 1;
  SetPort(*fs, "mlx5_0", "1", "counters/port_xmit_wait", 5);  // reset / wrap
  auto fams = Collect();
  // Only a skipped interval so far: absent, not zero and not negative.
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"));
  now += 1;
  // 0.256 s worth of 256 ns ticks (the default tick) in 1 s.
  SetPort(*fs, "mlx5_0", "1", "counters/port_xmit_wait", 5 + 1'000'000);
  fams = Collect();
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"),
      0.256, 1e-6);
}

TEST_F(CongestionCollectorTest, TickDurationIsAnOption) {
  options.xmit_wait_tick_seconds = 64e-9;
  Make();
  SetPort(*fs, "mlx5_0", "1", "counters/port_xmit_wait", 0);
  Collect();
  now += 1;
  SetPort(*fs, "mlx5_0", "1", "counters/port_xmit_wait", 7'812'500);
  auto fams = Collect();
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"), 0.5,
      1e-6);
  // No rate file: no utilisation, but the wait ratio still works.
  EXPECT_FALSE(Value(fams, "fabric_port_transmit_utilization_peak_ratio",
                     "mlx5_0", "1"));
}

TEST_F(CongestionCollectorTest, DeviceVanishingDropsSeriesAndRebaselines) {
  Make();
  SimPort a, b;
  a.Render(*fs, "mlx5_0", "1");
  b.Render(*fs, "mlx5_1", "1");
  Collect();
  a.Run(1, 0.5, 0.2);
  b.Run(1, 0.5, 0.2);
  now += 1;
  a.Render(*fs, "mlx5_0", "1");
  b.Render(*fs, "mlx5_1", "1");
  auto fams = Collect();
  EXPECT_TRUE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_1", "1"));

  fs->Remove("class/infiniband/mlx5_1");
  now += 1;
  bool ok = false;
  fams = Collect(&ok);
  EXPECT_TRUE(ok);
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_1", "1"));
  EXPECT_TRUE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"));

  // It comes back with counters from zero: the first poll is a baseline,
  // not an interval against the old values.
  SimPort fresh;
  fresh.Render(*fs, "mlx5_1", "1");
  now += 1;
  fams = Collect();
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_1", "1"));
  fresh.Run(1, 0.0, 0.75);
  fresh.Render(*fs, "mlx5_1", "1");
  now += 1;
  fams = Collect();
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_1", "1"), 0.75,
      0.001);
}

TEST_F(CongestionCollectorTest, RoceCnpPeaksPerSecond) {
  Make();
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/rp_cnp_handled", 100);
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/np_cnp_sent", 10);
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/out_of_sequence", 1);
  Collect();
  now += 0.5;
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/rp_cnp_handled", 600);
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/np_cnp_sent", 20);
  now += 0.0;
  Collect();
  now += 0.5;
  SetPort(*fs, "mlx5_bond_0", "1", "hw_counters/rp_cnp_handled", 650);
  auto fams = Collect();
  EXPECT_NEAR(*Value(fams, "fabric_roce_cnp_handled_peak_per_second",
                     "mlx5_bond_0", "1"),
              1000, 1e-6);
  EXPECT_NEAR(
      *Value(fams, "fabric_roce_cnp_sent_peak_per_second", "mlx5_bond_0", "1"),
      20, 1e-6);
  // Files it does not need are never read.
  EXPECT_EQ(
      fs->Reads(
          "class/infiniband/mlx5_bond_0/ports/1/hw_counters/out_of_sequence"),
      0);
}

TEST_F(CongestionCollectorTest, ReadsOnlyWhatItNeedsAndRateRarely) {
  Make();
  SimPort sim;
  sim.Render(*fs, "mlx5_0", "1");
  SetPort(*fs, "mlx5_0", "1", "counters/symbol_error", 3);
  for (int i = 0; i < 10; ++i) {
    now += 0.2;
    Collect();
  }
  const std::string dir = "class/infiniband/mlx5_0/ports/1/";
  EXPECT_EQ(fs->Reads(dir + "counters/port_xmit_wait"), 10);
  EXPECT_EQ(fs->Reads(dir + "counters/port_xmit_data"), 10);
  EXPECT_EQ(fs->Reads(dir + "counters/symbol_error"), 0);
  EXPECT_EQ(fs->Reads(dir + "rate"), 1);  // refreshed every 10 s
  // Absent hw_counters files are not tried at all.
  EXPECT_EQ(fs->Reads(dir + "hw_counters/rp_cnp_handled"), 0);
}

// Issue 44 item 4: a sample between two publishes reads only the hot
// counters (moved by at least fast_read_ratio of a sample interval in the
// last window); the quiet ones are read at the publishes. These fail if a
// sample reads a quiet counter again.
class FastReadsTest : public CongestionCollectorTest {
 protected:
  struct Reads {
    int data = 0, rcv = 0, wait = 0, cnp = 0;
  };
  const std::string dir = "class/infiniband/mlx5_0/ports/1/";
  SimPort sim;

  Reads Count() {
    return {fs->Reads(dir + "counters/port_xmit_data"),
            fs->Reads(dir + "counters/port_rcv_data"),
            fs->Reads(dir + "counters/port_xmit_wait"),
            fs->Reads(dir + "hw_counters/rp_cnp_handled") +
                fs->Reads(dir + "hw_counters/np_cnp_sent")};
  }
  // One publish interval as the daemon runs it at the defaults: nine
  // samples 100 ms apart, then a publish. `load(i)` is the (utilisation,
  // wait) of the i-th 100 ms. Returns what the nine samples read.
  Reads Second(const std::function<std::pair<double, double>(int)>& load) {
    const Reads before = Count();
    for (int i = 0; i < 10; ++i) {
      if (i == 9) {
        const Reads after = Count();
        Advance(load(i));
        Collect();
        return {after.data - before.data, after.rcv - before.rcv,
                after.wait - before.wait, after.cnp - before.cnp};
      }
      Advance(load(i));
      collector->Sample();
    }
    return {};
  }
  Reads Second(double util, double wait) {
    return Second([&](int) { return std::pair{util, wait}; });
  }
  void Advance(std::pair<double, double> load) {
    now += 0.1;
    sim.Run(0.1, load.first, load.second);
    sim.Render(*fs, "mlx5_0", "1");
  }
  double Peak(const std::string& name) {
    return Value(Collect(), name, "mlx5_0", "1").value_or(-1);
  }
};

TEST_F(FastReadsTest, QuietCountersAreReadAtPublishesOnly) {
  Make();
  sim.Render(*fs, "mlx5_0", "1");
  SetPort(*fs, "mlx5_0", "1", "hw_counters/rp_cnp_handled", 7);
  SetPort(*fs, "mlx5_0", "1", "hw_counters/np_cnp_sent", 9);
  Collect();  // baseline
  EXPECT_FALSE(collector->Samples());
  for (int s = 0; s < 3; ++s) {
    const Reads sampled = Second(0, 0);
    EXPECT_EQ(sampled.data + sampled.rcv + sampled.wait + sampled.cnp, 0) << s;
    EXPECT_FALSE(collector->Samples()) << s;
  }
  // The publishes read each file: the baseline and three.
  const Reads all = Count();
  EXPECT_EQ(all.data, 4);
  EXPECT_EQ(all.rcv, 4);
  EXPECT_EQ(all.wait, 4);
  EXPECT_EQ(all.cnp, 8);
  EXPECT_DOUBLE_EQ(Peak("fabric_port_transmit_wait_peak_ratio"), 0);
}

TEST_F(FastReadsTest, OnlyTheCountersThatMoveAreReadAtEverySample) {
  options.window_seconds = 3;
  Make();
  sim.Render(*fs, "mlx5_0", "1");
  Collect();
  // The first second of waiting is read at its publish, which makes
  // port_xmit_wait hot: from then on every sample reads it, and only it.
  Reads r = Second(0, 0.3);
  EXPECT_EQ(r.wait, 0);
  EXPECT_TRUE(collector->Samples());
  r = Second(0, 0.3);
  EXPECT_EQ(r.wait, 9);
  EXPECT_EQ(r.data + r.rcv, 0);
  EXPECT_NEAR(Peak("fabric_port_transmit_wait_peak_ratio"), 0.3, 1e-3);
  // It stays hot for one window (3 s) after it last moved, then cools.
  for (int s = 0; s < 3; ++s) EXPECT_EQ(Second(0, 0).wait, 9) << s;
  r = Second(0, 0);
  EXPECT_EQ(r.wait, 0);
  EXPECT_FALSE(collector->Samples());
  // Traffic heats the data counters (receive at half the transmit rate).
  Second(0.6, 0);
  r = Second(0.6, 0);
  EXPECT_EQ(r.data, 9);
  EXPECT_EQ(r.rcv, 9);
  EXPECT_EQ(r.wait, 0);
  EXPECT_NEAR(Peak("fabric_port_transmit_utilization_peak_ratio"), 0.6, 1e-3);
}

TEST_F(FastReadsTest, BelowTheQuietRatioStaysSlowAndReadsItsAverage) {
  Make();
  sim.Render(*fs, "mlx5_0", "1");
  Collect();
  // 0.4 % waiting: 4 ms a second, under 5 % of one 100 ms sample.
  for (int s = 0; s < 3; ++s) EXPECT_EQ(Second(0, 0.004).wait, 0) << s;
  EXPECT_FALSE(collector->Samples());
  EXPECT_NEAR(Peak("fabric_port_transmit_wait_peak_ratio"), 0.004, 1e-4);
}

// What the choice costs: the burst that wakes a quiet counter is read over
// the publish interval (its average, 0.3 of a 300 ms burst); the next one
// within the window is read at every sample and exact.
TEST_F(FastReadsTest, FirstBurstAfterQuietReadsSlowThenFast) {
  Make();
  sim.Render(*fs, "mlx5_0", "1");
  Collect();
  auto burst = [](int i) {
    return std::pair{0.0, i >= 3 && i < 6 ? 1.0 : 0.0};
  };
  for (int s = 0; s < 5; ++s) Second(0, 0);
  EXPECT_EQ(Second(burst).wait, 0);
  EXPECT_NEAR(Peak("fabric_port_transmit_wait_peak_ratio"), 0.3, 1e-3);
  for (int s = 0; s < 5; ++s) Second(0, 0);
  EXPECT_EQ(Second(burst).wait, 9);
  EXPECT_NEAR(Peak("fabric_port_transmit_wait_peak_ratio"), 1.0, 1e-3);
}

// fast_read_ratio 0: every counter at every sample, moving or not.
TEST_F(FastReadsTest, RatioZeroReadsEveryCounterAtEverySample) {
  options.quiet_ratio = 0;
  Make();
  sim.Render(*fs, "mlx5_0", "1");
  Collect();
  const Reads r = Second(0, 0);
  EXPECT_EQ(r.data, 9);
  EXPECT_EQ(r.rcv, 9);
  EXPECT_EQ(r.wait, 9);
  EXPECT_TRUE(collector->Samples());
}

TEST_F(CongestionCollectorTest, GarbageIsSkippedNotExported) {
  Make();
  fs->File("class/infiniband/hfi1_0/ports/1/counters/port_xmit_wait",
           "N/A (no PMA)\n");
  MetricSink sink;
  EXPECT_TRUE(collector->Collect(sink));
  EXPECT_EQ(sink.skipped(), 1u);
  now += 1;
  auto fams = sink.Take();
  fams = Collect();
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "hfi1_0", "1"));
}

TEST_F(CongestionCollectorTest, NoInfinibandIsSuccessWithNoPorts) {
  Make();
  bool ok = false;
  auto fams = Collect(&ok);
  EXPECT_TRUE(ok);
  ASSERT_EQ(fams.size(), 2u);
  EXPECT_EQ(fams[0].name, "fabric_congestion_window_seconds");
  EXPECT_EQ(fams[1].name, "fabric_congestion_xmit_wait_tick_seconds");
  EXPECT_DOUBLE_EQ(fams[1].metric[0].gauge.value,
                   options.xmit_wait_tick_seconds);
}

TEST_F(CongestionCollectorTest, DeviceFilterApplies) {
  CollectorEnv env;
  env.sysfs = fs;
  options.devices = DeviceFilter({}, {"mlx5_1"});
  collector = std::make_unique<CongestionCollector>(env, options,
                                                    [this] { return now; });
  SetPort(*fs, "mlx5_1", "1", "counters/port_xmit_wait", 1);
  Collect();
  EXPECT_EQ(fs->Reads(), 0);
}

// The recorded trees: a real H100 (8x ConnectX-7 IB + BlueField-3 RoCE bond)
// and a real mlx4 whose port_xmit_wait is saturated at 2^32-1.
TEST(CongestionFixtureTest, RealTrees) {
  double now = 0;
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100"));
  CongestionCollector h100(env, {}, [&] { return now; });
  MetricSink sink;
  ASSERT_TRUE(h100.Collect(sink));
  now += 0.2;
  ASSERT_TRUE(h100.Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  auto fams = sink.Take();
  // Unchanged counters: every port polled, ratios exactly 0.
  for (const char* dev :
       {"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_9", "mlx5_bond_0"}) {
    EXPECT_EQ(Value(fams, "fabric_port_transmit_wait_peak_ratio", dev, "1"),
              0.0)
        << dev;
    EXPECT_EQ(
        Value(fams, "fabric_port_transmit_utilization_peak_ratio", dev, "1"),
        0.0)
        << dev;
  }

  env.sysfs = MakeRealSysfs(testing::Fixture("real/sysfs-node_exporter"));
  CongestionCollector mlx4(env, {}, [&] { return now; });
  ASSERT_TRUE(mlx4.Collect(sink));
  now += 0.2;
  ASSERT_TRUE(mlx4.Collect(sink));
  fams = sink.Take();
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx4_0", "1"));
}

// The real reader keeps descriptors and listings between polls: on a
// recorded tree (inotify mode) the collector must still see counters change
// (in place, or replaced by rename as the simulator writes) and devices go
// and come back.
TEST(CongestionFixtureTest, KeptDescriptorsSeeChangesOnADiskTree) {
  namespace fs = std::filesystem;
  const testing::TempDir tmp("congestion-tree");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  fs::copy(testing::Fixture("real/sysfs-gpud-h100"), root,
           fs::copy_options::recursive);
  const fs::path ib = root / "class/infiniband";
  auto wait_file = [&](const char* dev) {
    return ib / dev / "ports/1/counters/port_xmit_wait";
  };
  auto read_u64 = [](const fs::path& p) {
    std::ifstream in(p);
    std::uint64_t v = 0;
    in >> v;
    return v;
  };
  double now = 0;
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(root.string(), SysfsCacheMode::kInotify);
  CongestionCollector c(env, {}, [&] { return now; });
  MetricSink sink;
  ASSERT_TRUE(c.Collect(sink));
  sink.Take();

  // 1 s later: mlx5_0 rewritten in place, mlx5_1 replaced by a rename.
  // 1,000,000 ticks of 256 ns in 1 s = 0.256 of the time waiting.
  const std::uint64_t w0 = read_u64(wait_file("mlx5_0"));
  const std::uint64_t w1 = read_u64(wait_file("mlx5_1"));
  std::ofstream(wait_file("mlx5_0"), std::ios::trunc) << w0 + 1'000'000;
  const fs::path replacement = wait_file("mlx5_1").string() + ".new";
  std::ofstream(replacement) << w1 + 2'000'000;
  fs::rename(replacement, wait_file("mlx5_1"));
  now = 1;
  ASSERT_TRUE(c.Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  auto fams = sink.Take();
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_0", "1"),
      0.256, 1e-9);
  EXPECT_NEAR(
      *Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_1", "1"),
      0.512, 1e-9);
  EXPECT_EQ(Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_4", "1"),
            0.0);

  // mlx5_4 goes away: its series go with it.
  const fs::path saved = root / "saved-mlx5_4";
  fs::rename(ib / "mlx5_4", saved);
  now = 2;
  ASSERT_TRUE(c.Collect(sink));
  fams = sink.Take();
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_4", "1"));
  EXPECT_TRUE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_5", "1"));

  // It comes back with a counter far ahead: a new baseline, not a burst.
  const std::uint64_t w4 = read_u64(saved / "ports/1/counters/port_xmit_wait");
  std::ofstream(saved / "ports/1/counters/port_xmit_wait", std::ios::trunc)
      << w4 + 1'000'000'000;
  fs::rename(saved, ib / "mlx5_4");
  now = 3;
  ASSERT_TRUE(c.Collect(sink));
  fams = sink.Take();
  EXPECT_FALSE(
      Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_4", "1"));
  now = 4;
  ASSERT_TRUE(c.Collect(sink));
  fams = sink.Take();
  EXPECT_EQ(Value(fams, "fabric_port_transmit_wait_peak_ratio", "mlx5_4", "1"),
            0.0);
  EXPECT_EQ(sink.skipped(), 0u);
}

std::optional<double> PfcPeak(const std::vector<prometheus::MetricFamily>& fams,
                              const std::string& prio,
                              const std::string& direction) {
  for (const auto& f : fams) {
    if (f.name != "fabric_pfc_pause_peak_ratio") continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const auto& lp : m.label) l[lp.name] = lp.value;
      if (l["priority"] == prio && l["direction"] == direction) {
        EXPECT_EQ(l["device"], "mlx5_bond_0");
        EXPECT_EQ(l["port"], "1");
        EXPECT_EQ(l["netdev"], "bond0");
        return m.gauge.value;
      }
    }
  }
  return std::nullopt;
}

TEST_F(CongestionCollectorTest, PfcPausePeakFromEthtool) {
  const std::string port = "class/infiniband/mlx5_bond_0/ports/1/";
  fs->File(port + "link_layer", "Ethernet\n");
  fs->File(port + "gid_attrs/ndevs/0", "bond0\n");
  fs->File("class/net/bond0/operstate", "up\n");
  SetPort(*fs, "mlx5_bond_0", "1", "counters/port_xmit_wait", 0);
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  testing::FakeEthtool* eth = ethtool.get();
  eth->Set("bond0", {{"rx_prio3_pause_duration", 0},
                     {"tx_prio3_pause_duration", 0},
                     {"rx_prio3_pause", 0}});
  CollectorEnv env;
  env.sysfs = fs;
  options.window_seconds = 10;
  CongestionCollector c(
      env, options, [this] { return now; }, std::move(ethtool));
  auto collect = [&] {
    MetricSink sink;
    EXPECT_TRUE(c.Collect(sink));
    return sink.Take();
  };
  collect();  // baseline
  // 200 ms poll in which priority 3 was paused (rx) for 150 ms.
  now += 0.2;
  eth->SetCounter("bond0", "rx_prio3_pause_duration", 150'000);
  auto fams = collect();
  EXPECT_NEAR(*PfcPeak(fams, "3", "rx"), 0.75, 1e-9);
  EXPECT_NEAR(*PfcPeak(fams, "3", "tx"), 0.0, 1e-9);
  EXPECT_FALSE(PfcPeak(fams, "0", "rx"));  // no such counter: absent
  // Calm afterwards: the peak stays until it leaves the 10 s window.
  for (int i = 0; i < 60; ++i) {
    now += 0.2;
    fams = collect();
  }
  EXPECT_NEAR(*PfcPeak(fams, "3", "rx"), 0.0, 1e-9);
  // A counter reset is skipped, not a negative or huge ratio.
  now += 0.2;
  eth->SetCounter("bond0", "rx_prio3_pause_duration", 10);
  fams = collect();
  EXPECT_NEAR(*PfcPeak(fams, "3", "rx"), 0.0, 1e-9);
  // One ethtool read per poll; discovery did not run again.
  EXPECT_EQ(eth->CallsFor("bond0"), 63);
  EXPECT_EQ(fs->Reads(port + "link_layer"), 1);
}

TEST_F(CongestionCollectorTest, PfcNetdevGoneIsSkippedAndRebaselined) {
  const std::string port = "class/infiniband/mlx5_bond_0/ports/1/";
  fs->File(port + "link_layer", "Ethernet\n");
  fs->File(port + "gid_attrs/ndevs/0", "bond0\n");
  fs->File("class/net/bond0/operstate", "up\n");
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  testing::FakeEthtool* eth = ethtool.get();
  eth->Set("bond0", {{"rx_prio3_pause_duration", 1'000'000}});
  CollectorEnv env;
  env.sysfs = fs;
  CongestionCollector c(
      env, options, [this] { return now; }, std::move(ethtool));
  MetricSink sink;
  c.Collect(sink);
  eth->results.erase("bond0");  // ENODEV
  now += 0.2;
  c.Collect(sink);
  EXPECT_GE(sink.skipped(), 1u);
  eth->Set("bond0", {{"rx_prio3_pause_duration", 1'100'000}});
  now += 0.2;
  c.Collect(sink);  // new baseline after the failed read
  sink.Take();
  eth->SetCounter("bond0", "rx_prio3_pause_duration", 1'120'000);
  now += 0.2;
  c.Collect(sink);
  EXPECT_NEAR(*PfcPeak(sink.Take(), "3", "rx"), 0.1, 1e-9);
}

TEST(CongestionRegistryTest, Registered) {
  const auto names = CollectorNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "congestion"), names.end());
  CollectorEnv env;
  env.sysfs = std::make_shared<testing::FakeSysfs>();
  auto c = MakeCollector("congestion", env);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Name(), "congestion");
}

// The congestion collector reads `rate` and counters with sysfs_parse's
// parsers: the forms it meets on real trees.
TEST(CongestionParseTest, RateAndCounterForms) {
  EXPECT_EQ(ParseRate("400 Gb/sec (4X NDR)\n").value.bytes_per_second, 50e9);
  EXPECT_EQ(ParseRate("2.5 Gb/sec (1X SDR)\n").value.bytes_per_second,
            312'500'000.0);
  EXPECT_EQ(ParseRate("25 Gb/sec").value.bytes_per_second, 3'125'000'000.0);
  for (std::string_view bad : {"", "fast", "x Gb/sec", "100 Mb/sec"}) {
    EXPECT_FALSE(ParseRate(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseU64("123\n").value, 123u);
  EXPECT_EQ(ParseU64("18446744073709551615").value, UINT64_MAX);
  for (std::string_view bad : {"N/A (no PMA)\n", "", "-1", "12abc"}) {
    EXPECT_FALSE(ParseU64(bad).ok()) << bad;
  }
}

CongestionSample Wait(double t, std::uint64_t ticks) {
  CongestionSample s;
  s.time_seconds = t;
  s.xmit_wait_ticks = ticks;
  return s;
}

TEST(CongestionWindowTest, IntervalEdgeCases) {
  auto peak_after = [](CongestionSample a, CongestionSample b) {
    PortWindow w(10, 1e-3);
    w.Add(a);
    w.Add(b);
    return w.Peaks(b.time_seconds).transmit_wait;
  };
  CongestionSample a = Wait(1, 10);
  CongestionSample b = Wait(1, 20);
  EXPECT_FALSE(peak_after(a, b));  // no time passed
  b.time_seconds = 2;
  EXPECT_NEAR(*peak_after(a, b), 0.01, 1e-12);
  b.xmit_wait_ticks = 1'000'000;  // more than the interval: clamped
  EXPECT_EQ(*peak_after(a, b), 1.0);
  b.xmit_wait_ticks.reset();
  EXPECT_FALSE(peak_after(a, b));
}

// A counter left out of a poll (`polled`) keeps its baseline: its next
// read spans the polls it missed, and a missed poll is not a failed read.
// It turns hot when an interval fills quiet_ratio of one sample, for one
// window.
TEST(CongestionWindowTest, UnpolledCounterKeepsItsBaselineAndHeats) {
  PortWindow w(10, 1e-3, {0.1, 0.05});
  EXPECT_FALSE(w.Hot(kXmitWait, 0));
  w.Add(Wait(0, 0));
  CongestionSample skipped = Wait(0.5, 0);
  skipped.xmit_wait_ticks.reset();
  skipped.polled = kAllCongestionCounters & ~CounterBit(kXmitWait);
  w.Add(skipped);
  // 4 ms of waiting over 1 s: under 5 % of a 100 ms sample (5 ms).
  w.Add(Wait(1, 4));
  EXPECT_NEAR(w.Peaks(1).transmit_wait.value_or(-1), 0.004, 1e-12);
  EXPECT_FALSE(w.Hot(kXmitWait, 1));
  // 6 ms in the next second: hot until one window (10 s) after it.
  w.Add(Wait(2, 10));
  EXPECT_TRUE(w.Hot(kXmitWait, 2));
  EXPECT_TRUE(w.Hot(kXmitWait, 11.9));
  EXPECT_FALSE(w.Hot(kXmitWait, 12));
  EXPECT_FALSE(w.Hot(kXmitData, 2));  // never read
  // quiet_ratio 0: every counter always.
  EXPECT_TRUE(PortWindow(10, 1e-3).Hot(kXmitData, 0));
}

TEST(CongestionWindowTest, SaturatedTransmitWaitIsUnknownNotCalm) {
  // 32-bit PortXmitWait stuck at its maximum: no ratio, rather than 0.
  auto peak_after = [](CongestionSample a, CongestionSample b) {
    PortWindow w(10, 1e-3);
    w.Add(a);
    w.Add(b);
    return w.Peaks(b.time_seconds).transmit_wait;
  };
  EXPECT_FALSE(peak_after(Wait(1, 4294967295), Wait(2, 4294967295)));
  EXPECT_FALSE(peak_after(Wait(1, 4294967000), Wait(2, 4294967295)));
  EXPECT_TRUE(peak_after(Wait(1, 4294967000), Wait(2, 4294967294)));
}

// A port sending at 42 % of its line rate whose data counter moves in
// steps (firmware refreshing it every `step` s, at `phase` + k * step, the
// k-th step `jitter(k)` late), polled every 100 ms. Returns the transmit
// utilisation peak over the last 20 s of a 30 s run.
double SteppedPeak(double step, double phase,
                   const std::function<double(int)>& jitter) {
  const double rate = 50e9, load = 0.42;
  PortWindow w(20, 1e-3);
  for (int j = 0; j <= 300; ++j) {
    const double t = 0.1 * j;
    // The last step at or before t, and what it carried: the traffic up
    // to its nominal time.
    std::uint64_t words = 0;
    for (int k = 0;; ++k) {
      const double at = phase + k * step;
      if (at + jitter(k) > t) break;
      words = static_cast<std::uint64_t>(at * rate * load / 4);
    }
    CongestionSample s;
    s.time_seconds = t;
    s.xmit_data_words = words;
    s.rate_bytes_per_second = rate;
    w.Add(s);
  }
  return *w.Peaks(30).transmit_utilization;
}

// Issue 26: a counter refreshed every 200 ms read every 100 ms showed
// twice its utilisation (one poll saw a step, the next none). The peak is
// the step's traffic over the time it accumulated in, whatever the phase.
TEST(CongestionWindowTest, CounterSteppingEvery200msReadsItsTrueRate) {
  for (double phase : {0.01, 0.05, 0.09}) {
    EXPECT_NEAR(SteppedPeak(0.2, phase, [](int) { return 0.0; }), 0.42, 1e-3)
        << phase;
  }
  // Steps that land on the poll and slip across it now and then (late by
  // 1 ms every third step): seen 300 ms then 100 ms after the last.
  EXPECT_NEAR(
      SteppedPeak(0.2, 0.1, [](int k) { return k % 3 == 0 ? 0.001 : -0.001; }),
      0.42, 1e-3);
}

// Two updates in one poll interval: a counter refreshed every 100 ms in
// lock step with the 100 ms poll, its refresh landing just after the poll
// every fourth time, so that poll sees no step and the next sees two.
TEST(CongestionWindowTest, TwoUpdatesInOnePollIntervalAreNotTwiceTheRate) {
  EXPECT_NEAR(
      SteppedPeak(0.1, 0.1, [](int k) { return k % 4 == 0 ? 0.001 : -0.001; }),
      0.42, 1e-3);
}

// A counter that moves at every poll keeps the per-poll ratio, and one that
// starts moving after sitting still shows its first poll's rate in full
// (not spread over the idle time).
TEST(CongestionWindowTest, ContinuousCounterKeepsThePerPollRatio) {
  PortWindow w(100, 1e-3);
  std::uint64_t wait = 0;
  for (int j = 0; j <= 50; ++j) {
    if (j > 40) wait += 70;  // 0.7 of 100 ms from poll 41 on
    w.Add(Wait(0.1 * j, wait));
    if (j == 40) EXPECT_EQ(w.Peaks(0.1 * j).transmit_wait.value(), 0);
    // The first poll that moved: its 100 ms, not the 4 s it sat still.
    if (j == 41) EXPECT_NEAR(*w.Peaks(0.1 * j).transmit_wait, 0.7, 1e-9);
  }
  EXPECT_NEAR(*w.Peaks(5).transmit_wait, 0.7, 1e-9);
}

// Issue 42: the seconds a host port could not send, summed over the polls
// (a counter), skipping a decrease and a saturated interval; absent until
// an interval had it.
TEST(CongestionWindowTest, WaitSecondsAccumulateAndSkipBadIntervals) {
  PortWindow w(10, 1e-3);  // 1 ms per tick
  w.Add(Wait(1, 100));
  EXPECT_FALSE(w.wait_seconds_total());
  w.Add(Wait(2, 400));  // 300 ticks: 0.3 s
  EXPECT_NEAR(*w.wait_seconds_total(), 0.3, 1e-9);
  w.Add(Wait(3, 50));   // went backwards: skipped
  w.Add(Wait(4, 250));  // 200 ticks: 0.2 s
  EXPECT_NEAR(*w.wait_seconds_total(), 0.5, 1e-9);
  w.Add(Wait(5, 4294967295));  // saturated: unknown, skipped
  EXPECT_NEAR(*w.wait_seconds_total(), 0.5, 1e-9);
  // A tick too long for the interval cannot claim more than the interval.
  PortWindow longer(10, 1);
  longer.Add(Wait(1, 0));
  longer.Add(Wait(2, 5));
  EXPECT_NEAR(*longer.wait_seconds_total(), 1, 1e-9);
}

TEST(CongestionWindowTest, PeakIsMaxOfIntervalsInWindow) {
  PortWindow w(10, 1e-3);
  w.Add(Wait(0, 0));
  w.Add(Wait(1, 300));   // 0.3
  w.Add(Wait(2, 1000));  // 0.7
  w.Add(Wait(3, 1100));  // 0.1
  EXPECT_NEAR(*w.Peaks(3).transmit_wait, 0.7, 1e-9);
  EXPECT_NEAR(*w.Peaks(11.5).transmit_wait, 0.7, 1e-9);
  EXPECT_NEAR(*w.Peaks(12.5).transmit_wait, 0.1, 1e-9);
  EXPECT_FALSE(w.Peaks(13.5).transmit_wait);
  w.Expire(13.5);
  EXPECT_FALSE(w.Peaks(13.5).transmit_wait);
}
// The ratios between two samples (every counter moved since the first).
IntervalRatios TwoSample(const CongestionSample& a, const CongestionSample& b,
                         double tick) {
  IntervalRatios r;
  r.end_seconds = b.time_seconds;
  const double dt = b.time_seconds - a.time_seconds;
  auto delta = [](std::optional<std::uint64_t> x,
                  std::optional<std::uint64_t> y) -> std::optional<double> {
    if (!x || !y || *y < *x) return std::nullopt;
    return static_cast<double>(*y - *x);
  };
  const double rate = *b.rate_bytes_per_second;
  if (auto d = delta(a.xmit_data_words, b.xmit_data_words)) {
    r.transmit_utilization = std::min(1.0, *d * 4 / (rate * dt));
  }
  if (auto d = delta(a.rcv_data_words, b.rcv_data_words)) {
    r.receive_utilization = std::min(1.0, *d * 4 / (rate * dt));
  }
  if (auto d = delta(a.xmit_wait_ticks, b.xmit_wait_ticks)) {
    r.transmit_wait = std::min(1.0, *d * tick / dt);
  }
  if (auto d = delta(a.cnp_handled, b.cnp_handled)) {
    r.cnp_handled_per_second = *d / dt;
  }
  if (auto d = delta(a.cnp_sent, b.cnp_sent)) r.cnp_sent_per_second = *d / dt;
  return r;
}

// The peaks come from per-field monotonic queues; asked at or after the
// latest interval (as the collector asks, every poll) they must equal the
// definition: max over the intervals that ended in (now - window, now].
TEST(CongestionWindowTest, PeaksEqualMaxOverIntervalsInWindow) {
  std::mt19937 random(7);
  auto maybe = [&](std::uint64_t v) -> std::optional<std::uint64_t> {
    if (random() % 10 == 0) return std::nullopt;  // unreadable this poll
    return v;
  };
  PortWindow w(2.0, 1e-3);
  CounterPeakWindow pfc(2.0, 1e-3);
  std::vector<IntervalRatios> all;
  std::vector<std::pair<double, double>> pfc_all;  // end, ratio
  std::optional<CongestionSample> last;
  bool pfc_has_last = false;  // the last PFC value was readable
  double pfc_last_t = 0;
  std::uint64_t pfc_last = 0;
  std::uint64_t data = 0, wait = 0, cnp = 0, pause = 0;
  double t = 0;
  for (int i = 0; i < 400; ++i) {
    t += 0.05 + (random() % 100) / 1000.0;
    // Every counter moves at every poll (so each interval's ratio is the
    // two-sample one: see the stepped-counter tests for the rest).
    data += 2 + random() % 50'000'000;
    wait += 1 + random() % 200;
    cnp += 3 + random() % 1000;
    // Now and then a counter goes backwards (reset): skipped interval.
    if (random() % 40 == 0) wait = random() % 10;
    pause += 1 + random() % 500;
    CongestionSample s;
    s.time_seconds = t;
    s.xmit_data_words = maybe(data);
    s.rcv_data_words = maybe(data / 2);
    s.xmit_wait_ticks = maybe(wait);
    s.cnp_handled = maybe(cnp);
    s.cnp_sent = maybe(cnp / 3);
    s.rate_bytes_per_second = 50e9;
    if (last) all.push_back(TwoSample(*last, s, 1e-3));
    last = s;
    w.Add(s);
    const auto p = maybe(pause);
    if (p && pfc_has_last && *p >= pfc_last) {
      pfc_all.emplace_back(
          t, std::min(1.0, (*p - pfc_last) * 1e-3 / (t - pfc_last_t)));
    }
    pfc_has_last = p.has_value();
    if (p) {
      pfc_last = *p;
      pfc_last_t = t;
    }
    pfc.Add(t, p);
    // Ask at the latest end and a little after it (the collector asks at
    // its monotonic now, never before the last poll).
    for (double now : {t, t + 0.7}) {
      const double from = now - 2.0;
      CongestionPeaks want;
      std::optional<double> want_pfc;
      for (const auto& r : all) {
        if (r.end_seconds <= from || r.end_seconds > now) continue;
        auto max = [](std::optional<double>& m, std::optional<double> v) {
          if (v && (!m || *v > *m)) m = v;
        };
        max(want.transmit_utilization, r.transmit_utilization);
        max(want.receive_utilization, r.receive_utilization);
        max(want.transmit_wait, r.transmit_wait);
        max(want.cnp_handled_per_second, r.cnp_handled_per_second);
        max(want.cnp_sent_per_second, r.cnp_sent_per_second);
      }
      for (const auto& [end, ratio] : pfc_all) {
        if (end <= from || end > now) continue;
        if (!want_pfc || ratio > *want_pfc) want_pfc = ratio;
      }
      const CongestionPeaks got = w.Peaks(now);
      SCOPED_TRACE(::testing::Message() << "poll " << i << " now " << now);
      EXPECT_EQ(got.transmit_utilization, want.transmit_utilization);
      EXPECT_EQ(got.receive_utilization, want.receive_utilization);
      EXPECT_EQ(got.transmit_wait, want.transmit_wait);
      EXPECT_EQ(got.cnp_handled_per_second, want.cnp_handled_per_second);
      EXPECT_EQ(got.cnp_sent_per_second, want.cnp_sent_per_second);
      EXPECT_EQ(pfc.Peak(now), want_pfc);
    }
  }
}

}  // namespace
}  // namespace fabric
