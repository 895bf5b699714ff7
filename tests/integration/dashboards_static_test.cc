// Static checks on what ships in dashboards/ and docs/runbooks/:
//  - every Grafana dashboard JSON parses, has schemaVersion >= 39, a
//    Prometheus `datasource` variable and instance/device/port variables;
//  - every PromQL expression in the dashboards, rules and runbooks (```promql
//    blocks) parses (all are put in a temporary rules file and checked with
//    the real `promtool`), and every alert's runbook has PromQL to run;
//  - every fabric_* metric they reference is listed in docs/metrics.md and
//    every fabric:* series is recorded by recording_rules.yml;
//  - every alert has severity, summary, description and a runbook_url that
//    is an existing file, and every runbook belongs to an alert;
//  - at thousands of ports: bounded default selections or bounded
//    expressions, heatmaps of aggregated rows, top-N tables linking to the
//    port-detail dashboard, `up` panels, port-state value mappings, a
//    link_layer variable, and no threshold hard-coded in a dashboard;
//  - the overview's fleet trends read recording rules; the fabric dashboard
//    shows the SMs, OpenSM, switch ports by role, the hottest switch ports
//    (linking to that switch), one switch's ports and the host-port-to-
//    switch-port cabling; the probes dashboard an RTT heatmap, the worst
//    pairs and loss.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/metric_names.h"
#include "tests/integration/runbook_queries.h"
#include "tests/support/ci.h"
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

// The hotspot heatmaps plot fleet distributions (recorded per-bucket port
// counts, a handful of rows whatever the fleet size), not one row per port.
TEST(DashboardsStaticTest, HotspotHeatmapsPlotAggregatedRows) {
  pt::ptree tree;
  pt::read_json(Src("dashboards/grafana/congestion-hotspots.json"), tree);
  std::string all;
  int heatmaps = 0;
  for (const auto& [_, p] : tree.get_child("panels")) {
    if (p.get<std::string>("type") != "heatmap") continue;
    ++heatmaps;
    for (const auto& [__, t] : p.get_child("targets")) {
      const std::string expr = t.get<std::string>("expr");
      all += expr + "\n";
      EXPECT_EQ(expr.rfind("sum by (le) (fabric:", 0), 0u) << expr;
      EXPECT_NE(expr.find(":ports_le"), std::string::npos) << expr;
      EXPECT_EQ(t.get<std::string>("format", ""), "heatmap") << expr;
    }
  }
  EXPECT_GE(heatmaps, 2);
  EXPECT_NE(all.find("fabric:port_transmit_wait_peak_ratio:ports_le"),
            std::string::npos);
  EXPECT_NE(all.find("fabric:port_transmit_utilization_peak_ratio:ports_le"),
            std::string::npos);
}

std::map<std::string, pt::ptree> Variables(const pt::ptree& tree) {
  std::map<std::string, pt::ptree> vars;
  for (const auto& [_, v] : tree.get_child("templating.list")) {
    vars[v.get<std::string>("name")] = v;
  }
  return vars;
}

// An expression returns a bounded number of series whatever the fleet size:
// top-N, an aggregation that keeps no per-port or per-host label, or a
// filter that lists only ports in trouble (a comparison).
bool Bounded(const std::string& expr) {
  if (expr.find("topk(") != std::string::npos) return true;
  // A quantile of a histogram aggregated to its buckets only.
  static const std::regex histogram(
      R"(^\s*histogram_quantile\([0-9.]+,\s*sum by \(le\))");
  if (std::regex_search(expr, histogram)) return true;
  static const std::regex aggregation(
      R"(^\s*\(?\s*(sum|count|max|min|avg|quantile|group)\b(\s*by\s*\(([^)]*)\))?)");
  std::smatch m;
  if (std::regex_search(expr, m, aggregation)) {
    // Bounded unless it keeps a per-host or per-port label (exact names:
    // `transport` is not `port`).
    static const std::regex per_port(R"(\b(instance|device|port)\b)");
    return !std::regex_search(m[4].str(), per_port);
  }
  static const std::regex filter(R"((==|!=|>=|<=|>|<)\s*(on|[0-9]|fabric:))");
  return std::regex_search(expr, filter);
}

