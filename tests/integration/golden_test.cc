// Golden exposition: `fabricmon --once --sysfs.root <tree>` on every fixture
// tree, volatile lines dropped, must equal tests/golden/<tree>.prom byte for
// byte. FABRICMON_UPDATE_GOLDEN=1 rewrites the files instead. The raw output
// must also pass `promtool check metrics`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

// Sample lines of these families change on every run; they are dropped
// before the comparison (their HELP/TYPE lines stay).
constexpr const char* kVolatile[] = {
    "fabric_collector_duration_seconds",
    "fabric_collector_last_success_timestamp_seconds",
    "fabric_build_info",
};

std::string DropVolatile(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    bool drop = false;
    for (const char* name : kVolatile) {
      const std::string n = name;
      if (line.rfind(n + "{", 0) == 0 || line.rfind(n + " ", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out += line + "\n";
  }
  return out;
}

std::string GoldenPath(const std::string& tree) {
  std::string name = tree;
  if (name.rfind("real/", 0) == 0) name = name.substr(5);
  std::replace(name.begin(), name.end(), '/', '-');
  return testing::SourceDir() + "/tests/golden/" + name + ".prom";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesGoldenFile) {
  const std::string tree = GetParam();
  auto run = testing::RunOnce(tree);
  ASSERT_EQ(run.exit_code, 0) << "fabricmon --once failed on " << tree;
  ASSERT_NE(run.out.find("fabric_port_info"), std::string::npos);
  const std::string got = DropVolatile(run.out);
  const std::string path = GoldenPath(tree);
  const char* update = std::getenv("FABRICMON_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  ASSERT_FALSE(want.empty())
      << path << " missing; run with FABRICMON_UPDATE_GOLDEN=1";
  EXPECT_EQ(got, want) << "diff " << path
                       << " against fabricmon --once output; if the change "
                          "is intended, rerun with FABRICMON_UPDATE_GOLDEN=1";
}

TEST_P(GoldenTest, PromtoolCheckMetricsIsClean) {
  const std::string tree = GetParam();
  auto run = testing::RunCommand(testing::Binary("fabricmon") +
                                 " --once --config /dev/null --sysfs.root " +
                                 testing::Fixture(tree) +
                                 " 2>/dev/null | promtool check metrics 2>&1");
  std::istringstream in(run.out);
  std::string line, complaints;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    complaints += line + "\n";
  }
  EXPECT_EQ(complaints, "") << "promtool check metrics on " << tree;
}

// The daemon side of bad input: `fabricmon --once` on a broken tree still
// exits 0, exports what is readable, and reports the skips per collector.
TEST(OnceBadTreeTest, SkipsAreCountedInSelfMetrics) {
  namespace fs = std::filesystem;
  testing::TempDir tmp("fabricmon-once-bad");
  const fs::path root = tmp.path();
  auto write = [&](const std::string& rel, const std::string& data) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << data;
  };
  const std::string port = "class/infiniband/mlx5_0/ports/1/";
  write(port + "state", "4: ACTIVE\n");
  write(port + "counters/port_rcv_data", "10\n");
  write(port + "counters/symbol_error", "garbage\n");
  write(port + "counters/link_downed", "");
  write(port + "counters/port_xmit_wait", "-1\n");
  write(port + "hw_counters/out_of_sequence", "N/A (no PMA)\n");
  write(port + "hw_counters/np_cnp_sent", "3\n");
  fs::create_directories(root /
                         "class/infiniband/mlx5_1/ports/1");  // empty port
  auto run = testing::RunCommand(testing::Binary("fabricmon") +
                                 " --once --config /dev/null --sysfs.root " +
                                 root.string() + " 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0);
  auto samples = testing::ParseSamples(run.out);
  EXPECT_EQ(samples["fabric_collector_skipped_inputs{collector=\"ib_port\"}"],
            3);
  EXPECT_EQ(
      samples["fabric_collector_skipped_inputs{collector=\"hw_counters\"}"], 1);
  EXPECT_EQ(samples["fabric_collector_success{collector=\"ib_port\"}"], 1);
  EXPECT_EQ(samples["fabric_collector_success{collector=\"hw_counters\"}"], 1);
  EXPECT_EQ(
      samples["fabric_port_receive_bytes_total{device=\"mlx5_0\",port=\"1\"}"],
      40);
  EXPECT_EQ(samples["fabric_roce_cnp_sent_total{device=\"mlx5_0\",port=\"1\"}"],
            3);
  EXPECT_EQ(samples.count("fabric_port_state{device=\"mlx5_1\",port=\"1\"}"),
            0u);
}

INSTANTIATE_TEST_SUITE_P(Trees, GoldenTest,
                         ::testing::ValuesIn(testing::FixtureTrees()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace fabric
