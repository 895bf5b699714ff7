#include "benchtool/host_counters.h"

#include <charconv>
#include <map>
#include <set>

namespace fabric::bench {
namespace {

// The collectors' parse layer (sources/sysfs_parse.h) is out of reach:
// the collectors library links this one.
std::string_view Trimmed(std::string_view t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) {
    t.remove_suffix(1);
  }
  return t;
}

bool ReadU64(const Sysfs& sysfs, const std::string& path, std::uint64_t* v) {
  ReadResult r = sysfs.Read(path);
  if (!r.ok()) return false;
  const std::string_view t = Trimmed(r.value());
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  return ec == std::errc() && p == t.data() + t.size();
}

// "rx_prio3_pause" -> "pfc_pause_rx"; not a per-priority pause count -> "".
std::string PauseName(std::string_view stat) {
  for (std::string_view dir : {"rx", "tx"}) {
    const std::string prefix = std::string(dir) + "_prio";
    if (stat.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = stat.substr(prefix.size());
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
      ++digits;
    }
    if (digits > 0 && rest.substr(digits) == "_pause") {
      return "pfc_pause_" + std::string(dir);
    }
  }
  return "";
}

}  // namespace

CounterSource HostCounterSource(std::shared_ptr<const Sysfs> sysfs,
                                std::shared_ptr<EthtoolSource> ethtool) {
  return [sysfs, ethtool]() {
    static const std::pair<const char*, const char*> kFiles[] = {
        {"counters/port_xmit_wait", "xmit_wait"},
        {"hw_counters/np_cnp_sent", "cnp_sent"},
        {"hw_counters/rp_cnp_handled", "cnp_handled"},
    };
    std::map<std::string, std::uint64_t> sums;
    std::set<std::string> netdevs;
    auto devices = sysfs->List("class/infiniband");
    for (const auto& dev : devices ? *devices : std::vector<std::string>{}) {
      std::string ports_dir = "class/infiniband/" + dev + "/ports";
      auto ports = sysfs->List(ports_dir);
      for (const auto& port : ports ? *ports : std::vector<std::string>{}) {
        const std::string dir = ports_dir + "/" + port;
        for (const auto& [file, name] : kFiles) {
          std::uint64_t v;
          if (ReadU64(*sysfs, dir + "/" + file, &v)) sums[name] += v;
        }
        // A RoCE port's netdev (an IB port has none: the read fails).
        if (ethtool) {
          ReadResult ndev = sysfs->Read(dir + "/gid_attrs/ndevs/0");
          if (ndev.ok() && !Trimmed(ndev.value()).empty()) {
            netdevs.insert(std::string(Trimmed(ndev.value())));
          }
        }
      }
    }
    for (const auto& netdev : netdevs) {
      EthtoolResult stats = ethtool->Stats(netdev);
      if (!stats.ok()) continue;
      for (std::size_t i = 0; i < stats->names.size(); ++i) {
        const std::string name = PauseName(stats->names[i]);
        if (!name.empty()) sums[name] += stats->values[i];
      }
    }
    return CounterReading(sums.begin(), sums.end());
  };
}

}  // namespace fabric::bench
