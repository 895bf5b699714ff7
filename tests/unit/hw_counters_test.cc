// hw_counters collector on the recorded and synthetic trees, and the 32-bit
// Q-counter unwrapping (first sample, wrap, reset, device reappearing).
#include "collectors/hw_counters.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using testing::RunOnTree;

TEST(HwCountersTest, ProcfsTreeMlx5) {
  auto c = RunOnTree(MakeHwCountersCollector, "real/sysfs");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  const std::map<std::string, std::string> port = {{"device", "mlx5_0"},
                                                   {"port", "1"}};
  // 25 files minus lifespan.
  EXPECT_EQ(c.Find("fabric_hw_counters_total", port).size(), 24u);
  EXPECT_TRUE(
      c.Find("fabric_hw_counters_total", {{"counter", "lifespan"}}).empty());
  auto with = [&](const char* counter) {
    auto labels = port;
    labels["counter"] = counter;
    return labels;
  };
  EXPECT_EQ(c.Value("fabric_hw_counters_total", with("rx_read_requests")),
            175528982.0);
  EXPECT_EQ(c.Value("fabric_hw_counters_total", with("resp_cqe_error")),
            8109.0);
  EXPECT_EQ(c.Value("fabric_roce_out_of_sequence_total", port), 1.0);
  EXPECT_EQ(c.Value("fabric_roce_packet_sequence_errors_total", port), 1.0);
  EXPECT_EQ(c.Value("fabric_roce_local_ack_timeout_errors_total", port), 131.0);
  EXPECT_EQ(c.Value("fabric_roce_adaptive_retransmissions_total", port), 99.0);
  EXPECT_EQ(c.Value("fabric_roce_slow_restarts_total", port), 0.0);
  // This mlx5 has no congestion counters: absent, not zero.
  EXPECT_EQ(c.Family("fabric_roce_cnp_sent_total"), nullptr);
  // mlx4_0 and hfi1_0 have no hw_counters/: nothing, and no skips.
  EXPECT_TRUE(
      c.Find("fabric_hw_counters_total", {{"device", "mlx4_0"}}).empty());
}

TEST(HwCountersTest, H100Tree) {
  auto c = RunOnTree(MakeHwCountersCollector, "real/sysfs-gpud-h100");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_EQ(
      c.Find("fabric_hw_counters_total", {{"counter", "rx_write_requests"}})
          .size(),
      9u);
  EXPECT_EQ(
      c.Value("fabric_hw_counters_total",
              {{"device", "mlx5_bond_0"}, {"counter", "rx_icrc_encapsulated"}}),
      0.0);
  EXPECT_EQ(c.Value("fabric_hw_counters_total",
                    {{"device", "mlx5_4"}, {"counter", "rx_write_requests"}}),
            3809045607.0);
  EXPECT_EQ(c.Value("fabric_roce_adaptive_retransmissions_total",
                    {{"device", "mlx5_bond_0"}}),
            3.0);
}

TEST(HwCountersTest, SyntheticCongestionAndDeviceLevel) {
  auto c = RunOnTree(MakeHwCountersCollector, "synthetic/sysfs-roce");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  const std::map<std::string, std::string> port = {{"device", "mlx5_2"},
                                                   {"port", "1"}};
  EXPECT_EQ(c.Value("fabric_roce_cnp_sent_total", port), 1203344.0);
  EXPECT_EQ(c.Value("fabric_roce_cnp_handled_total", port), 998877.0);
  EXPECT_EQ(c.Value("fabric_roce_cnp_ignored_total", port), 3.0);
  EXPECT_EQ(c.Value("fabric_roce_ecn_marked_packets_total", port), 1500321.0);
  EXPECT_EQ(c.Value("fabric_roce_slow_restarts_total", port), 2.0);
  EXPECT_EQ(
      c.Value("fabric_device_hw_counters_total",
              {{"device", "mlx5_2"}, {"counter", "synthetic_device_counter"}}),
      8.0);
  // Device-level series carry no port label.
  EXPECT_EQ(
      c.Label("fabric_device_hw_counters_total",
              {{"device", "mlx5_2"}, {"counter", "out_of_buffer"}}, "port"),
      "<absent>");
}

