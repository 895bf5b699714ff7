// `fabricmon --simulate=SCENARIO --once`: the daemon binary on its built-in
// simulated host reads the simulated NIC's ethtool statistics (the dumps
// the simulator writes to <tree>/ethtool/, config ethtool_dir set by
// --simulate), so the PFC metrics exist: pfc-storm shows the storm's pause
// frames and storm events, steady shows the same series at zero.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "simulator/timeline.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"

namespace fabric {
namespace {

const std::string kTx =
    "{device=\"mlx5_bond_0\",direction=\"tx\",netdev=\"bond0\",port=\"1\","
    "priority=\"3\"}";
const std::string kStormError =
    "{device=\"mlx5_bond_0\",level=\"error\",netdev=\"bond0\",port=\"1\"}";
const std::string kStormWarning =
    "{device=\"mlx5_bond_0\",level=\"warning\",netdev=\"bond0\",port=\"1\"}";

std::map<std::string, double> SimulateOnce(const std::string& scenario) {
  const auto r = testing::RunCommand(testing::Binary("fabricmon") +
                                     " --simulate=" + scenario +
                                     " --once --config /dev/null 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << scenario;
  return testing::ParseSamples(r.out);
}

double At(const std::map<std::string, double>& samples,
          const std::string& series) {
  auto it = samples.find(series);
  if (it == samples.end()) {
    ADD_FAILURE() << "no series " << series;
    return -1;
  }
  return it->second;
}

class SimulateOnceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(testing::Binary("fabricmon").c_str(), X_OK) != 0) {
      MISSING_DEPENDENCY("fabricmon is not built");
    }
  }
};

TEST_F(SimulateOnceTest, PfcStormShowsPauseFramesAndStormEvents) {
  const auto s = SimulateOnce("pfc-storm");
  // The storm ran 8 s of the 60 s of simulated history: one pause frame per
  // 100 us sent on priority 3 while it lasted, then the NIC gave up.
  EXPECT_GT(At(s, "fabric_pfc_pause_frames_total" + kTx), 10000);
  EXPECT_GT(At(s, "fabric_pfc_pause_duration_seconds_total" + kTx), 1);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormWarning), 1);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormError), 1);
  EXPECT_EQ(At(s, "fabric_collector_success{collector=\"roce\"}"), 1);
  EXPECT_EQ(At(s, "fabric_collector_skipped_inputs{collector=\"roce\"}"), 0);
  EXPECT_EQ(At(s, "fabric_collector_success{collector=\"congestion\"}"), 1);
  EXPECT_EQ(At(s,
               "fabric_roce_netdev_info{device=\"mlx5_bond_0\","
               "driver=\"\",netdev=\"bond0\",port=\"1\"}"),
            1);
}

TEST_F(SimulateOnceTest, SteadyHasTheSameSeriesAtZero) {
  const auto s = SimulateOnce("steady");
  EXPECT_EQ(At(s, "fabric_pfc_pause_frames_total" + kTx), 0);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormError), 0);
  // Traffic on the RoCE priority is there, so the dumps are live data.
  EXPECT_GT(At(s,
               "fabric_roce_priority_bytes_total{device=\"mlx5_bond_0\","
               "direction=\"tx\",netdev=\"bond0\",port=\"1\",priority=\"3\"}"),
            0);
}

// Every scenario and every shipped timeline: one exposition each, in which
// no series appears twice (SimulateOnce parses through ParseSamples, which
// checks that: tests/support/exposition.h) and the collectors all report.
TEST_F(SimulateOnceTest, EveryScenarioWritesEachSeriesOnce) {
  std::vector<std::string> runs = sim::ScenarioNames();
  for (const auto& entry : std::filesystem::directory_iterator(
           testing::SourceDir() + "/scenarios")) {
    if (entry.path().extension() == ".yaml") runs.push_back(entry.path());
  }
  for (const auto& scenario : runs) {
    SCOPED_TRACE(scenario);
    const auto s = SimulateOnce(scenario);
    EXPECT_EQ(At(s, "fabric_collector_success{collector=\"ib_port\"}"), 1);
  }
}

}  // namespace
}  // namespace fabric
