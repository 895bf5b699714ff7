// The Grafana dashboards against Grafana's own dashboard schema
// (@grafana/schema from npm, pinned in tests/grafana-schema/package-lock.json,
// installed into the build directory by tests/grafana-schema/check.sh), and
// what a team importing them needs: a cluster variable, an `All` option on
// every instance variable, per-second units on rate panels, and links
// between dashboards that keep working under a Grafana sub-path.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/ci.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

std::pair<int, std::string> RunShell(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::vector<fs::path> Dashboards() {
  std::vector<fs::path> out;
  for (const auto& e :
       fs::directory_iterator(testing::SourceDir() + "/dashboards/grafana")) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string CheckScript() {
  return testing::SourceDir() + "/tests/grafana-schema/check.sh " +
         testing::BinaryDir() + "/grafana-schema";
}

void RequireNode() {
  if (RunShell("command -v node && command -v npm").first != 0) {
    MISSING_DEPENDENCY("node/npm not installed (scripts/setup.sh)");
  }
}

TEST(DashboardsSchemaTest, EveryDashboardMatchesGrafanasSchema) {
  RequireNode();
  const auto [status, output] = RunShell(CheckScript());
  EXPECT_EQ(status, 0) << output;
  // Every shipped dashboard was checked.
  EXPECT_NE(
      output.find(std::to_string(Dashboards().size()) + " dashboard(s) match"),
      std::string::npos)
      << output;
}

// The check is not vacuous: a panel key Grafana does not know, and a number
// written as a string, are each reported.
TEST(DashboardsSchemaTest, SchemaCheckRejectsWhatGrafanaDoesNotKnow) {
  RequireNode();
  std::ifstream in(Dashboards().front());
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  const auto panels = json.find("\"panels\": [");
  ASSERT_NE(panels, std::string::npos);
  json.insert(json.find('{', panels) + 1, "\"bogusKey\": 1,");
  const auto version = json.find("\"schemaVersion\": 39");
  ASSERT_NE(version, std::string::npos);
  json.replace(version, 19, "\"schemaVersion\": \"39\"");
  const fs::path bad =
      fs::temp_directory_path() /
      ("fabricmon_bad_dashboard_" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << json;
  const auto [status, output] = RunShell(CheckScript() + " " + bad.string());
  fs::remove(bad);
  EXPECT_NE(status, 0) << output;
  EXPECT_NE(output.find("bogusKey"), std::string::npos) << output;
  EXPECT_NE(output.find("is not assignable to type 'number'"),
            std::string::npos)
      << output;
}

std::vector<std::string> Exprs(const pt::ptree& panel) {
  std::vector<std::string> out;
  if (auto targets = panel.get_child_optional("targets")) {
    for (const auto& [_, t] : *targets) out.push_back(t.get("expr", ""));
  }
  return out;
}

// Every dashboard has a cluster variable (All = also targets without the
// label) and every instance variable offers All; every expression reading
// fabric series selects the cluster (the threshold constants have none).
TEST(DashboardsSchemaTest, ClusterVariableAndAllOnInstance) {
  const std::regex metric(R"((fabric[_:][a-zA-Z0-9_:]+|\bup)\{([^}]*)\})");
  for (const auto& path : Dashboards()) {
    SCOPED_TRACE(path.filename().string());
    pt::ptree tree;
    pt::read_json(path.string(), tree);
    std::set<std::string> seen;
    for (const auto& [_, v] : tree.get_child("templating.list")) {
      const std::string name = v.get<std::string>("name");
      seen.insert(name);
      if (name == "cluster") {
        EXPECT_TRUE(v.get<bool>("includeAll"));
        EXPECT_EQ(v.get<std::string>("allValue"), ".*");
      } else if (name == "instance") {
        EXPECT_TRUE(v.get<bool>("includeAll"));
      }
      if (v.get<std::string>("type") == "query" && name != "cluster") {
        EXPECT_NE(v.get<std::string>("query.query").find("$cluster"),
                  std::string::npos)
            << name;
      }
    }
    EXPECT_TRUE(seen.count("cluster"));
    EXPECT_TRUE(seen.count("instance"));
    for (const auto& [_, p] : tree.get_child("panels")) {
      for (const auto& expr : Exprs(p)) {
        for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric);
             it != std::sregex_iterator(); ++it) {
          const std::string name = (*it)[1];
          if (std::regex_search(name, std::regex("^fabric:(threshold|config|"
                                                 "expected):"))) {
            continue;
          }
          EXPECT_NE((*it)[2].str().find("cluster=~\"$cluster\""),
                    std::string::npos)
              << p.get<std::string>("title") << ": " << name;
        }
      }
    }
  }
}

// A panel plotting rate()s shows a per-second unit (or a ratio or seconds,
// for rates of a seconds counter and quantiles), in its defaults or on the
// column that holds the rate.
TEST(DashboardsSchemaTest, RatePanelsHavePerSecondUnits) {
  const std::set<std::string> per_second = {
      "Bps",   "bps", "binBps", "binbps", "pps",         "cps",     "ops",
      "reqps", "rps", "wps",    "iops",   "percentunit", "percent", "s"};
  int checked = 0;
  for (const auto& path : Dashboards()) {
    pt::ptree tree;
    pt::read_json(path.string(), tree);
    for (const auto& [_, p] : tree.get_child("panels")) {
      bool rate = false;
      for (const auto& e : Exprs(p)) {
        rate |= std::regex_search(e, std::regex(R"(\b(i?rate)\()"));
      }
      if (!rate) continue;
      ++checked;
      bool ok = per_second.count(p.get("fieldConfig.defaults.unit", "")) > 0;
      if (auto overrides = p.get_child_optional("fieldConfig.overrides")) {
        for (const auto& [__, o] : *overrides) {
          for (const auto& [___, prop] : o.get_child("properties")) {
            ok |= prop.get("id", "") == "unit" &&
                  per_second.count(prop.get("value", ""));
          }
        }
      }
      EXPECT_TRUE(ok) << path.filename().string() << ": "
                      << p.get<std::string>("title") << " has unit '"
                      << p.get("fieldConfig.defaults.unit", "") << "'";
    }
  }
  EXPECT_GT(checked, 30);
}

// Links between the dashboards are Grafana paths (/d/<uid>/...), which
// Grafana prefixes with its sub-path (root_url) when it renders a data link;
// never an absolute URL or a hard-coded sub-path. They keep the cluster and
// the time range.
TEST(DashboardsSchemaTest, LinksWorkUnderASubPathAndKeepTheCluster) {
  int links = 0;
  for (const auto& path : Dashboards()) {
    pt::ptree tree;
    pt::read_json(path.string(), tree);
    for (const auto& [_, p] : tree.get_child("panels")) {
      auto l = p.get_child_optional("fieldConfig.defaults.links");
      if (!l) continue;
      for (const auto& [__, link] : *l) {
        ++links;
        const std::string url = link.get<std::string>("url");
        SCOPED_TRACE(path.filename().string() + ": " + url);
        EXPECT_EQ(url.rfind("/d/fabricmon-", 0), 0u);
        EXPECT_EQ(url.find("://"), std::string::npos);
        EXPECT_NE(url.find("${cluster:queryparam}"), std::string::npos);
        EXPECT_NE(url.find("${__url_time_range}"), std::string::npos);
      }
    }
  }
  EXPECT_GE(links, 15);
}

}  // namespace
}  // namespace fabric