// Thousands of ports: every dashboard either defaults to a bounded
// selection (the instance variable cannot be All) or plots only bounded
// expressions; fleet dashboards have a link_layer variable.
TEST(DashboardsStaticTest, DefaultsStayBoundedAtThousandsOfPorts) {
  for (const auto& path : Dashboards()) {
    SCOPED_TRACE(path.filename().string());
    pt::ptree tree;
    pt::read_json(path.string(), tree);
    auto vars = Variables(tree);
    ASSERT_TRUE(vars.count("instance"));
    const bool all_by_default = vars["instance"].get<bool>("includeAll");
    if (!all_by_default) {
      EXPECT_TRUE(vars["instance"].get<std::string>("current", "").empty() ||
                  vars["instance"].get_child("current").empty());
    }
    // One switch's ports (a single-value switch variable) are bounded by
    // the switch's port count, whatever the fleet size.
    const bool one_switch = vars.count("switch") &&
                            !vars["switch"].get<bool>("includeAll") &&
                            !vars["switch"].get<bool>("multi");
    int checked = 0;
    for (const auto& [_, p] : tree.get_child("panels")) {
      if (p.get<std::string>("type") == "row" || !all_by_default) continue;
      for (const auto& [__, t] : p.get_child("targets")) {
        ++checked;
        const std::string expr = t.get<std::string>("expr");
        if (one_switch &&
            expr.find("switch=~\"$switch\"") != std::string::npos) {
          continue;
        }
        EXPECT_TRUE(Bounded(expr)) << p.get<std::string>("title") << ": "
                                   << t.get<std::string>("expr");
      }
    }
    if (all_by_default) {
      EXPECT_GT(checked, 5);
    }
  }
  for (const char* name :
       {"fabric-overview.json", "congestion-hotspots.json"}) {
    pt::ptree tree;
    pt::read_json(Src(std::string("dashboards/grafana/") + name), tree);
    EXPECT_TRUE(Variables(tree).count("link_layer")) << name;
  }
}

// Top-N tables name the ports and link to the port-detail dashboard with
// that port selected.
TEST(DashboardsStaticTest, TopNTablesLinkToPortDetail) {
  for (const char* name :
       {"fabric-overview.json", "congestion-hotspots.json"}) {
    SCOPED_TRACE(name);
    pt::ptree tree;
    pt::read_json(Src(std::string("dashboards/grafana/") + name), tree);
    int linked_topn = 0;
    for (const auto& [_, p] : tree.get_child("panels")) {
      if (p.get<std::string>("type") != "table") continue;
      bool topn = false;
      for (const auto& [__, t] : p.get_child("targets")) {
        topn |= t.get<std::string>("expr").find("topk(") != std::string::npos;
      }
      const auto links = p.get_child_optional("fieldConfig.defaults.links");
      if (!topn || !links) continue;
      for (const auto& [__, l] : *links) {
        const std::string url = l.get<std::string>("url");
        if (url.find("/d/fabricmon-port/") != std::string::npos &&
            url.find("var-instance=${__data.fields.instance}") !=
                std::string::npos &&
            url.find("var-device=${__data.fields.device}") !=
                std::string::npos &&
            url.find("var-port=${__data.fields.port}") != std::string::npos) {
          ++linked_topn;
        }
      }
    }
    EXPECT_GE(linked_topn, 2);
  }
  pt::ptree detail;
  pt::read_json(Src("dashboards/grafana/port-detail.json"), detail);
  EXPECT_EQ(detail.get<std::string>("uid"), "fabricmon-port");
}

// Exporter `up` is on the fleet dashboards; port states show as names.
TEST(DashboardsStaticTest, UpPanelsAndStateValueMappings) {
  for (const char* name : {"fabric-overview.json", "daemon-health.json"}) {
    const std::string text =
        ReadFile(Src(std::string("dashboards/grafana/") + name));
    EXPECT_TRUE(std::regex_search(
        text, std::regex(R"(up\{[^}]*job=\\"fabricmon\\"\} == 0)")))
        << name;
  }
  pt::ptree detail;
  pt::read_json(Src("dashboards/grafana/port-detail.json"), detail);
  std::set<std::string> mapped;
  for (const auto& [_, p] : detail.get_child("panels")) {
    const auto m = p.get_child_optional("fieldConfig.defaults.mappings");
    if (!m) continue;
    for (const auto& [__, mapping] : *m) {
      for (const auto& [value, o] : mapping.get_child("options")) {
        mapped.insert(p.get<std::string>("title") + "=" + value + ":" +
                      o.get<std::string>("text"));
      }
    }
  }
  EXPECT_TRUE(mapped.count("State (4 = ACTIVE)=4:ACTIVE"));
  EXPECT_TRUE(mapped.count("State (4 = ACTIVE)=1:DOWN"));
  EXPECT_TRUE(mapped.count("Physical state (5 = LinkUp)=5:LinkUp"));
}

