// Static checks on what ships in dashboards/ and docs/runbooks/:
//  - every Grafana dashboard JSON parses, has schemaVersion >= 39, a
//    Prometheus `datasource` variable and instance/device/port variables;
//  - every PromQL expression in the dashboards and rules parses (all are put
//    in a temporary rules file and checked with the real `promtool`);
//  - every fabric_* metric they reference is listed in docs/metrics.md and
//    every fabric:* series is recorded by recording_rules.yml;
//  - every alert has severity, summary, description and a runbook_url that
//    is an existing file, and every runbook belongs to an alert.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

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

#include "tests/support/paths.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

std::string Src(const std::string& rel) {
  return testing::SourceDir() + "/" + rel;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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
  for (const auto& e : fs::directory_iterator(Src("dashboards/grafana"))) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void CollectExprs(const pt::ptree& node, std::vector<std::string>& out) {
  for (const auto& [key, child] : node) {
    if (key == "expr" && child.empty()) out.push_back(child.data());
    CollectExprs(child, out);
  }
}

// Grafana variables -> values Prometheus accepts, so the expression can be
// parsed and evaluated as-is.
std::string Substitute(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "1m");
  expr = std::regex_replace(expr, std::regex(R"(\$__interval)"), "1m");
  expr = std::regex_replace(expr, std::regex(R"(\$__range)"), "1h");
  expr = std::regex_replace(expr, std::regex(R"(\$\{?[a-z_]+\}?)"), ".*");
  return expr;
}

std::vector<std::string> DashboardExprs() {
  std::vector<std::string> out;
  for (const auto& path : Dashboards()) {
    pt::ptree tree;
    pt::read_json(path.string(), tree);
    CollectExprs(tree.get_child("panels"), out);
  }
  return out;
}

struct Rule {
  std::string name;  // alert or record
  bool alert = false;
  std::string expr;
  YAML::Node node;
};

std::vector<Rule> Rules() {
  std::vector<Rule> out;
  for (const char* file : {"recording_rules.yml", "alerting_rules.yml"}) {
    const YAML::Node doc =
        YAML::LoadFile(Src(std::string("dashboards/prometheus/") + file));
    for (const auto& group : doc["groups"]) {
      for (const auto& r : group["rules"]) {
        Rule rule;
        rule.alert = static_cast<bool>(r["alert"]);
        rule.name = (rule.alert ? r["alert"] : r["record"]).as<std::string>();
        rule.expr = r["expr"].as<std::string>();
        rule.node = static_cast<const YAML::Node&>(r);
        out.push_back(rule);
      }
    }
  }
  return out;
}

