#include "benchtool/results.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace fabric::bench {

using nlohmann::json;

namespace {

json InfoJson(const RunInfo& info) {
  json j;
  j["hosts"] = info.hosts;
  j["link"] = info.link;
  j["devices_from"] = info.devices_from;
  j["devices"] = json::array();
  for (const auto& d : info.devices) {
    json jd = {{"name", d.name},
               {"hca_model", d.hca_model},
               {"board_id", d.board_id},
               {"firmware", d.firmware},
               {"ports", json::array()}};
    for (const auto& p : d.ports) {
      jd["ports"].push_back({{"port", p.port},
                             {"link_layer", p.link_layer},
                             {"rate", p.rate},
                             {"mtu", p.mtu},
                             {"state", p.state}});
    }
    j["devices"].push_back(jd);
  }
  j["line_rate_bytes_per_second"] = info.line_rate_bytes_per_second;
  j["line_rate_source"] = info.line_rate_source;
  j["start_time"] = info.start_time;
  j["end_time"] = info.end_time;
  j["fabricmon_version"] = info.fabricmon_version;
  j["fabricmon_revision"] = info.fabricmon_revision;
  j["host_fabric_classes"] = info.host_fabric_classes;
  j["fabric_class"] = info.fabric_class;
  j["mixed_warning"] = info.mixed_warning;
  if (!info.slurm_job_id.empty()) {
    j["slurm"] = {{"job_id", info.slurm_job_id},
                  {"job_name", info.slurm_job_name},
                  {"nodelist", info.slurm_job_nodelist}};
  }
  return j;
}

RunInfo InfoFromJson(const json& j) {
  RunInfo info;
  info.hosts = j.value("hosts", std::vector<std::string>{});
  info.link = j.value("link", "");
  info.devices_from = j.value("devices_from", "");
  for (const auto& jd : j.value("devices", json::array())) {
    DeviceInfo d;
    d.name = jd.value("name", "");
    d.hca_model = jd.value("hca_model", "unknown");
    d.board_id = jd.value("board_id", "unknown");
    d.firmware = jd.value("firmware", "unknown");
    for (const auto& jp : jd.value("ports", json::array())) {
      d.ports.push_back(
          {jp.value("port", ""), jp.value("link_layer", "unknown"),
           jp.value("rate", "unknown"), jp.value("mtu", "unknown"),
           jp.value("state", "unknown")});
    }
    info.devices.push_back(std::move(d));
  }
  info.line_rate_bytes_per_second = j.value("line_rate_bytes_per_second", 0.0);
  info.line_rate_source = j.value("line_rate_source", "");
  info.start_time = j.value("start_time", "");
  info.end_time = j.value("end_time", "");
  info.fabricmon_version = j.value("fabricmon_version", "");
  info.fabricmon_revision = j.value("fabricmon_revision", "");
  info.host_fabric_classes =
      j.value("host_fabric_classes", std::vector<std::string>{});
  info.fabric_class = j.value("fabric_class", "");
  info.mixed_warning = j.value("mixed_warning", "");
  const json slurm = j.value("slurm", json::object());
  info.slurm_job_id = slurm.value("job_id", "");
  info.slurm_job_name = slurm.value("job_name", "");
  info.slurm_job_nodelist = slurm.value("nodelist", "");
  return info;
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p% of the sample at or
  // below it.
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  if (rank == 0) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

double TailPercentile(std::size_t n) {
  if (n >= 200) return 99;
  if (n >= 40) return 95;
  if (n >= 20) return 90;
  return 100;
}

std::string TailName(std::size_t n) {
  double p = TailPercentile(n);
  return p == 100 ? "max" : "p" + std::to_string(static_cast<int>(p));
}

Results Summarize(const RunOptions& o, const RunOutcome& outcome,
                  const std::string& label, RunInfo info) {
  Results r;
  r.iterations = o.iterations;
  r.interrupted = outcome.interrupted;
  r.info = std::move(info);
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
    row.tail_name = TailName(m.seconds.size());
    row.tail_seconds = Percentile(m.seconds, TailPercentile(m.seconds.size()));
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
  j["iterations"] = r.iterations;
  j["interrupted"] = r.interrupted;
  j["metadata"] = InfoJson(r.info);
  j["results"] = json::array();
  for (const auto& row : r.results) {
    json jr;
    jr["size_bytes"] = row.size_bytes;
    jr["time_seconds"] = row.time_seconds;
    jr["p50_seconds"] = row.p50_seconds;
    jr["tail_name"] = row.tail_name;
    jr["tail_seconds"] = row.tail_seconds;
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
    r.iterations = j.value("iterations", 0);
    r.interrupted = j.value("interrupted", false);
    if (j.contains("metadata")) r.info = InfoFromJson(j["metadata"]);
    for (const auto& jr : j.at("results")) {
      SizeRow row;
      row.size_bytes = jr.at("size_bytes").get<std::uint64_t>();
      row.time_seconds = jr.at("time_seconds").get<double>();
      row.algbw_bytes_per_second =
          jr.at("algbw_bytes_per_second").get<double>();
      row.busbw_bytes_per_second =
          jr.at("busbw_bytes_per_second").get<double>();
      row.p50_seconds = jr.value("p50_seconds", row.time_seconds);
      row.tail_seconds =
          jr.value("tail_seconds", jr.value("p99_seconds", row.time_seconds));
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
      // An old file's p99_seconds is a nearest-rank p99: the maximum below
      // 100 iterations.
      row.tail_name =
          jr.value("tail_name", row.iterations.size() >= 100 ? "p99" : "max");
      r.results.push_back(std::move(row));
    }
    return r;
  } catch (const std::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

}  // namespace fabric::bench