// Thresholds live only in the recording rules: a dashboard compares with
// fabric:threshold:* series, never with a number of its own (0, 1 and the
// ACTIVE state 4 are facts, not thresholds).
TEST(DashboardsStaticTest, NoThresholdsHardCodedInDashboards) {
  const std::regex literal(
      R"(((==|!=|>=|<=|>|<)\s*(bool\s+)?|\*\s*)([0-9]*\.?[0-9]+(e[-+]?[0-9]+)?)\b)");
  int exprs = 0;
  for (const auto& expr : DashboardExprs()) {
    ++exprs;
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), literal);
         it != std::sregex_iterator(); ++it) {
      const std::string number = (*it)[4].str();
      EXPECT_TRUE(number == "0" || number == "1" || number == "4")
          << "literal " << number << " in: " << expr;
    }
  }
  EXPECT_GT(exprs, 40);
}

// title -> the expressions of its targets, for one dashboard.
std::map<std::string, std::vector<std::string>> PanelExprs(const char* name) {
  pt::ptree tree;
  pt::read_json(Src(std::string("dashboards/grafana/") + name), tree);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [_, p] : tree.get_child("panels")) {
    if (p.get<std::string>("type") == "row") continue;
    auto& exprs =
        out[p.get<std::string>("type") + ":" + p.get<std::string>("title")];
    for (const auto& [__, t] : p.get_child("targets")) {
      exprs.push_back(t.get<std::string>("expr"));
    }
  }
  return out;
}

// The overview's fleet trends (range panels over every port) read recorded
// aggregates: a join of 10 000 raw series at every step of a 1 h range took
// 4-19 s there (docs/alerting-scale.md).
TEST(DashboardsStaticTest, OverviewTrendsReadRecordingRules) {
  int trends = 0;
  for (const auto& [title, exprs] : PanelExprs("fabric-overview.json")) {
    if (title.rfind("timeseries:", 0) != 0) continue;
    for (const auto& expr : exprs) {
      ++trends;
      EXPECT_NE(expr.find("fabric:"), std::string::npos)
          << title << ": " << expr;
      EXPECT_EQ(expr.find("fabric_port_"), std::string::npos)
          << title << ": " << expr;
    }
  }
  EXPECT_GE(trends, 3);
}

// Which panel titles (type:title) name which series; every one must exist.
void ExpectPanels(
    const char* name,
    const std::vector<std::pair<std::string, std::string>>& title_and_series) {
  SCOPED_TRACE(name);
  const auto panels = PanelExprs(name);
  for (const auto& [title, series] : title_and_series) {
    auto it = panels.find(title);
    ASSERT_NE(it, panels.end()) << title;
    bool found = false;
    for (const auto& e : it->second)
      found |= e.find(series) != std::string::npos;
    EXPECT_TRUE(found) << title << " does not read " << series;
  }
}

TEST(DashboardsStaticTest, FabricDashboardShowsSmsSwitchesAndCabling) {
  ExpectPanels(
      "fabric.json",
      {{"stat:Master SMs", "fabric_sm_masters"},
       {"table:Subnet managers", "fabric_sm_state"},
       {"timeseries:SM activity (ActCount per second)",
        "fabric_sm_activity_total"},
       {"timeseries:OpenSM events per second by event",
        "fabric_opensm_events_total"},
       {"timeseries:Events dropped per second",
        "fabric_opensm_events_dropped_total"},
       {"timeseries:Heavy sweep duration",
        "fabric_opensm_heavy_sweep_duration_seconds"},
       {"timeseries:Traps per second by trap", "fabric_opensm_traps_total"},
       {"timeseries:Switch ports by role and state",
        "fabric:switch_ports:count_by_role"},
       {"table:Top 20 switch ports by transmit wait",
        "fabric:switch_port_transmit_wait_ratio:rate5m"},
       {"table:Ports of $switch", "fabric_switch_port_link_info"},
       {"table:Switch ports the selected host ports are cabled to",
        "fabric_switch_port_link_info"}});
  // The hottest switch ports link to that switch's view.
  pt::ptree tree;
  pt::read_json(Src("dashboards/grafana/fabric.json"), tree);
  EXPECT_EQ(tree.get<std::string>("uid"), "fabricmon-fabric");
  int linked = 0;
  for (const auto& [_, p] : tree.get_child("panels")) {
    const auto links = p.get_child_optional("fieldConfig.defaults.links");
    if (!links || p.get<std::string>("title").rfind("Top 20", 0) != 0) continue;
    for (const auto& [__, l] : *links) {
      linked += l.get<std::string>("url").find(
                    "/d/fabricmon-fabric/fabric?var-switch=${__data.fields."
                    "switch}") != std::string::npos;
    }
  }
  EXPECT_GE(linked, 3);
  // The port-detail dashboard names the switch port at the other end.
  ExpectPanels("port-detail.json", {{"table:Cabled to switch port",
                                     "fabric_switch_port_link_info"}});
}

