// benchtool/host_counters.h: the counters a bench agent reads around each
// iteration, on a fake tree with two IB ports, two RoCE ports on one bond
// and an ethtool source.
#include <gtest/gtest.h>

#include <map>

#include "benchtool/host_counters.h"
#include "tests/support/fake_ethtool.h"
#include "tests/support/fake_sysfs.h"

namespace fabric::bench {
namespace {

std::map<std::string, std::uint64_t> Read(const CounterSource& source) {
  auto reading = source();
  return {reading.begin(), reading.end()};
}

TEST(HostCounters, SumsSysfsCountersAndPausesOfEachNetdevOnce) {
  auto sysfs = std::make_shared<testing::FakeSysfs>();
  const std::string ib = "class/infiniband/mlx5_0/ports/";
  sysfs->File(ib + "1/counters/port_xmit_wait", "100\n");
  sysfs->File(ib + "2/counters/port_xmit_wait", "5\n");
  sysfs->Fail(ib + "1/gid_attrs/ndevs/0", EINVAL);  // IB: no netdev
  const std::string roce = "class/infiniband/mlx5_bond_0/ports/";
  for (const char* port : {"1", "2"}) {
    sysfs->File(roce + port + "/hw_counters/np_cnp_sent", "7\n");
    sysfs->File(roce + port + "/hw_counters/rp_cnp_handled", "3\n");
    sysfs->File(roce + port + "/gid_attrs/ndevs/0", "bond0\n");
  }
  auto ethtool = std::make_shared<testing::FakeEthtool>();
  EthtoolStats stats;
  stats.names = {"rx_prio3_pause",    "tx_prio3_pause",
                 "rx_prio0_pause",    "rx_prio3_pause_duration",
                 "rx_pause_ctrl_phy", "rx_prio3_pause_transition"};
  stats.values = {10, 4, 1, 999, 50, 2};
  ethtool->results.emplace("bond0", stats);

  auto counters = Read(HostCounterSource(sysfs, ethtool));
  EXPECT_EQ(counters["xmit_wait"], 105u);
  EXPECT_EQ(counters["cnp_sent"], 14u);
  EXPECT_EQ(counters["cnp_handled"], 6u);
  // Per-priority pause frames only (not durations, transitions or the
  // global pause counter), and bond0 once although two ports show it.
  EXPECT_EQ(counters["pfc_pause_rx"], 11u);
  EXPECT_EQ(counters["pfc_pause_tx"], 4u);
  EXPECT_EQ(*ethtool->calls, (std::vector<std::string>{"bond0"}));
}

TEST(HostCounters, WhatNoPortProvidesIsAbsent) {
  auto sysfs = std::make_shared<testing::FakeSysfs>();
  sysfs->File("class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait",
              "not a number\n");
  auto ethtool =
      std::make_shared<testing::FakeEthtool>();  // every netdev: ENODEV
  EXPECT_TRUE(Read(HostCounterSource(sysfs, ethtool)).empty());
  EXPECT_TRUE(Read(HostCounterSource(sysfs, nullptr)).empty());
  sysfs->File("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth9\n");
  EXPECT_TRUE(Read(HostCounterSource(sysfs, ethtool)).empty());
  EXPECT_EQ(*ethtool->calls, (std::vector<std::string>{"eth9"}));
}

}  // namespace
}  // namespace fabric::bench
