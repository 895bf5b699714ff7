// Every PromQL expression fabricmon ships for Prometheus to run: each
// Grafana panel query (dashboards/grafana/*.json) and each recording and
// alerting rule (dashboards/prometheus/*_rules.yml), and how the tests
// query one for "does it return data". alerts_e2e_test runs them all on
// the simulated fabric; gnmi_congestion_test runs those that read only
// RoCE switch ports streamed over gNMI (ReadsGnmiSwitchPortsOnly), which
// the simulated fabric has none of.
// Thread-safety: pure functions over files read once per call.
#pragma once

#include <yaml-cpp/yaml.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/paths.h"

namespace fabric::testing {

inline void CollectPanelExprs(const boost::property_tree::ptree& node,
                              std::vector<std::string>& out) {
  for (const auto& [key, child] : node) {
    if (key == "expr" && child.empty()) out.push_back(child.data());
    CollectPanelExprs(child, out);
  }
}

// {where (dashboard file or rule name), expr}.
inline std::vector<std::pair<std::string, std::string>> AllExprs() {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e :
       fs::directory_iterator(SourceDir() + "/dashboards/grafana")) {
    if (e.path().extension() != ".json") continue;
    boost::property_tree::ptree tree;
    boost::property_tree::read_json(e.path().string(), tree);
    std::vector<std::string> exprs;
    CollectPanelExprs(tree.get_child("panels"), exprs);
    for (auto& x : exprs) out.emplace_back(e.path().filename().string(), x);
  }
  for (const char* f : {"recording_rules.yml", "alerting_rules.yml"}) {
    const YAML::Node doc =
        YAML::LoadFile(SourceDir() + "/dashboards/prometheus/" + f);
    for (const auto& g : doc["groups"]) {
      for (const auto& r : g["rules"]) {
        out.emplace_back(
            (r["alert"] ? r["alert"] : r["record"]).as<std::string>(),
            r["expr"].as<std::string>());
      }
    }
  }
  return out;
}

// Grafana variables -> match-all; comparison filters -> `bool`, so "is
// there data" does not depend on whether a threshold is crossed right now;
// `offset` -> 1 s, so a comparison with the past has a past in a stack that
// has run for seconds.
inline std::string ForQuery(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "1m");
  expr = std::regex_replace(expr, std::regex(R"(\$\{?[a-z_]+\}?)"), ".*");
  expr = std::regex_replace(expr, std::regex(R"((==|!=|>=|<=|>|<)\s)"),
                            "$1 bool ");
  expr = std::regex_replace(expr, std::regex(R"(\boffset \w+)"), "offset 1s");
  return expr;
}

// An expression over RoCE switch ports streamed over gNMI (issue 45) and
// no InfiniBand switch: their Ethernet-only families, the series recorded
// from them (fabric:roce_switch_*, the switch-port PFC and ECN rates), or a
// switch port selected by having no switch_guid; and neither a switch port
// selected by having one nor the IB sweep's trees (a rule over both
// fabrics has data on the simulated one).
inline bool ReadsGnmiSwitchPortsOnly(const std::string& expr) {
  static const std::regex gnmi(
      R"(fabric_switch_port_(pfc|queue)_|fabric:roce_switch_|)"
      R"(fabric:switch_port_(pfc_pause|ecn_marked)|switch_guid="")");
  static const std::regex ib(R"(switch_guid!=""|fabric_congestion_)");
  return std::regex_search(expr, gnmi) && !std::regex_search(expr, ib);
}

}  // namespace fabric::testing
