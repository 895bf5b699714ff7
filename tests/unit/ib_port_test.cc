// ib_port collector on the recorded trees (tests/fixtures/real) and the
// hand-written RoCE/IB tree (tests/fixtures/synthetic/sysfs-roce), asserting
// concrete values.
#include "collectors/ib_port.h"

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

using testing::RunOnTree;

TEST(IbPortTest, ProcfsTreeMlx4AndHfi1AndMlx5) {
  auto c = RunOnTree(MakeIbPortCollector, "real/sysfs");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u) << (c.reasons.empty() ? "" : c.reasons[0]);
  // procfs class_infiniband_test.go: port_rcv_data 2221223609 -> 8884894436.
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total",
                    {{"device", "mlx4_0"}, {"port", "1"}}),
            8884894436.0);
  EXPECT_EQ(c.Value("fabric_port_transmit_bytes_total",
                    {{"device", "mlx4_0"}, {"port", "1"}}),
            26509113295.0 * 4);
  EXPECT_EQ(c.Value("fabric_port_receive_packets_total",
                    {{"device", "mlx4_0"}, {"port", "2"}}),
            89332064.0);
  EXPECT_EQ(c.Value("fabric_port_transmit_wait_total",
                    {{"device", "mlx4_0"}, {"port", "2"}}),
            3846.0);
  EXPECT_EQ(
      c.Value("fabric_port_errors_total",
              {{"device", "mlx4_0"}, {"port", "1"}, {"error", "VL15_dropped"}}),
      0.0);
  // 12 PortCounters error files per port on mlx4_0.
  EXPECT_EQ(
      c.Find("fabric_port_errors_total", {{"device", "mlx4_0"}, {"port", "1"}})
          .size(),
      12u);
  EXPECT_EQ(c.Value("fabric_port_rate_bytes_per_second",
                    {{"device", "mlx4_0"}, {"port", "1"}}),
            5e9);
  EXPECT_EQ(c.Value("fabric_port_link_width_lanes",
                    {{"device", "mlx4_0"}, {"port", "1"}}),
            4.0);
  // "InfiniBand\n\n" in the recorded file.
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx4_0"}, {"port", "2"}},
                    "link_layer"),
            "InfiniBand");
  // Omni-Path hfi1 (no hca_type) is collected like the others.
  EXPECT_EQ(c.Value("fabric_port_state", {{"device", "hfi1_0"}, {"port", "1"}}),
            4.0);
  EXPECT_EQ(c.Value("fabric_port_physical_state",
                    {{"device", "hfi1_0"}, {"port", "1"}}),
            5.0);
  EXPECT_EQ(c.Value("fabric_port_rate_bytes_per_second",
                    {{"device", "hfi1_0"}, {"port", "1"}}),
            12.5e9);
  EXPECT_EQ(c.Label("fabric_device_info", {{"device", "hfi1_0"}}, "hca_type"),
            "");
  // mlx5_0/node_guid has no trailing newline.
  EXPECT_EQ(c.Label("fabric_device_info", {{"device", "mlx5_0"}}, "node_guid"),
            "0x0a7fbc1245efd23b");
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx5_0"}, {"port", "1"}},
                    "node_guid"),
            "0x0a7fbc1245efd23b");
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx5_0"}, {"port", "1"}},
                    "fw_ver"),
            "14.28.2006");
  EXPECT_EQ(c.Value("fabric_port_unicast_transmit_packets_total",
                    {{"device", "mlx5_0"}, {"port", "1"}}),
            10907922116.0);
  // phys_state "4: ACTIVE" in the recorded mlx5_0 tree: the number counts.
  EXPECT_EQ(c.Value("fabric_port_physical_state",
                    {{"device", "mlx5_0"}, {"port", "1"}}),
            4.0);
  EXPECT_EQ(c.Family("fabric_device_info")->metric.size(), 3u);
  // Nothing saturated on this tree.
  for (const auto* m : c.Find("fabric_port_counters_saturated", {})) {
    EXPECT_EQ(m->gauge.value, 0.0);
  }
}

