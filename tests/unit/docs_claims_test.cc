// What the docs say about the code, checked against the code (issue 39
// item 4): deploy.md's GPU-node defaults are the collectors enabled by
// default; its targets directory is the one the shipped scrape config
// reads, and there is one; alerting.md's stale threshold reason holds for
// the slowest default interval, it describes every inhibit rule of
// inhibit_rules.yml, and it names the end-to-end test's exemptions as the
// test has them. (config/fabricmon.yaml showing every key:
// config_lines_test; the commands of the docs: doc_commands_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "collectors/registry.h"
#include "config/duration.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

using ::testing::HasSubstr;

std::string Read(const std::string& relative) {
  std::ifstream in(testing::SourceDir() + "/" + relative);
  EXPECT_TRUE(in) << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every match of group 1 of `re` in `text`.
std::set<std::string> All(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// The text of section `heading` ("## ...") of a markdown file.
std::string Section(const std::string& text, const std::string& heading) {
  const auto start = text.find("\n" + heading + "\n");
  EXPECT_NE(start, std::string::npos) << heading;
  if (start == std::string::npos) return "";
  const auto end = text.find("\n## ", start + 1);
  return text.substr(start, end == std::string::npos ? end : end - start);
}

TEST(DocsClaimsTest, DeployGpuNodeDefaultsAreTheDefaultCollectors) {
  const std::string deploy = Read("docs/deploy.md");
  std::smatch row;
  ASSERT_TRUE(std::regex_search(
      deploy, row,
      std::regex(R"(\n\| GPU node \|[^\n]*\| defaults \(([^)]*)\) \|)")));
  const auto listed = All(row[1].str(), std::regex("`([a-z_]+)`"));
  std::set<std::string> enabled;
  for (const auto& spec : AllCollectorKeys()) {
    if (spec.enabled) enabled.insert(spec.name);
  }
  EXPECT_EQ(listed, enabled);
}

TEST(DocsClaimsTest, DeployNamesOneTargetsDirectoryTheShippedOne) {
  const std::regex dir(R"((/etc/[a-z/]*targets)/)");
  const auto shipped = All(Read("deploy/victoriametrics/scrape.yml"), dir);
  ASSERT_EQ(shipped.size(), 1u);
  EXPECT_EQ(All(Read("docs/deploy.md"), dir), shipped);
}

TEST(DocsClaimsTest, StaleThresholdCoversFivePollsOfTheSlowestCollector) {
  std::chrono::microseconds slowest{0};
  for (const auto& spec : AllCollectorKeys()) {
    slowest = std::max(slowest, spec.interval);
  }
  EXPECT_THAT(Read("docs/alerting.md"),
              HasSubstr("the slowest default `interval` is " +
                        FormatDuration(slowest) + " "));
  const YAML::Node rules = YAML::LoadFile(
      testing::SourceDir() + "/dashboards/prometheus/recording_rules.yml");
  double threshold = 0;
  for (const auto& group : rules["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["record"] && rule["record"].as<std::string>() ==
                                "fabric:threshold:collector_stale_seconds") {
        std::smatch m;
        const std::string expr = rule["expr"].as<std::string>();
        ASSERT_TRUE(
            std::regex_search(expr, m, std::regex(R"(vector\((\d+)\))")));
        threshold = std::stod(m[1].str());
      }
    }
  }
  EXPECT_GE(threshold, 5 * std::chrono::duration<double>(slowest).count());
}

// Alert names of a matcher value: "A|B" or "A"; a regex such as
// "Fabric.+" names none.
std::vector<std::string> Names(const std::string& value) {
  std::vector<std::string> out;
  std::istringstream parts(value);
  for (std::string name; std::getline(parts, name, '|');) {
    if (std::regex_match(name, std::regex("[A-Za-z]+"))) out.push_back(name);
  }
  return out;
}

std::vector<std::string> AlertNames(const YAML::Node& matchers) {
  std::vector<std::string> out;
  const std::regex alertname(R"re(alertname=~?"([^"]*)")re");
  for (const auto& m : matchers) {
    std::smatch match;
    const std::string text = m.as<std::string>();
    if (std::regex_search(text, match, alertname)) {
      for (auto& n : Names(match[1].str())) out.push_back(n);
    }
  }
  return out;
}

TEST(DocsClaimsTest, AlertingDescribesEveryInhibitRule) {
  const std::string section =
      Section(Read("docs/alerting.md"),
              "## One fault, one alert: grouping and inhibit rules");
  // Its bullets, each joined to one line.
  std::vector<std::string> bullets;
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("- ", 0) == 0) {
      bullets.push_back(line);
    } else if (line.rfind("  ", 0) == 0 && !bullets.empty()) {
      bullets.back() += " " + line;
    }
  }
  const YAML::Node rules = YAML::LoadFile(
      testing::SourceDir() + "/dashboards/alertmanager/inhibit_rules.yml");
  ASSERT_GT(rules["inhibit_rules"].size(), 5u);
  for (const auto& rule : rules["inhibit_rules"]) {
    const auto sources = AlertNames(rule["source_matchers"]);
    const auto targets = AlertNames(rule["target_matchers"]);
    // A pattern, not names (the per-cable rule, alertname=~"FabricPort.+"):
    // described in its own section, "One page per cable".
    if (sources.empty()) continue;
    const auto bullet =
        std::find_if(bullets.begin(), bullets.end(), [&](const auto& b) {
          return b.find("inhibit") != std::string::npos &&
                 std::all_of(sources.begin(), sources.end(), [&](auto& s) {
                   return b.find("`" + s + "`") < b.find("inhibit");
                 });
        });
    ASSERT_NE(bullet, bullets.end())
        << "no bullet in docs/alerting.md says what " << sources.front()
        << " inhibits";
    for (const auto& target : targets) {
      if (std::find(sources.begin(), sources.end(), target) != sources.end()) {
        continue;
      }
      EXPECT_THAT(*bullet, HasSubstr("`" + target + "`")) << sources.front();
    }
  }
}

TEST(DocsClaimsTest, AlertingNamesTheEndToEndExemptions) {
  const std::string test = Read("tests/integration/alerts_e2e_test.cc");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(test, m, std::regex(R"(found\[i\] = ([^;]*);)")));
  const auto in_test = All(m[1].str(), std::regex(R"(([A-Z][A-Za-z]+)\()"));
  ASSERT_GE(in_test.size(), 2u);
  const std::string section =
      Section(Read("docs/alerting.md"), "## End-to-end check");
  // Backquoted CamelCase names that are not alerts (Fabric...).
  std::set<std::string> in_doc;
  for (const auto& name :
       All(section, std::regex("`([A-Z][a-z]+[A-Z][A-Za-z]+)`"))) {
    if (name.rfind("Fabric", 0) != 0) in_doc.insert(name);
  }
  EXPECT_EQ(in_doc, in_test);
}

}  // namespace
}  // namespace fabric