TEST(Q32UnwrapperTest, FirstSampleWrapAndReset) {
  Q32Unwrapper u;
  // First sample is exported as read, even when large.
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 4294967290u), 4294967290u);
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 4294967295u), 4294967295u);
  // Wrap: 4294967295 -> 5 means 6 more events.
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 5), 4294967296u + 5);
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 100), 4294967296u + 100);
  // A second wrap adds another 2^32.
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 3000000000u),
            4294967296u + 3000000000u);
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 1), 2 * 4294967296u + 1);
  // A drop from the lower half cannot be a wrap within one poll: a reset.
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 0), 0u);
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 7), 7u);
  // Nor can a small drop within the upper half (it would imply ~2^32).
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 3000000000u), 3000000000u);
  EXPECT_EQ(u.Update("mlx5_0", "1/out_of_sequence", 2900000000u), 2900000000u);
  // Keys are independent.
  EXPECT_EQ(u.Update("mlx5_0", "1/packet_seq_err", 3), 3u);
  // A value above 32 bits is passed through.
  EXPECT_EQ(u.Update("mlx5_0", "1/packet_seq_err", 1ull << 40), 1ull << 40);
  EXPECT_EQ(u.size(), 2u);
  u.Retain({});
  EXPECT_EQ(u.size(), 0u);
}

// End to end through the collector on a temp tree whose file changes between
// collections, including the device disappearing and coming back.
class HwCountersWrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path();
    dev_ = root_ / "class/infiniband/mlx5_0";
    Write("4294967000", "9");
  }

  void Write(const std::string& q32, const std::string& cnp) {
    fs::create_directories(dev_ / "ports/1/hw_counters");
    std::ofstream(dev_ / "ports/1/hw_counters/out_of_sequence") << q32 << "\n";
    std::ofstream(dev_ / "ports/1/hw_counters/np_cnp_sent") << cnp << "\n";
  }

  double OutOfSequence(Collector& collector) {
    auto c = testing::Run(collector);
    EXPECT_TRUE(c.ok);
    auto v =
        c.Value("fabric_roce_out_of_sequence_total", {{"device", "mlx5_0"}});
    EXPECT_EQ(v,
              c.Value("fabric_hw_counters_total",
                      {{"device", "mlx5_0"}, {"counter", "out_of_sequence"}}));
    return v.value_or(-1);
  }

  testing::TempDir tmp_{"fabricmon_hw_wrap"};
  fs::path root_, dev_;
};

TEST_F(HwCountersWrapTest, WrapThenDeviceReappears) {
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(root_.string());
  auto collector = MakeHwCountersCollector(env, {});
  EXPECT_EQ(OutOfSequence(*collector), 4294967000.0);
  Write("200", "10");  // wrapped: +296 +200
  EXPECT_EQ(OutOfSequence(*collector), 4294967296.0 + 200);
  Write("300", "11");
  EXPECT_EQ(OutOfSequence(*collector), 4294967296.0 + 300);
  // 64-bit congestion counters are not unwrapped.
  {
    auto c = testing::Run(*collector);
    EXPECT_EQ(c.Value("fabric_roce_cnp_sent_total", {{"device", "mlx5_0"}}),
              11.0);
  }
  // Device goes away (driver reload): no samples, state dropped.
  fs::remove_all(dev_);
  {
    auto c = testing::Run(*collector);
    EXPECT_TRUE(c.ok);
    EXPECT_EQ(c.Family("fabric_hw_counters_total"), nullptr);
  }
  // Back with fresh counters: exported as read, a genuine reset.
  Write("12", "0");
  EXPECT_EQ(OutOfSequence(*collector), 12.0);
}

}  // namespace
}  // namespace fabric

namespace fabric {
namespace {

// Issue 44 item 3: a counter whose every series the config drops is never
// read; one whose dedicated metric is kept still is.
TEST(HwCountersFilterTest, ExcludedCountersAreNotRead) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string dir = "class/infiniband/mlx5_0/ports/1/hw_counters/";
  fs->File(dir + "np_cnp_sent", "9\n");
  fs->File(dir + "rx_write_requests", "5\n");
  fs->File(dir + "out_of_sequence", "3\n");
  fs->File("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  CollectorEnv env;
  env.sysfs = fs;
  CollectorConfig config;
  config.series = CounterFilter(
      {}, {"rx_write_requests", "out_of_sequence", "fabric_hw_counters_total"});
  auto collector = MakeHwCountersCollector(env, config);
  auto c = testing::Run(*collector);
  EXPECT_TRUE(c.ok);
  EXPECT_GT(fs->Reads(dir + "np_cnp_sent"), 0);
  EXPECT_EQ(fs->Reads(dir + "rx_write_requests"), 0);
  EXPECT_EQ(c.Value("fabric_roce_cnp_sent_total", {{"device", "mlx5_0"}}), 9.0);
  // out_of_sequence's own metric is not excluded: it is read.
  EXPECT_TRUE(
      c.Value("fabric_roce_out_of_sequence_total", {{"device", "mlx5_0"}}));
}

}  // namespace
}  // namespace fabric
