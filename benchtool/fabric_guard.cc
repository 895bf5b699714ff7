#include "benchtool/fabric_guard.h"

#include <map>
#include <set>

namespace fabric::bench {

std::string HostClasses(const std::vector<RailSummary>& rails) {
  std::set<std::string> kinds;
  for (const auto& r : rails) kinds.insert(r.fabric_class + "@" + r.fabric);
  std::string out;
  for (const auto& k : kinds) out += (out.empty() ? "" : ", ") + k;
  return out;
}

HostSetCheck CheckHostSet(const std::vector<std::string>& hosts,
                          const std::vector<std::vector<RailSummary>>& rails) {
  HostSetCheck out;
  std::map<std::string, int> count;  // kinds -> hosts
  std::set<std::string> classes;
  for (const auto& host_rails : rails) {
    const std::string kinds = HostClasses(host_rails);
    if (kinds.empty()) continue;
    ++count[kinds];
    for (const auto& r : host_rails) classes.insert(r.fabric_class);
  }
  if (count.empty()) return out;
  if (count.size() == 1) {
    for (const auto& c : classes) {
      out.fabric_class += (out.fabric_class.empty() ? "" : "+") + c;
    }
    return out;
  }
  out.mixed = true;
  out.fabric_class = "mixed";
  // The kinds most hosts have (the first in name order on a tie).
  auto most = count.begin();
  for (auto it = count.begin(); it != count.end(); ++it) {
    if (it->second > most->second) most = it;
  }
  std::string odd;
  for (std::size_t r = 0; r < rails.size() && r < hosts.size(); ++r) {
    const std::string kinds = HostClasses(rails[r]);
    if (kinds.empty() || kinds == most->first) continue;
    odd += (odd.empty() ? "" : "; ") + hosts[r] + " (rank " +
           std::to_string(r) + ": " + kinds + ")";
  }
  out.message = "the host set spans fabric classes or fabrics: " +
                std::to_string(most->second) + " host(s) have rails " +
                most->first + "; different: " + odd;
  return out;
}

}  // namespace fabric::bench
