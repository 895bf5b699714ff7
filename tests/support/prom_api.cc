#include "tests/support/prom_api.h"

#include <boost/property_tree/json_parser.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/http.h"
#include "tests/support/paths.h"

namespace fabric::testing::prom {

namespace pt = boost::property_tree;

std::optional<pt::ptree> GetJson(int port, const std::string& target) {
  const auto body = HttpGetOk(port, target);
  if (!body) return std::nullopt;
  pt::ptree tree;
  try {
    std::istringstream in(*body);
    pt::read_json(in, tree);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return tree;
}

std::optional<std::vector<Sample>> Query(int port, const std::string& expr) {
  const auto tree = GetJson(port, "/api/v1/query?query=" + UrlEncode(expr));
  if (!tree || tree->get<std::string>("status", "") != "success") {
    return std::nullopt;
  }
  // A value is [time, "text"]; a scalar result is one, a vector a list of
  // {metric, value}.
  auto sample = [](const pt::ptree& value) {
    Sample s;
    s.text = value.back().second.data();
    s.value = std::stod(s.text);
    return s;
  };
  try {
    const auto& data = tree->get_child("data");
    if (data.get<std::string>("resultType") == "scalar") {
      return std::vector<Sample>{sample(data.get_child("result"))};
    }
    std::vector<Sample> out;
    for (const auto& [_, r] : data.get_child("result")) {
      Sample s = sample(r.get_child("value"));
      for (const auto& [k, v] : r.get_child("metric")) s.labels[k] = v.data();
      out.push_back(std::move(s));
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<Alert> ParseAlerts(const pt::ptree& json, const std::string& path) {
  std::vector<Alert> out;
  try {
    for (const auto& [_, a] : path.empty() ? json : json.get_child(path)) {
      Alert alert;
      alert.state = a.get<std::string>("state", "firing");
      for (const auto& [k, v] : a.get_child("labels")) {
        alert.labels[k] = v.data();
      }
      alert.name = alert.labels["alertname"];
      if (const auto notes = a.get_child_optional("annotations")) {
        for (const auto& [k, v] : *notes) alert.annotations[k] = v.data();
      }
      out.push_back(std::move(alert));
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

std::vector<Alert> Alerts(int port) {
  const auto json = GetJson(port, "/api/v1/alerts");
  return json ? ParseAlerts(*json, "data.alerts") : std::vector<Alert>{};
}

void WriteFastRules(const std::filesystem::path& dir, bool short_windows) {
  for (const char* f : {"recording_rules.yml", "alerting_rules.yml"}) {
    std::ifstream in(SourceDir() + "/dashboards/prometheus/" + f);
    std::stringstream read;
    read << in.rdbuf();
    std::string text = read.str();
    text = std::regex_replace(text, std::regex(R"(\bfor: \w+)"), "for: 2s");
    text = std::regex_replace(text, std::regex(R"(\binterval: \w+)"),
                              "interval: 1s");
    if (short_windows) {
      text = std::regex_replace(text, std::regex(R"(\[\d+[smhd]\])"), "[20s]");
    }
    std::ofstream(dir / f) << text;
  }
}

}  // namespace fabric::testing::prom
