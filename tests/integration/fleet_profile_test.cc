// packaging/fleet.yaml, the series-budget profile, against what the shipped
// rules (dashboards/prometheus/*.yml) and dashboards (dashboards/grafana/
// *.json) read: the names they read are derived from their expressions, and
// the profile must keep every one of them and nothing else; the daemon run
// with it on the recorded H100 tree must still export every series they
// read that the defaults export.
//
// "Read" = a fabric_* name in a rule's expr, annotation or label, or in a
// dashboard's expr, variable query or definition. A name read with a
// `counter`/`error` matcher (= or =~) reads those counters only; without
// one, or with a negative matcher, the whole family.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "collectors/registry.h"
#include "config/config.h"
#include "tests/integration/fabricmon_run.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

// What the rules and dashboards read of one family.
struct Read {
  bool whole = false;
  std::vector<std::regex> counters;  // `counter`/`error` = or =~ values

  bool Needs(const std::string& counter) const {
    if (whole) return true;
    for (const auto& re : counters) {
      if (std::regex_match(counter, re)) return true;
    }
    return false;
  }
};

std::vector<std::string> RuleTexts() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() +
                                              "/dashboards/prometheus")) {
    if (e.path().extension() != ".yml") continue;
    const YAML::Node doc = YAML::LoadFile(e.path().string());
    for (const auto& group : doc["groups"]) {
      for (const auto& rule : group["rules"]) {
        out.push_back(rule["expr"].as<std::string>());
        for (const char* key : {"annotations", "labels"}) {
          for (const auto& kv : rule[key]) {
            out.push_back(kv.second.as<std::string>());
          }
        }
      }
    }
  }
  return out;
}

void DashboardTexts(const nlohmann::json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (value.is_string() &&
          (key == "expr" || key == "query" || key == "definition")) {
        out.push_back(value.get<std::string>());
      } else {
        DashboardTexts(value, out);
      }
    }
  } else if (node.is_array()) {
    for (const auto& value : node) DashboardTexts(value, out);
  }
}

std::map<std::string, Read> ReadByRulesAndDashboards() {
  std::vector<std::string> texts = RuleTexts();
  for (const auto& e :
       fs::directory_iterator(testing::SourceDir() + "/dashboards/grafana")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    DashboardTexts(nlohmann::json::parse(in), texts);
  }
  static const std::regex name(
      R"((^|[^A-Za-z0-9_:])(fabric_[A-Za-z0-9_]*)(\{[^}]*\})?)");
  static const std::regex counter(
      R"#(\b(counter|error)\s*(=~|!~|!=|=)\s*"([^"]*)")#");
  std::map<std::string, Read> out;
  for (const auto& text : texts) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
      Read& read = out[(*it)[2].str()];
      const std::string selector = (*it)[3].str();
      std::smatch m;
      if (std::regex_search(selector, m, counter) &&
          (m[2] == "=" || m[2] == "=~")) {
        // PromQL regexes are anchored, as regex_match is.
        read.counters.emplace_back(
            m[2] == "=" ? std::regex_replace(
                              m[3].str(), std::regex(R"([.^$|()\[\]*+?{}\\])"),
                              R"(\$&)")
                        : m[3].str());
      } else {
        read.whole = true;
      }
    }
  }
  return out;
}

Config Fleet() {
  std::string error;
  auto config = LoadConfigFile(testing::SourceDir() + "/packaging/fleet.yaml",
                               false, AllCollectorKeys(), &error);
  EXPECT_TRUE(config) << error;
  return config.value_or(Config{});
}

bool IsFamily(const std::string& name) { return name.rfind("fabric_", 0) == 0; }

