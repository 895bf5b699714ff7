// fabricmon-bench's fabric guard end to end (issue 31): `run --local` with
// agents reading recorded or derived sysfs trees (--local-sysfs) so the host
// set spans two fabric classes. Without --allow-mixed the run is refused
// before any traffic, naming the odd host; with it the run completes and
// results.json and the report carry the warning. A uniform set runs as
// before and records its class.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::bench {
namespace {

const std::string kBench =
    std::string(FABRICMON_BINARY_DIR) + "/fabricmon-bench";

using testing::TempDir;

// Two agents on the H100 tree (8 InfiniBand rails + a RoCE rail), the third
// on the plain-RoCE tree.
std::string MixedRun(const std::string& out, const std::string& extra) {
  const std::string h100 = testing::Fixture("real/sysfs-gpud-h100");
  const std::string plain = testing::Fixture("synthetic/sysfs-plain-roce");
  return kBench +
         " run --pattern allreduce-ring --local 3 --local-loopback"
         " --sizes 1K,4K --iterations 2 --warmup 1 --local-sysfs " +
         h100 + "," + h100 + "," + plain + " --out " + out + " " + extra +
         " 2>&1";
}

TEST(BenchMixed, MixedHostSetIsRefusedNamingTheOddHost) {
  TempDir dir;
  auto run = testing::RunCommand(MixedRun(dir.path() + "/r.json", ""));
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("refused: the host set spans fabric classes"),
            std::string::npos)
      << run.out;
  // The odd one is rank 2 (the plain-RoCE host), named with its kinds.
  EXPECT_NE(run.out.find("(rank 2: roce@roce:10.20.1.0/24)"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("(rank 0:"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("(rank 1:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--allow-mixed"), std::string::npos) << run.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/r.json"));
}

TEST(BenchMixed, AllowMixedRunsAndRecordsTheWarning) {
  TempDir dir;
  auto run = testing::RunCommand(
      MixedRun(dir.path() + "/r.json", "--allow-mixed --label mixed"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("WARNING (--allow-mixed)"), std::string::npos)
      << run.out;
  const auto j =
      nlohmann::json::parse(testing::ReadFile(dir.path() + "/r.json"));
  const auto& m = j.at("metadata");
  EXPECT_EQ(m.at("fabric_class"), "mixed");
  const std::string warning = m.at("mixed_warning");
  EXPECT_NE(warning.find("rank 2"), std::string::npos) << warning;
  ASSERT_EQ(m.at("host_fabric_classes").size(), 3u);
  EXPECT_EQ(m.at("host_fabric_classes")[2], "roce@roce:10.20.1.0/24");
  EXPECT_EQ(m.at("host_fabric_classes")[0],
            "infiniband@ib:unknown, roce@roce:unknown");
  const std::string html = testing::ReadFile(dir.path() + "/r.html");
  EXPECT_NE(html.find("ran on a mixed host set (--allow-mixed)"),
            std::string::npos);
  EXPECT_NE(html.find("class=\"warn\""), std::string::npos);
}

TEST(BenchMixed, UniformHostSetRunsAndRecordsItsClass) {
  TempDir dir;
  const std::string plain = testing::Fixture("synthetic/sysfs-plain-roce");
  auto run = testing::RunCommand(
      kBench +
      " run --pattern allreduce-ring --local 2 --local-loopback"
      " --sizes 1K --iterations 2 --warmup 1 --local-sysfs " +
      plain + " --out " + dir.path() + "/r.json 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j =
      nlohmann::json::parse(testing::ReadFile(dir.path() + "/r.json"));
  EXPECT_EQ(j.at("metadata").at("fabric_class"), "roce");
  EXPECT_EQ(j.at("metadata").at("mixed_warning"), "");
}

}  // namespace
}  // namespace fabric::bench
