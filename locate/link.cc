#include "locate/link.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "locate/counters.h"

namespace fabric::locate {

namespace {

// Every label but __name__, "k=v,...": the join key of host series.
std::string SeriesKey(const PromSample& s) {
  std::string key;
  for (const auto& [k, v] : s.labels) {
    if (k != "__name__") key += k + "=" + v + ",";
  }
  return key;
}

LinkDestination* Find(std::vector<LinkDestination>* d, std::uint16_t lid) {
  auto it = std::lower_bound(
      d->begin(), d->end(), lid,
      [](const LinkDestination& x, std::uint16_t l) { return x.lid < l; });
  return it != d->end() && it->lid == lid ? &*it : nullptr;
}

std::string Number(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", *v);
  return buf;
}

const char* TypeName(int type) {
  switch (type) {
    case 1:
      return "ca";
    case 2:
      return "switch";
    case 3:
      return "router";
    default:
      return "?";
  }
}

}  // namespace

std::optional<LinkSpec> ParseLinkSpec(std::string_view text,
                                      std::string* error) {
  const std::size_t colon = text.rfind(':');
  std::string_view guid = text.substr(0, colon);
  if (guid.starts_with("0x") || guid.starts_with("0X")) guid.remove_prefix(2);
  LinkSpec out;
  bool ok =
      colon != std::string_view::npos && !guid.empty() && guid.size() <= 16;
  if (ok) {
    const auto [p, ec] =
        std::from_chars(guid.data(), guid.data() + guid.size(), out.guid, 16);
    ok = ec == std::errc() && p == guid.data() + guid.size();
  }
  if (ok) {
    const std::string_view port = text.substr(colon + 1);
    const auto [p, ec] =
        std::from_chars(port.data(), port.data() + port.size(), out.port);
    ok = !port.empty() && ec == std::errc() && p == port.data() + port.size() &&
         out.port >= 1 && out.port <= 254;
  }
  if (!ok) {
    *error =
        "--link wants SWITCH_GUID:PORT (e.g. 0x0002c90300000001:7), not \"" +
        std::string(text) + "\"";
    return std::nullopt;
  }
  return out;
}

LinkQueries MakeLinkQueries(const std::string& window, const LinkSpec& link) {
  const std::string sel = "{switch_guid=\"" + GuidText(link.guid) +
                          "\",port=\"" + std::to_string(link.port) + "\"}[" +
                          window + "]";
  // max: the sweep and OpenSM's PerfMgr may both export the port.
  return {
      "max(increase(fabric_switch_port_transmit_bytes_total" + sel + "))",
      "max(increase(fabric_switch_port_transmit_wait_total" + sel + "))",
      "last_over_time(fabric_port_lid[" + window + "])",
      "increase(fabric_port_receive_bytes_total[" + window + "])",
  };
}

void JoinHostTraffic(const std::vector<PromSample>& lids,
                     const std::vector<PromSample>& rcv,
                     std::vector<LinkDestination>* destinations) {
  std::map<std::string, double> bytes;
  for (const PromSample& s : rcv) {
    if (std::isfinite(s.value)) bytes[SeriesKey(s)] += s.value;
  }
  for (const PromSample& s : lids) {
    if (!(s.value >= 1 && s.value < 0xc000) || s.value != std::floor(s.value)) {
      continue;
    }
    LinkDestination* d =
        Find(destinations, static_cast<std::uint16_t>(s.value));
    if (!d) continue;
    std::string where;
    for (const char* k : {"instance", "device", "port"}) {
      const auto it = s.labels.find(k);
      if (it != s.labels.end()) {
        where += (where.empty() ? "" : "/") + it->second;
      }
    }
    d->host_port = where;
    const auto b = bytes.find(SeriesKey(s));
    if (b != bytes.end()) d->rcv_bytes = d->rcv_bytes.value_or(0) + b->second;
  }
}

bool AddCrossingPair(const ProbePair& pair,
                     std::vector<LinkDestination>* destinations) {
  LinkDestination* d = Find(destinations, pair.dst_lid);
  if (!d) return false;
  ++d->pairs;
  d->sent += pair.measure.sent;
  d->lost += pair.measure.lost;
  if (pair.verdict.verdict == Verdict::kBad) {
    ++d->bad_pairs;
    d->bad.push_back(pair.prober + " -> " + pair.peer + ": " +
                     pair.verdict.reason);
  }
  return true;
}

std::optional<double> SumOf(const std::vector<PromSample>& samples) {
  if (samples.empty()) return std::nullopt;
  double sum = 0;
  for (const PromSample& s : samples) sum += s.value;
  return sum;
}

std::string FormatLinkTable(const LinkReport& r) {
  std::string out = "link " + GuidText(r.link.guid) + "[" +
                    std::to_string(r.link.port) + "] \"" + r.switch_name +
                    "\"" + (r.remote.empty() ? "" : " -> " + r.remote) + ": " +
                    std::to_string(r.destinations.size()) +
                    " destination LIDs routed out of it\n";
  if (r.queried) {
    out += "window " + r.window + ": port transmitted " + Number(r.xmit_bytes) +
           " bytes, transmit wait " + Number(r.xmit_wait) + " ticks\n";
  }
  out +=
      "  lid  type    node                              rcv_bytes  "
      "pairs  bad  loss\n";
  for (const LinkDestination& d : r.destinations) {
    char buf[256];
    const std::string name =
        d.name.empty() ? "(no node has this LID)" : "\"" + d.name + "\"";
    const std::string loss =
        d.sent > 0 ? Number(d.lost / d.sent) : std::string("-");
    std::snprintf(buf, sizeof(buf), "%5u  %-6s  %-32s  %10s  %5d  %3d  %s\n",
                  static_cast<unsigned>(d.lid), TypeName(d.type), name.c_str(),
                  Number(d.rcv_bytes).c_str(), d.pairs, d.bad_pairs,
                  loss.c_str());
    out += buf;
    for (const std::string& b : d.bad) out += "         bad pair " + b + "\n";
  }
  return out;
}

std::string FormatLinkJson(const LinkReport& r) {
  using nlohmann::json;
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(); };
  json j = {{"link",
             {{"switch_guid", GuidText(r.link.guid)},
              {"port", r.link.port},
              {"switch", r.switch_name},
              {"remote", r.remote}}},
            {"window", r.window},
            {"xmit_bytes", opt(r.xmit_bytes)},
            {"xmit_wait", opt(r.xmit_wait)},
            {"destinations", json::array()}};
  for (const LinkDestination& d : r.destinations) {
    j["destinations"].push_back({{"lid", d.lid},
                                 {"name", d.name},
                                 {"node_guid", GuidText(d.node_guid)},
                                 {"port", d.port},
                                 {"type", TypeName(d.type)},
                                 {"host_port", d.host_port},
                                 {"rcv_bytes", opt(d.rcv_bytes)},
                                 {"pairs", d.pairs},
                                 {"bad_pairs", d.bad_pairs},
                                 {"sent", d.sent},
                                 {"lost", d.lost},
                                 {"bad", d.bad}});
  }
  if (!r.trace_stats.empty()) j["trace_stats"] = r.trace_stats;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace fabric::locate