TEST(IbPortTest, NodeExporterTreeLegacyCountersExtAndNoPma) {
  auto c = RunOnTree(MakeIbPortCollector, "real/sysfs-node_exporter");
  ASSERT_TRUE(c.ok);
  // i40iw0: 17 counters read "N/A (no PMA)": each skipped and counted, the
  // port attributes still exported.
  EXPECT_EQ(c.skipped, 17u);
  EXPECT_TRUE(
      c.Find("fabric_port_errors_total", {{"device", "i40iw0"}}).empty());
  EXPECT_EQ(c.Value("fabric_port_state", {{"device", "i40iw0"}, {"port", "1"}}),
            4.0);
  EXPECT_EQ(c.Value("fabric_port_rate_bytes_per_second",
                    {{"device", "i40iw0"}, {"port", "1"}}),
            1.25e9);
  // counters_ext/port_rcv_data_64 replaces counters/port_rcv_data: one
  // series, the 64-bit value x 4 (node_exporter
  // legacy_data_received 1.8527668e+07).
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total",
                    {{"device", "mlx4_0"}, {"port", "2"}}),
            18527668.0);
  EXPECT_EQ(c.Value("fabric_port_multicast_receive_packets_total",
                    {{"device", "mlx4_0"}, {"port", "2"}}),
            93.0);
  EXPECT_EQ(
      c.Value("fabric_port_errors_total", {{"device", "mlx4_0"},
                                           {"port", "1"},
                                           {"error", "port_xmit_discards"}}),
      5.0);
  EXPECT_EQ(
      c.Value("fabric_port_errors_total", {{"device", "mlx4_0"},
                                           {"port", "1"},
                                           {"error", "port_rcv_discards"}}),
      0.0);
  // port_xmit_wait 4294967295 = 2^32-1: the 32-bit field is stuck.
  EXPECT_EQ(c.Value("fabric_port_transmit_wait_total",
                    {{"device", "mlx4_0"}, {"port", "1"}}),
            4294967295.0);
  EXPECT_EQ(
      c.Value(
          "fabric_port_counters_saturated",
          {{"device", "mlx4_0"}, {"port", "1"}, {"counter", "port_xmit_wait"}}),
      1.0);
  EXPECT_EQ(
      c.Value(
          "fabric_port_counters_saturated",
          {{"device", "mlx4_0"}, {"port", "1"}, {"counter", "link_downed"}}),
      0.0);
  EXPECT_EQ(c.Family("fabric_port_other_total"), nullptr);
}

TEST(IbPortTest, H100TreeNineDevicesBondIsEthernet) {
  auto c = RunOnTree(MakeIbPortCollector, "real/sysfs-gpud-h100");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_EQ(c.Family("fabric_device_info")->metric.size(), 9u);
  EXPECT_EQ(c.Family("fabric_port_info")->metric.size(), 9u);
  EXPECT_EQ(
      c.Label("fabric_port_info", {{"device", "mlx5_bond_0"}}, "link_layer"),
      "Ethernet");
  EXPECT_EQ(
      c.Label("fabric_port_info", {{"device", "mlx5_bond_0"}}, "hca_type"),
      "MT41692");
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx5_0"}}, "link_layer"),
            "InfiniBand");
  EXPECT_EQ(
      c.Value("fabric_port_rate_bytes_per_second", {{"device", "mlx5_0"}}),
      50e9);
  EXPECT_EQ(
      c.Value("fabric_port_link_width_lanes", {{"device", "mlx5_bond_0"}}),
      2.0);
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total", {{"device", "mlx5_0"}}),
            230539874932483.0 * 4);
  // mlx5_1: link_downed 255 (8-bit) and excessive_buffer_overrun_errors 15
  // (4-bit) are at their maximum.
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_1"}, {"counter", "link_downed"}}),
            1.0);
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_1"},
                     {"counter", "excessive_buffer_overrun_errors"}}),
            1.0);
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_0"}, {"counter", "link_downed"}}),
            0.0);
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_0"}, {"counter", "port_rcv_errors"}}),
            0.0);
}