std::set<std::string> Matches(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

TEST(DashboardsStaticTest, DashboardsParseAndHaveVariables) {
  const auto paths = Dashboards();
  ASSERT_GE(paths.size(), 5u);
  std::set<std::string> uids;
  for (const auto& path : paths) {
    SCOPED_TRACE(path.filename().string());
    pt::ptree tree;
    ASSERT_NO_THROW(pt::read_json(path.string(), tree));
    EXPECT_GE(tree.get<int>("schemaVersion"), 39);
    EXPECT_TRUE(uids.insert(tree.get<std::string>("uid")).second);
    std::map<std::string, std::pair<std::string, std::string>> vars;
    for (const auto& [_, v] : tree.get_child("templating.list")) {
      vars[v.get<std::string>("name")] = {v.get<std::string>("type"),
                                          v.get<std::string>("query", "")};
    }
    ASSERT_TRUE(vars.count("datasource"));
    EXPECT_EQ(vars["datasource"].first, "datasource");
    EXPECT_EQ(vars["datasource"].second, "prometheus");
    for (const char* v : {"instance", "device", "port"}) {
      EXPECT_TRUE(vars.count(v)) << v;
    }
    int panels = 0;
    for (const auto& [_, p] : tree.get_child("panels")) {
      if (p.get<std::string>("type") == "row") continue;
      ++panels;
      EXPECT_EQ(p.get<std::string>("datasource.uid", ""), "${datasource}")
          << p.get<std::string>("title");
      EXPECT_GT(p.get_child("targets").size(), 0u);
    }
    EXPECT_GT(panels, 3);
  }
}

TEST(DashboardsStaticTest, HotspotDashboardHasPeakHeatmaps) {
  pt::ptree tree;
  pt::read_json(Src("dashboards/grafana/congestion-hotspots.json"), tree);
  std::set<std::string> heatmapped;
  for (const auto& [_, p] : tree.get_child("panels")) {
    if (p.get<std::string>("type") != "heatmap") continue;
    for (const auto& [__, t] : p.get_child("targets")) {
      heatmapped.insert(t.get<std::string>("expr"));
    }
  }
  const std::string all = [&] {
    std::string s;
    for (const auto& e : heatmapped) s += e + "\n";
    return s;
  }();
  EXPECT_NE(all.find("fabric_port_transmit_wait_peak_ratio"),
            std::string::npos);
  EXPECT_NE(all.find("fabric_port_transmit_utilization_peak_ratio"),
            std::string::npos);
}

// All expressions, dashboards' and rules', through promtool's parser.
TEST(DashboardsStaticTest, EveryExpressionParses) {
  if (RunShell("command -v promtool").first != 0) {
    GTEST_SKIP() << "promtool not installed";
  }
  std::vector<std::string> exprs = DashboardExprs();
  for (const auto& r : Rules()) exprs.push_back(r.expr);
  ASSERT_GT(exprs.size(), 40u);
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "groups" << YAML::Value
      << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << "all_exprs" << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    out << YAML::BeginMap << YAML::Key << "record" << YAML::Value
        << "check_expr_" + std::to_string(i) << YAML::Key << "expr"
        << YAML::Value << Substitute(exprs[i]) << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  const std::string path = fs::temp_directory_path().string() +
                           "/fabricmon_exprs_" + std::to_string(::getpid()) +
                           ".yml";
  std::ofstream(path) << out.c_str();
  const auto [status, output] = RunShell("promtool check rules " + path);
  EXPECT_EQ(status, 0) << output;
  fs::remove(path);
}

TEST(DashboardsStaticTest, EveryMetricIsDocumentedOrRecorded) {
  const std::string doc = ReadFile(Src("docs/metrics.md"));
  const std::set<std::string> documented =
      Matches(doc, std::regex(R"(`(fabric_[a-zA-Z0-9_]+))"));
  ASSERT_FALSE(documented.empty());
  std::set<std::string> recorded;
  const auto rules = Rules();
  for (const auto& r : rules) {
    if (!r.alert) recorded.insert(r.name);
  }
  std::vector<std::pair<std::string, std::string>> exprs;  // where, expr
  for (const auto& e : DashboardExprs()) exprs.emplace_back("dashboard", e);
  for (const auto& r : rules) exprs.emplace_back(r.name, r.expr);
  const std::regex metric(R"((?:^|[^a-zA-Z0-9_:"])(fabric_[a-zA-Z0-9_]+))");
  const std::regex record(R"((fabric:[a-zA-Z0-9_:]+))");
  int checked = 0;
  for (const auto& [where, expr] : exprs) {
    for (const auto& name : Matches(expr, metric)) {
      ++checked;
      EXPECT_TRUE(documented.count(name))
          << name << " (used in " << where << ") is not in docs/metrics.md";
    }
    for (const auto& name : Matches(expr, record)) {
      EXPECT_TRUE(recorded.count(name))
          << name << " (used in " << where << ") is not a recording rule";
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(DashboardsStaticTest, AlertsHaveAnnotationsAndRunbooksExist) {
  std::set<std::string> runbooks_used;
  int alerts = 0;
  for (const auto& r : Rules()) {
    if (!r.alert) continue;
    ++alerts;
    SCOPED_TRACE(r.name);
    const auto severity = r.node["labels"]["severity"];
    ASSERT_TRUE(severity);
    EXPECT_TRUE(std::set<std::string>({"critical", "warning", "info"})
                    .count(severity.as<std::string>()));
    const auto ann = r.node["annotations"];
    ASSERT_TRUE(ann);
    EXPECT_FALSE(ann["summary"].as<std::string>("").empty());
    EXPECT_FALSE(ann["description"].as<std::string>("").empty());
    const std::string url = ann["runbook_url"].as<std::string>("");
    EXPECT_EQ(url, "docs/runbooks/" + r.name + ".md");
    EXPECT_TRUE(fs::is_regular_file(Src(url))) << url;
    runbooks_used.insert(fs::path(url).filename().string());
  }
  EXPECT_GE(alerts, 10);
  for (const auto& e : fs::directory_iterator(Src("docs/runbooks"))) {
    const std::string name = e.path().filename().string();
    if (name == "README.md") continue;
    EXPECT_TRUE(runbooks_used.count(name)) << name << " belongs to no alert";
    // Each runbook has the sections an on-call engineer looks for.
    const std::string text = ReadFile(e.path().string());
    for (const char* section :
         {"## What it means", "## How to confirm", "## Likely causes",
          "## What to do", "## When to escalate"}) {
      EXPECT_NE(text.find(section), std::string::npos)
          << name << ": " << section;
    }
  }
}

}  // namespace
}  // namespace fabric
