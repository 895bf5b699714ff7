#include "locate/report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace fabric::locate {

namespace {

std::string End(const LinkEnd& e, const std::string& name) {
  if (!e.ip.empty()) return e.ip;  // an IP-level link's end
  return (name.empty() ? GuidText(e.guid) : "\"" + name + "\"") + "[" +
         std::to_string(e.port) + "]";
}

// The counters a person reads first, both ends summed under the end's
// name: "a: symbol_error 12 link_downed 1; b: xmit_wait 3e+06".
std::string CounterText(const PortCounters& c) {
  std::string out;
  for (const auto& [name, v] : c) {
    if (v == 0) continue;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s %.6g", name.c_str(), v);
    out += (out.empty() ? "" : " ") + std::string(buf);
  }
  return out;
}

nlohmann::json EndJson(const LinkEnd& e, const std::string& name,
                       const PortCounters& counters) {
  nlohmann::json j = {{"name", name}, {"counters", nlohmann::json::object()}};
  if (e.ip.empty()) {
    j["guid"] = GuidText(e.guid);
    j["port"] = e.port;
  } else {
    j["address"] = e.ip;  // an IP-level link, a -> b
  }
  for (const auto& [k, v] : counters) j["counters"][k] = v;
  return j;
}

}  // namespace

std::string FormatTable(const Report& r) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "window %s: %d pairs, %d bad, %d good, %d without a verdict; "
                "traced %d bad and %d good\n",
                r.window.c_str(), r.pairs, r.bad, r.good, r.unknown,
                r.bad_traced, r.good_traced);
  out += buf;
  if (r.ranked.empty()) {
    out += "no link stands out: no bad pair could be traced\n";
  } else {
    out += "rank  votes  bad  good  link\n";
    int rank = 1;
    for (const RankedLink& l : r.ranked) {
      std::snprintf(buf, sizeof(buf), "%4d  %5.2f  %3d  %4d  ", rank++,
                    l.score.votes, l.score.bad_pairs, l.score.good_pairs);
      // IP-level links are directed (the hop a packet arrived by).
      const char* between = l.score.link.a.ip.empty() ? " <-> " : " -> ";
      out += buf + End(l.score.link.a, l.a_name) + between +
             End(l.score.link.b, l.b_name) + "\n";
      const std::string a = CounterText(l.a_counters);
      const std::string b = CounterText(l.b_counters);
      if (!a.empty()) out += "                        a: " + a + "\n";
      if (!b.empty()) out += "                        b: " + b + "\n";
      if (!l.jobs.empty()) {
        out += "                        jobs: " + JobsText(l.jobs) + "\n";
      }
    }
  }
  std::snprintf(buf, sizeof(buf), "%d links cleared by good pairs\n",
                r.cleared);
  out += buf;
  for (const UnplacedPair& p : r.unplaced) {
    out += "bad pair not placed: " + p.prober + " -> " + p.peer + " (" +
           p.verdict_reason + "): " + p.why + "\n";
  }
  return out;
}

std::string FormatJson(const Report& r) {
  nlohmann::json j;
  j["window"] = r.window;
  j["pairs"] = {{"total", r.pairs},
                {"bad", r.bad},
                {"good", r.good},
                {"unknown", r.unknown},
                {"bad_traced", r.bad_traced},
                {"good_traced", r.good_traced}};
  j["links"] = nlohmann::json::array();
  int rank = 1;
  for (const RankedLink& l : r.ranked) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const Job& job : l.jobs) {
      jobs.push_back({{"job_id", job.job_id},
                      {"user", job.user},
                      {"job_name", job.job_name}});
    }
    j["links"].push_back(
        {{"rank", rank++},
         {"jobs", jobs},
         {"votes", l.score.votes},
         {"bad_pairs", l.score.bad_pairs},
         {"good_pairs", l.score.good_pairs},
         {"a", EndJson(l.score.link.a, l.a_name, l.a_counters)},
         {"b", EndJson(l.score.link.b, l.b_name, l.b_counters)}});
  }
  j["cleared_links"] = r.cleared;
  j["unplaced_bad_pairs"] = nlohmann::json::array();
  for (const UnplacedPair& p : r.unplaced) {
    j["unplaced_bad_pairs"].push_back({{"prober", p.prober},
                                       {"peer", p.peer},
                                       {"reason", p.verdict_reason},
                                       {"why", p.why}});
  }
  if (!r.trace_stats.empty()) j["trace_stats"] = r.trace_stats;
  // Labels come from Prometheus: replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace fabric::locate
