#include "locate/counters.h"

#include <charconv>
#include <cstdio>

namespace fabric::locate {

std::string GuidText(std::uint64_t guid) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx",
                static_cast<unsigned long long>(guid));
  return buf;
}

std::vector<CounterQuery> MakeCounterQueries(
    const std::string& window, const std::vector<std::uint64_t>& guids) {
  std::string re;
  for (std::uint64_t g : guids) re += (re.empty() ? "" : "|") + GuidText(g);
  const std::string sel = "{switch_guid=~\"" + re + "\"}[" + window + "]";
  auto inc = [&](const std::string& series, const std::string& by) {
    return "sum by (switch_guid, port" + by + ") (increase(" + series + sel +
           "))";
  };
  return {
      {inc("fabric_switch_port_errors_total", ", error"), ""},
      {inc("fabric_switch_port_transmit_wait_total", ""), "xmit_wait"},
      {inc("fabric_switch_port_fec_corrected_symbols_total", ""),
       "fec_corrected_symbols"},
      {inc("fabric_switch_port_fec_uncorrectable_blocks_total", ""),
       "fec_uncorrectable_blocks"},
  };
}

void JoinCounters(const CounterQuery& query,
                  const std::vector<PromSample>& samples,
                  std::map<LinkEnd, PortCounters>* out) {
  for (const PromSample& s : samples) {
    const auto g = s.labels.find("switch_guid");
    const auto p = s.labels.find("port");
    if (g == s.labels.end() || p == s.labels.end()) continue;
    const std::string& gt = g->second;
    std::uint64_t guid = 0;
    int port = 0;
    if (gt.size() < 3 || !gt.starts_with("0x")) continue;
    auto [ge, gec] =
        std::from_chars(gt.data() + 2, gt.data() + gt.size(), guid, 16);
    auto [pe, pec] = std::from_chars(p->second.data(),
                                     p->second.data() + p->second.size(), port);
    if (gec != std::errc() || ge != gt.data() + gt.size() ||
        pec != std::errc() || pe != p->second.data() + p->second.size()) {
      continue;
    }
    std::string name = query.name;
    if (name.empty()) {
      const auto e = s.labels.find("error");
      if (e == s.labels.end()) continue;
      name = e->second;
    }
    (*out)[{guid, port}][name] += s.value;
  }
}

}  // namespace fabric::locate