TEST(FleetProfileTest, KeepsExactlyWhatRulesAndDashboardsRead) {
  const auto read = ReadByRulesAndDashboards();
  // The derivation found what it should: a sanity floor, not a count.
  ASSERT_GT(read.size(), 50u);
  ASSERT_TRUE(read.count("fabric_port_info") &&
              read.at("fabric_port_info").whole);
  ASSERT_FALSE(read.at("fabric_switch_port_errors_total").counters.empty());

  const Config fleet = Fleet();
  EXPECT_THAT(fleet.warnings, IsEmpty());
  int filtered = 0;
  for (const auto& spec : CollectorSpecs()) {
    if (spec.series.empty()) continue;
    ++filtered;
    const CounterFilter& filter = fleet.Collector(spec.name).series;
    EXPECT_FALSE(filter.empty()) << spec.name << " has no lists in fleet.yaml";
    std::vector<std::string> counters;
    for (const auto& n : spec.series) {
      if (!IsFamily(n)) counters.push_back(n);
    }
    for (const auto& family : spec.series) {
      if (!IsFamily(family)) continue;
      auto it = read.find(family);
      if (it == read.end()) {
        if (filter.Allows(family, "")) {
          ADD_FAILURE() << spec.name << " keeps " << family
                        << ", which nothing reads";
          continue;
        }
        for (const auto& c : counters) {
          EXPECT_FALSE(filter.Allows(family, c))
              << spec.name << " keeps " << family << "{" << c
              << "}, which nothing reads";
        }
        continue;
      }
      if (it->second.whole && !filter.Allows(family, "")) {
        ADD_FAILURE() << spec.name << " drops " << family << ", which is read";
        continue;
      }
      for (const auto& c : counters) {
        EXPECT_EQ(filter.Allows(family, c), it->second.Needs(c))
            << spec.name << ": " << family << "{" << c << "} is "
            << (it->second.Needs(c) ? "read" : "not read");
      }
    }
  }
  EXPECT_GE(filtered, 3);
}

// family name and counter/error label of a "name{labels}" series.
std::pair<std::string, std::string> Split(const std::string& series) {
  static const std::regex counter(R"#([{,](counter|error)="([^"]*)")#");
  std::smatch m;
  std::string c;
  if (std::regex_search(series, m, counter)) c = m[2];
  return {series.substr(0, series.find('{')), c};
}

TEST(FleetProfileTest, DaemonWithProfileExportsEverySeriesRead) {
  const std::string tree = testing::Fixture("real/sysfs-gpud-h100");
  const std::string fleet = testing::SourceDir() + "/packaging/fleet.yaml";
  auto check =
      testing::RunCommand(testing::Binary("fabricmon") +
                          " --check-config --config " + fleet + " 2>&1");
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_EQ(check.out.find("warning"), std::string::npos) << check.out;

  auto defaults = testing::RunOnce("real/sysfs-gpud-h100");
  auto profiled =
      testing::RunCommand(testing::Binary("fabricmon") + " --once --config " +
                          fleet + " --sysfs.root " + tree + " 2>/dev/null");
  ASSERT_EQ(defaults.exit_code, 0);
  ASSERT_EQ(profiled.exit_code, 0);
  const auto all = testing::ParseSamples(defaults.out);
  const auto kept = testing::ParseSamples(profiled.out);
  const auto read = ReadByRulesAndDashboards();
  std::set<std::string> filtered;  // families of collectors with lists
  for (const auto& spec : CollectorSpecs()) {
    for (const auto& n : spec.series) {
      if (IsFamily(n)) filtered.insert(n);
    }
  }
  std::size_t needed = 0;
  for (const auto& [series, value] : all) {
    auto [family, counter] = Split(series);
    if (!filtered.count(family)) {
      // Other collectors and the daemon's own series are not filtered;
      // their values may move between the runs (durations).
      EXPECT_TRUE(kept.count(series)) << series;
      continue;
    }
    auto it = read.find(family);
    const bool is_read = it != read.end() && it->second.Needs(counter);
    needed += is_read;
    EXPECT_EQ(kept.count(series), is_read ? 1u : 0u)
        << series
        << (is_read ? " is read but not exported"
                    : " is exported but not read");
  }
  EXPECT_GT(needed, 100u);
  EXPECT_LT(kept.size(), all.size());
  for (const auto& [series, value] : kept) {
    EXPECT_TRUE(all.count(series)) << series << " only with the profile";
  }
}

}  // namespace
}  // namespace fabric