TEST(IbPortTest, SyntheticTreeAttributesNetdevAndUnknownCounter) {
  auto c = RunOnTree(MakeIbPortCollector, "synthetic/sysfs-roce");
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  const std::map<std::string, std::string> roce = {{"device", "mlx5_2"},
                                                   {"port", "1"}};
  const std::map<std::string, std::string> ib = {{"device", "mlx5_3"},
                                                 {"port", "1"}};
  EXPECT_EQ(c.Label("fabric_port_info", roce, "netdev"), "ens1f0np0");
  EXPECT_EQ(c.Label("fabric_port_info", roce, "port_guid"),
            "0xba3fd2fffea1b2c0");
  EXPECT_EQ(c.Label("fabric_port_info", ib, "netdev"), "ib0");  // device/net
  EXPECT_EQ(c.Label("fabric_device_info", {{"device", "mlx5_3"}}, "node_desc"),
            "gpu-node-17 HCA-1");
  EXPECT_EQ(
      c.Label("fabric_device_info", {{"device", "mlx5_3"}}, "sys_image_guid"),
      "0xb83fd20300a1b2d0");
  EXPECT_EQ(c.Value("fabric_port_lid", ib), 31.0);
  EXPECT_EQ(c.Value("fabric_port_sm_lid", ib), 1.0);
  EXPECT_EQ(c.Value("fabric_port_sm_sl", ib), 0.0);
  EXPECT_EQ(c.Value("fabric_port_capability_mask", ib), double{0xa651e848});
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_3"}, {"counter", "symbol_error"}}),
            1.0);
  EXPECT_EQ(c.Value("fabric_port_counters_saturated",
                    {{"device", "mlx5_2"}, {"counter", "port_xmit_discards"}}),
            1.0);
  EXPECT_EQ(
      c.Value("fabric_port_other_total",
              {{"device", "mlx5_2"}, {"counter", "synthetic_future_counter"}}),
      42.0);
}

TEST(IbPortTest, DeviceFilterIncludeExclude) {
  DeviceFilter filter({"mlx5_.*"}, {"mlx5_bond_0"});
  auto c = testing::RunOn(
      MakeIbPortCollector,
      MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100")), filter);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Family("fabric_device_info")->metric.size(), 8u);
  EXPECT_TRUE(c.Find("fabric_port_info", {{"device", "mlx5_bond_0"}}).empty());
}

}  // namespace
}  // namespace fabric

namespace fabric {
namespace {

// Issue 44 item 3: a counter file none of whose series the config keeps is
// never read (the families and `error` names of collectors/ib_port.cc).
TEST(IbPortFilterTest, ExcludedCountersAreNotRead) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string port = "class/infiniband/mlx5_0/ports/1/";
  fs->File(port + "counters/port_xmit_data", "100\n");
  fs->File(port + "counters/symbol_error", "2\n");
  fs->File(port + "counters/link_downed", "1\n");
  fs->File(port + "counters_ext/port_xmit_data_64", "400\n");
  fs->File(port + "state", "4: ACTIVE\n");
  CollectorEnv env;
  env.sysfs = fs;
  CollectorConfig config;
  config.series =
      CounterFilter({}, {"fabric_port_transmit_bytes_total", "link_downed",
                         "fabric_port_counters_saturated"});
  auto collector = MakeIbPortCollector(env, config);
  auto c = testing::Run(*collector);
  EXPECT_GT(fs->Reads(port + "counters/symbol_error"), 0);
  EXPECT_EQ(fs->Reads(port + "counters/port_xmit_data"), 0);
  EXPECT_EQ(fs->Reads(port + "counters_ext/port_xmit_data_64"), 0);
  EXPECT_EQ(fs->Reads(port + "counters/link_downed"), 0);
  EXPECT_EQ(c.Value("fabric_port_errors_total",
                    {{"device", "mlx5_0"}, {"error", "symbol_error"}}),
            2.0);
}

}  // namespace
}  // namespace fabric
