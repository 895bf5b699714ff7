#include "simulator/dcb.h"

namespace fabric::sim {
namespace {

// "<key> 0:<v0> 1:<v1> ... 7:<v7>\n"
template <typename F>
std::string PerPriority(const char* key, F value) {
  std::string line = key;
  for (int p = 0; p < 8; ++p) {
    line += " " + std::to_string(p) + ":" + value(p);
  }
  return line + "\n";
}

}  // namespace

std::optional<std::string> SimDcbText(const Cluster& c, int host,
                                      const std::string& netdev) {
  const Port* port = c.FindNetdevPort(host, netdev);
  if (!port) return std::nullopt;
  auto stat = [&](const std::string& name) {
    auto it = port->ethtool.find(name);
    return std::to_string(it == port->ethtool.end() ? 0 : it->second);
  };
  std::string text =
      "# fabricmon-sim: dcb -s pfc show; dcb ets show; dcb -N app show (dev " +
      netdev + ")\n";
  text += "pfc-cap 8 macsec-bypass off delay 0\n";
  text += PerPriority("prio-pfc", [](int p) -> std::string {
    return p == kRocePriority ? "on" : "off";
  });
  text += PerPriority("requests", [&](int p) {
    return stat("tx_prio" + std::to_string(p) + "_pause");
  });
  text += PerPriority("indications", [&](int p) {
    return stat("rx_prio" + std::to_string(p) + "_pause");
  });
  text += "willing off ets-cap 8 cbs off\n";
  text += PerPriority("prio-tc", [](int p) {
    return std::to_string(p == kRocePriority ? kRocePriority : 0);
  });
  text += "dscp-prio 26:" + std::to_string(kRocePriority) + " 48:6\n";
  return text;
}

}  // namespace fabric::sim
