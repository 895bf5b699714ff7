#include "benchtool/results.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace fabric::bench {

using nlohmann::json;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p% of the sample at or
  // below it.
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  if (rank == 0) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

Results Summarize(const RunOptions& o, const RunOutcome& outcome,
                  const std::string& label) {
  Results r;
  r.pattern = std::string(PatternName(o.pattern));
  r.hosts = static_cast<int>(o.hosts.size());
  r.tp = o.pattern == Pattern::kTpDp ? o.tp : 0;
  r.transport = o.transport;
  r.label = label;
  r.warmup = o.warmup;
  double factor = BusBwFactor(o.pattern, r.hosts, o.tp);
  for (const auto& m : outcome.sizes) {
    SizeRow row;
    row.size_bytes = m.size_bytes;
    row.p50_seconds = Percentile(m.seconds, 50);
    row.p99_seconds = Percentile(m.seconds, 99);
    // The median proper (mean of the two middle values for an even count).
    std::vector<double> s = m.seconds;
    std::sort(s.begin(), s.end());
    std::size_t n = s.size();
    row.time_seconds = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    row.algbw_bytes_per_second =
        row.time_seconds > 0 ? m.size_bytes / row.time_seconds : 0;
    row.busbw_bytes_per_second = row.algbw_bytes_per_second * factor;
    for (std::size_t i = 0; i < m.seconds.size(); ++i) {
      row.iterations.push_back({m.seconds[i], m.counters[i]});
    }
    r.results.push_back(std::move(row));
  }
  return r;
}

std::string ToJson(const Results& r) {
  json j;
  j["pattern"] = r.pattern;
  j["hosts"] = r.hosts;
  if (r.tp) j["tp"] = r.tp;
  j["transport"] = r.transport;
  j["label"] = r.label;
  j["warmup"] = r.warmup;
  j["results"] = json::array();
  for (const auto& row : r.results) {
    json jr;
    jr["size_bytes"] = row.size_bytes;
    jr["time_seconds"] = row.time_seconds;
    jr["p50_seconds"] = row.p50_seconds;
    jr["p99_seconds"] = row.p99_seconds;
    jr["algbw_bytes_per_second"] = row.algbw_bytes_per_second;
    jr["busbw_bytes_per_second"] = row.busbw_bytes_per_second;
    jr["iterations"] = json::array();
    for (const auto& it : row.iterations) {
      json ji;
      ji["seconds"] = it.seconds;
      ji["counters"] = json::object();
      for (const auto& [k, v] : it.counters) ji["counters"][k] = v;
      jr["iterations"].push_back(ji);
    }
    j["results"].push_back(jr);
  }
  return j.dump(2) + "\n";
}

std::optional<Results> FromJson(const std::string& text, std::string* error) {
  try {
    json j = json::parse(text);
    Results r;
    r.pattern = j.at("pattern").get<std::string>();
    r.hosts = j.at("hosts").get<int>();
    r.tp = j.value("tp", 0);
    r.transport = j.value("transport", std::string("tcp"));
    r.label = j.value("label", std::string());
    r.warmup = j.value("warmup", 0);
    for (const auto& jr : j.at("results")) {
      SizeRow row;
      row.size_bytes = jr.at("size_bytes").get<std::uint64_t>();
      row.time_seconds = jr.at("time_seconds").get<double>();
      row.algbw_bytes_per_second =
          jr.at("algbw_bytes_per_second").get<double>();
      row.busbw_bytes_per_second =
          jr.at("busbw_bytes_per_second").get<double>();
      row.p50_seconds = jr.value("p50_seconds", row.time_seconds);
      row.p99_seconds = jr.value("p99_seconds", row.time_seconds);
      if (jr.contains("iterations")) {
        for (const auto& ji : jr["iterations"]) {
          IterationRow it;
          it.seconds = ji.at("seconds").get<double>();
          if (ji.contains("counters")) {
            for (auto& [k, v] : ji["counters"].items()) {
              it.counters[k] = v.get<std::uint64_t>();
            }
          }
          row.iterations.push_back(std::move(it));
        }
      }
      r.results.push_back(std::move(row));
    }
    return r;
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

}  // namespace fabric::bench
