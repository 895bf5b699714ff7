// Runs the real `promtool` (Debian package prometheus) on the shipped rules:
// `promtool check rules` must be clean and every `promtool test rules` unit
// test file under dashboards/prometheus/tests/ must pass. Also checks that
// every alert has a firing and a must-not-fire case in those files.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "tests/support/paths.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

std::string RulesDir() {
  return testing::SourceDir() + "/dashboards/prometheus";
}

// Runs a shell command, returns {exit status, stdout+stderr}.
std::pair<int, std::string> RunShell(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool HavePromtool() { return RunShell("command -v promtool").first == 0; }

TEST(RulesPromtoolTest, CheckRulesIsClean) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  const auto [status, output] =
      RunShell("promtool check rules " + RulesDir() + "/recording_rules.yml " +
               RulesDir() + "/alerting_rules.yml");
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("WARNING"), std::string::npos) << output;
}

TEST(RulesPromtoolTest, UnitTestsPass) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(RulesDir() + "/tests")) {
    if (entry.path().extension() != ".yml") continue;
    ++files;
    // promtool resolves rule_files relative to the test file's directory.
    const auto [status, output] =
        RunShell("cd " + RulesDir() + "/tests && promtool test rules " +
                 entry.path().filename().string());
    EXPECT_EQ(status, 0) << entry.path() << "\n" << output;
  }
  EXPECT_GT(files, 0);
}

// Every alert in alerting_rules.yml has at least one test case where it is
// expected to fire and one where it is expected not to.
TEST(RulesPromtoolTest, EveryAlertHasFiringAndSilentCase) {
  std::map<std::string, std::pair<int, int>> cases;  // alert -> {fire, not}
  const YAML::Node rules = YAML::LoadFile(RulesDir() + "/alerting_rules.yml");
  for (const auto& group : rules["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["alert"]) cases[rule["alert"].as<std::string>()] = {0, 0};
    }
  }
  ASSERT_FALSE(cases.empty());
  for (const auto& entry : fs::directory_iterator(RulesDir() + "/tests")) {
    if (entry.path().extension() != ".yml") continue;
    const YAML::Node doc = YAML::LoadFile(entry.path().string());
    for (const auto& test : doc["tests"]) {
      for (const auto& t : test["alert_rule_test"]) {
        const auto name = t["alertname"].as<std::string>();
        ASSERT_TRUE(cases.count(name)) << "test for unknown alert " << name;
        if (t["exp_alerts"] && t["exp_alerts"].size() > 0) {
          ++cases[name].first;
        } else {
          ++cases[name].second;
        }
      }
    }
  }
  for (const auto& [alert, n] : cases) {
    EXPECT_GT(n.first, 0) << alert << " has no case where it fires";
    EXPECT_GT(n.second, 0) << alert << " has no case where it must not fire";
  }
}

}  // namespace
}  // namespace fabric
