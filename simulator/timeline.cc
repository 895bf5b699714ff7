#include "simulator/timeline.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>

namespace fabric::sim {
namespace {

constexpr std::string_view kNames[] = {
    "steady",
    "congestion-hotspot",
    "pfc-storm",
    "link-flap",
    "symbol-errors",
    "link-degraded",
    "counter-saturation",
    "device-removed",
    "sm-failover",
    "sm-hung",
    "probe-loss",
    "dying-cable",
    "roce-cc-off",
    "slow-receiver",
    "oversubscribed-uplink",
    "unbalanced-links",
};

std::string Where(const YAML::Node& node) {
  return " (line " + std::to_string(node.Mark().line + 1) + ")";
}

bool ReadDuration(const YAML::Node& parent, const char* key, Duration* out,
                  std::string* error) {
  const YAML::Node node = parent[key];
  if (!node) return true;
  const auto d = ParseDuration(node.as<std::string>());
  if (!d) {
    *error = std::string("bad duration in '") + key + "'" + Where(node);
    return false;
  }
  *out = *d;
  return true;
}

bool ReadDouble(const YAML::Node& parent, const char* key, double* out,
                std::string* error) {
  const YAML::Node node = parent[key];
  if (!node) return true;
  try {
    *out = node.as<double>();
  } catch (const YAML::Exception&) {
    *error = std::string("bad number in '") + key + "'" + Where(node);
    return false;
  }
  return true;
}

// `slurm:` (docs/simulator.md): cgroup layout and jobs.
bool ReadSlurm(const YAML::Node& slurm, Timeline* timeline,
               std::string* error) {
  if (!slurm.IsMap()) {
    *error = "slurm: must be a mapping with 'jobs'" + Where(slurm);
    return false;
  }
  timeline->slurm_declared = true;
  if (const YAML::Node cgroup = slurm["cgroup"]) {
    const std::string v = cgroup.as<std::string>();
    if (v != "v1" && v != "v2") {
      *error = "slurm: cgroup must be v1 or v2" + Where(cgroup);
      return false;
    }
    timeline->cgroup_v1 = v == "v1";
  }
  const YAML::Node jobs = slurm["jobs"];
  if (!jobs) return true;
  if (!jobs.IsSequence()) {
    *error = "slurm: jobs must be a list" + Where(jobs);
    return false;
  }
  for (const YAML::Node& node : jobs) {
    SimJob job;
    job.id = node["id"] ? node["id"].as<std::string>() : "";
    if (job.id.empty() || job.id.size() > 18 ||
        job.id.find_first_not_of("0123456789") != std::string::npos) {
      *error = "slurm: a job needs an 'id' of digits" + Where(node);
      return false;
    }
    for (const auto& [key, out] :
         {std::pair{"name", &job.name}, std::pair{"user", &job.user}}) {
      *out = node[key] ? node[key].as<std::string>() : "";
      if (out->empty() ||
          out->find_first_of(std::string("\0\n=", 3)) != std::string::npos) {
        *error = std::string("slurm: job ") + job.id + " needs a '" + key +
                 "' (one line, no '=')" + Where(node);
        return false;
      }
    }
    job.uid = 1000 + static_cast<std::uint32_t>(timeline->jobs.size());
    if (node["uid"]) {
      const auto uid = node["uid"].as<long long>(-1);
      if (uid < 0 || uid > 0xfffffffeLL) {
        *error = "slurm: job " + job.id + ": bad uid" + Where(node["uid"]);
        return false;
      }
      job.uid = static_cast<std::uint32_t>(uid);
    }
    const YAML::Node hosts = node["hosts"];
    if (hosts && hosts.IsSequence()) {
      for (const YAML::Node& h : hosts) job.hosts.push_back(h.as<int>(-1));
    }
    if (job.hosts.empty() || std::any_of(job.hosts.begin(), job.hosts.end(),
                                         [](int h) { return h < 0; })) {
      *error = "slurm: job " + job.id +
               " needs 'hosts', a list of host indexes" + Where(node);
      return false;
    }
    if (!ReadDuration(node, "start", &job.start, error) ||
        !ReadDuration(node, "duration", &job.duration, error)) {
      return false;
    }
    for (const SimJob& other : timeline->jobs) {
      if (other.id == job.id) {
        *error = "slurm: job " + job.id + " twice" + Where(node);
        return false;
      }
    }
    timeline->jobs.push_back(std::move(job));
  }
  return true;
}

}  // namespace

const std::vector<std::string>& ScenarioNames() {
  static const std::vector<std::string> names(std::begin(kNames),
                                              std::end(kNames));
  return names;
}

std::optional<Scenario> ParseScenario(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<Scenario>(i);
  }
  return std::nullopt;
}

std::string_view ScenarioName(Scenario s) {
  return kNames[static_cast<int>(s)];
}

