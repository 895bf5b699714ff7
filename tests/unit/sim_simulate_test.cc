// `fabricmon --simulate`'s seam: StartSimulation renders one live host into
// a private directory and removes it when done.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/simulate.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  std::string s;
  std::getline(in, s);
  return s;
}

TEST(SimSimulate, RendersALiveHostAndCleansUp) {
  std::string error;
  auto sim = StartSimulation("congestion-hotspot", &error);
  ASSERT_NE(sim, nullptr) << error;
  const fs::path root = sim->sysfs_root();
  const fs::path wait =
      root / "class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait";
  ASSERT_TRUE(fs::exists(wait));
  EXPECT_TRUE(fs::exists(root / "class/infiniband/mlx5_bond_0"));
  EXPECT_TRUE(fs::exists(root / "class/net/bond0/ecn/roce_np/enable/3"));
  // The RoCE netdev's ethtool dump, where --simulate points ethtool_dir.
  EXPECT_EQ(fs::path(sim->ethtool_dir()), root / "ethtool");
  EXPECT_TRUE(fs::is_regular_file(root / "ethtool/bond0"));
  // The tree moves: wait (bounded, no timing assertion) for the victim's
  // transmit-wait to leave zero.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Read(wait) == "0" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(Read(wait), "0");
  sim.reset();
  EXPECT_FALSE(fs::exists(root));
}

TEST(SimSimulate, EmptyMeansSteady) {
  std::string error;
  auto sim = StartSimulation("", &error);
  ASSERT_NE(sim, nullptr) << error;
  EXPECT_TRUE(fs::exists(fs::path(sim->sysfs_root()) / "class/infiniband"));
}

TEST(SimSimulate, UnknownScenarioIsAnError) {
  std::string error;
  EXPECT_EQ(StartSimulation("meltdown", &error), nullptr);
  EXPECT_NE(error.find("unknown scenario 'meltdown'"), std::string::npos);
  EXPECT_NE(error.find("pfc-storm"), std::string::npos);
  EXPECT_EQ(StartSimulation("/nonexistent/timeline.yaml", &error), nullptr);
  EXPECT_NE(error.find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace fabric