// InfiniBand vs RoCE shows switch ports side by side (issue 45): the
// sweep's (switch_guid) beside the Ethernet switches' streamed over gNMI
// (none), the same recorded series where the meaning is the same.
TEST(DashboardsStaticTest, IbVsRoceShowsSwitchPortsSideBySide) {
  ExpectPanels(
      "ib-vs-roce.json",
      {{"timeseries:InfiniBand switch ports: transmit utilisation (top 10)",
        "fabric:switch_port_transmit_utilization_ratio:rate5m{cluster=~\"$"
        "cluster\",switch_guid!=\"\"}"},
       {"timeseries:RoCE switch ports: transmit utilisation (top 10)",
        "fabric:switch_port_transmit_utilization_ratio:rate5m{cluster=~\"$"
        "cluster\",switch_guid=\"\"}"},
       {"timeseries:InfiniBand switch ports: transmit-wait 5 m ratio (top 10)",
        "fabric:switch_port_transmit_wait_ratio:rate5m{cluster=~\"$cluster\","
        "switch_guid!=\"\"}"},
       {"timeseries:RoCE switch ports: transmit-wait or PFC-paused 5 m ratio, "
        "pausing ratio (top 10)",
        "fabric:switch_port_transmit_wait_ratio:rate5m{cluster=~\"$cluster\","
        "switch_guid=\"\"}"},
       {"timeseries:RoCE switch ports: ECN-marked packets per second (top 10)",
        "fabric:switch_port_ecn_marked_packets:rate5m"},
       {"table:InfiniBand switch ports: congestion roots",
        "fabric_congestion_root"},
       {"table:RoCE switch ports: congestion roots",
        "fabric:roce_switch_congestion_root:info"}});
}

TEST(DashboardsStaticTest, ProbesDashboardShowsRttHeatmapWorstPairsAndLoss) {
  ExpectPanels(
      "probes.json",
      {{"heatmap:RTT", "fabric_probe_port_rtt_seconds_bucket"},
       {"timeseries:Mean RTT and network RTT (selected pairs)",
        "fabric_probe_network_rtt_seconds_sum"},
       {"table:Worst pairs by mean RTT", "fabric:probe_rtt_seconds:mean5m"},
       {"table:Worst pairs against their own baseline",
        "fabric:probe_rtt_seconds:mean5m_baseline"},
       {"timeseries:Max RTT: worst 10 pairs", "fabric_probe_rtt_max_seconds"},
       {"table:Worst pairs by loss", "fabric:probe_loss_ratio:rate5m"},
       {"timeseries:Responder: probes rejected per second by reason",
        "fabric_probe_rejected_total"}});
}

// All expressions, dashboards' and rules', through promtool's parser.
TEST(DashboardsStaticTest, EveryExpressionParses) {
  if (RunShell("command -v promtool").first != 0) {
    MISSING_DEPENDENCY("promtool not installed");
  }
  std::vector<std::string> exprs = DashboardExprs();
  for (const auto& r : Rules()) exprs.push_back(r.expr);
  for (const auto& [_, q] : testing::RunbookQueries()) {
    exprs.push_back(testing::ForPrometheus(q));
  }
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
  ASSERT_FALSE(DocumentedMetrics().empty());
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
      // A histogram's series count as its name (core/metric_names.h).
      EXPECT_TRUE(IsDocumentedMetric(name))
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

// Every alert's runbook has queries to run (in ```promql blocks, so the
// tests find them: the parse check above, and alerts_e2e_test's
// EveryRunbookQueryReturnsDataInSomeScenario runs them against a real
// Prometheus).
TEST(DashboardsStaticTest, EveryRunbookHasPromqlQueries) {
  std::map<std::string, int> queries;
  for (const auto& [file, _] : testing::RunbookQueries()) ++queries[file];
  int runbooks = 0;
  for (const auto& r : Rules()) {
    if (!r.alert) continue;
    ++runbooks;
    EXPECT_GT(queries[r.name + ".md"], 0)
        << r.name << ".md has no promql block";
  }
  EXPECT_GE(runbooks, 30);
}

}  // namespace
}  // namespace fabric
