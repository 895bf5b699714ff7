// The Prometheus HTTP API as the integration tests read it from Prometheus,
// VictoriaMetrics, vmalert and Alertmanager (one parser for all of them):
// a JSON answer, an instant query's samples, the alerts; and the shipped
// rule files rewritten so that alerts fire within a test's seconds.
// Thread-safety: each call is self-contained.
#pragma once

#include <boost/property_tree/ptree.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabric::testing::prom {

// The body of a 200 answer to GET http://127.0.0.1:`port``target`, parsed
// as JSON; nullopt when nothing answers 200 or the body is not JSON.
std::optional<boost::property_tree::ptree> GetJson(int port,
                                                   const std::string& target);

struct Sample {
  std::map<std::string, std::string> labels;  // none for a scalar result
  std::string text;  // the value as the server wrote it ("18", "NaN")
  double value = 0;
};

// Instant query (/api/v1/query), a vector or scalar result; nullopt when
// the server does not answer, answers an error (invalid PromQL) or not JSON.
std::optional<std::vector<Sample>> Query(int port, const std::string& expr);

struct Alert {
  std::string name;  // the alertname label
  // "firing" or "pending"; "firing" where the answer has no state
  // (Alertmanager's /api/v2/alerts lists only what it received as firing).
  std::string state;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;  // empty where none
};

// The alerts listed at `path` of a JSON answer ("" = the top level);
// none when the path is absent or an alert is malformed.
std::vector<Alert> ParseAlerts(const boost::property_tree::ptree& json,
                               const std::string& path);

// Every alert of /api/v1/alerts (Prometheus, vmalert), pending ones too.
std::vector<Alert> Alerts(int port);

// The shipped dashboards/prometheus/{recording,alerting}_rules.yml, written
// into `dir` under the same names, made to act within seconds: every `for:`
// 2 s and every group evaluated every 1 s (the 5 m memory groups too, so they
// have run before a test's first assertion). `short_windows`: every range
// selector 20 s, so a stack up for a minute has full windows.
void WriteFastRules(const std::filesystem::path& dir,
                    bool short_windows = false);

}  // namespace fabric::testing::prom
