#include "benchtool/host_counters.h"

#include <map>
#include <set>

#include "sources/port_map.h"
#include "sources/sysfs_parse.h"

namespace fabric::bench {
namespace {

bool ReadU64(const Sysfs& sysfs, const std::string& path, std::uint64_t* v) {
  ReadResult r = sysfs.Read(path);
  if (!r.ok()) return false;
  const auto parsed = ParseU64(r.value());
  if (!parsed.ok()) return false;
  *v = parsed.value;
  return true;
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
    const auto reader = sysfs->NewReader();
    reader->Begin();
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
        // A RoCE port's netdevs by the port map's rule (sources/port_map.h),
        // a bond's slaves included: they carry the pause counters. An IB
        // port has no PFC.
        if (ethtool) {
          const ReadResult ll = sysfs->Read(dir + "/link_layer");
          const std::string link_layer(ll.ok() ? TrimValue(*ll) : "");
          if (link_layer == "InfiniBand") continue;
          for (std::string& n :
               ReadPortNetdevs(*reader, dev, port, link_layer).All()) {
            netdevs.insert(std::move(n));
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
