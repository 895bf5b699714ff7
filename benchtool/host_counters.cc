#include "benchtool/host_counters.h"

#include <charconv>
#include <map>

namespace fabric::bench {
namespace {

bool ReadU64(const Sysfs& sysfs, const std::string& path, std::uint64_t* v) {
  ReadResult r = sysfs.Read(path);
  if (!r.ok()) return false;
  std::string_view t = r.value();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
    t.remove_suffix(1);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  return ec == std::errc() && p == t.data() + t.size();
}

}  // namespace

CounterSource SysfsCounterSource(std::shared_ptr<const Sysfs> sysfs) {
  return [sysfs]() {
    static const std::pair<const char*, const char*> kFiles[] = {
        {"counters/port_xmit_wait", "xmit_wait"},
        {"hw_counters/np_cnp_sent", "cnp_sent"},
        {"hw_counters/rp_cnp_handled", "cnp_handled"},
    };
    std::map<std::string, std::uint64_t> sums;
    auto devices = sysfs->List("class/infiniband");
    for (const auto& dev : devices ? *devices : std::vector<std::string>{}) {
      std::string ports_dir = "class/infiniband/" + dev + "/ports";
      auto ports = sysfs->List(ports_dir);
      for (const auto& port : ports ? *ports : std::vector<std::string>{}) {
        for (const auto& [file, name] : kFiles) {
          std::uint64_t v;
          if (ReadU64(*sysfs, ports_dir + "/" + port + "/" + file, &v)) {
            sums[name] += v;
          }
        }
      }
    }
    return CounterReading(sums.begin(), sums.end());
  };
}

}  // namespace fabric::bench