std::optional<Duration> ParseDuration(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  size_t unit_at = 0;
  while (unit_at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_at])) ||
          text[unit_at] == '.')) {
    ++unit_at;
  }
  if (unit_at == 0) return std::nullopt;
  double value = 0;
  const auto number = text.substr(0, unit_at);
  const auto [ptr, ec] =
      std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size()) {
    return std::nullopt;
  }
  const auto unit = text.substr(unit_at);
  double ns_per_unit = 0;
  if (unit.empty() || unit == "s") {
    ns_per_unit = 1e9;
  } else if (unit == "ms") {
    ns_per_unit = 1e6;
  } else if (unit == "us") {
    ns_per_unit = 1e3;
  } else if (unit == "ns") {
    ns_per_unit = 1;
  } else if (unit == "m") {
    ns_per_unit = 60e9;
  } else if (unit == "h") {
    ns_per_unit = 3600e9;
  } else {
    return std::nullopt;
  }
  const double ns = value * ns_per_unit;
  if (!std::isfinite(ns) || ns > 1e18) return std::nullopt;
  return Duration(static_cast<std::int64_t>(std::llround(ns)));
}

bool Event::ActiveAt(Duration t, Duration* local) const {
  if (t < start) return false;
  const Duration since = t - start;
  if (duration.count() > 0 && since >= duration) return false;
  Duration on = since;
  if (burst_length.count() > 0 && burst_period.count() > 0) {
    on = since % burst_period;
    if (on >= burst_length) return false;
  }
  if (local) *local = on;
  return true;
}

Timeline SingleScenario(Scenario scenario) {
  Timeline timeline;
  Event event;
  event.scenario = scenario;
  timeline.events.push_back(event);
  return timeline;
}

std::optional<Timeline> ParseTimeline(std::string_view yaml,
                                      std::string* error) {
  Timeline timeline;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) {
      *error = "timeline must be a YAML mapping with 'events'";
      return std::nullopt;
    }
    if (const YAML::Node traffic = root["traffic"]) {
      Traffic& t = timeline.traffic;
      if (!ReadDuration(traffic, "period", &t.period, error) ||
          !ReadDouble(traffic, "duty_cycle", &t.duty_cycle, error) ||
          !ReadDouble(traffic, "load", &t.load, error) ||
          !ReadDouble(traffic, "size_bytes", &t.size_bytes, error)) {
        return std::nullopt;
      }
      if (t.period.count() <= 0 || t.duty_cycle < 0 || t.duty_cycle > 1 ||
          t.load < 0 || t.load > 1 || t.size_bytes < 0) {
        *error =
            "traffic: need period > 0, 0 <= duty_cycle <= 1, "
            "0 <= load <= 1, size_bytes >= 0" +
            Where(traffic);
        return std::nullopt;
      }
    }
    if (const YAML::Node fabric = root["fabric"]) {
      if (const YAML::Node uplinks = fabric["uplinks"]) {
        try {
          timeline.uplinks = uplinks.as<int>();
        } catch (const YAML::Exception&) {
          timeline.uplinks = 0;
        }
        if (timeline.uplinks < 1 || timeline.uplinks > kMaxUplinks) {
          *error = "fabric: uplinks must be 1.." + std::to_string(kMaxUplinks) +
                   Where(uplinks);
          return std::nullopt;
        }
      }
      if (const YAML::Node asic = fabric["switch_asic"]) {
        const std::string name = asic.as<std::string>();
        if (name != "quantum-2" && name != "generic") {
          *error =
              "fabric: switch_asic must be quantum-2 or generic" + Where(asic);
          return std::nullopt;
        }
        timeline.quantum_switches = name == "quantum-2";
      }
    }
    if (const YAML::Node slurm = root["slurm"]) {
      if (!ReadSlurm(slurm, &timeline, error)) return std::nullopt;
    }
    const YAML::Node events = root["events"];
    if (!events || !events.IsSequence()) {
      *error = "'events' must be a list" + Where(root);
      return std::nullopt;
    }
    for (const YAML::Node& node : events) {
      Event event;
      const YAML::Node name = node["scenario"];
      if (!name) {
        *error = "event without 'scenario'" + Where(node);
        return std::nullopt;
      }
      const auto scenario = ParseScenario(name.as<std::string>());
      if (!scenario) {
        *error =
            "unknown scenario '" + name.as<std::string>() + "'" + Where(name);
        return std::nullopt;
      }
      event.scenario = *scenario;
      if (!ReadDuration(node, "start", &event.start, error) ||
          !ReadDuration(node, "duration", &event.duration, error) ||
          !ReadDuration(node, "burst_length", &event.burst_length, error) ||
          !ReadDuration(node, "burst_period", &event.burst_period, error)) {
        return std::nullopt;
      }
      if ((event.burst_length.count() > 0) !=
          (event.burst_period.count() > 0)) {
        *error = "burst_length and burst_period go together" + Where(node);
        return std::nullopt;
      }
      if (node["host"]) event.host = node["host"].as<int>();
      if (node["device"]) event.device = node["device"].as<std::string>();
      timeline.events.push_back(std::move(event));
    }
  } catch (const YAML::Exception& e) {
    *error = std::string("YAML: ") + e.what();
    return std::nullopt;
  }
  return timeline;
}

}  // namespace fabric::sim
