#include "sources/pod_resources.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace fabric {
namespace {

bool HexDigits(std::string_view s, std::size_t min, std::size_t max) {
  return s.size() >= min && s.size() <= max &&
         std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isxdigit(c); });
}

}  // namespace

bool IsPciAddress(std::string_view id) {
  // domain:bus:device.function, as the kernel names bus/pci/devices/.
  const auto colon = id.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view rest = id.substr(colon + 1);
  return HexDigits(id.substr(0, colon), 4, 8) && rest.size() == 7 &&
         HexDigits(rest.substr(0, 2), 2, 2) && rest[2] == ':' &&
         HexDigits(rest.substr(3, 2), 2, 2) && rest[5] == '.' &&
         rest[6] >= '0' && rest[6] <= '7';
}

std::vector<std::string> PciRdmaDevices(const Sysfs& fs, std::string_view pci) {
  if (!IsPciAddress(pci)) return {};
  const std::string function = "bus/pci/devices/" + std::string(pci);
  // A VF's physfn link leads to its PF; a PF has none.
  const std::string pf =
      fs.IsDirectory(function + "/physfn") ? function + "/physfn" : function;
  return fs.List(pf + "/infiniband").value_or(std::vector<std::string>{});
}

std::vector<PodDevice> MapPodDevices(
    const Sysfs& fs, const std::vector<PodContainerDevices>& containers,
    const SharedResources& shared) {
  std::set<PodDevice> out;
  auto add = [&](const PodContainerDevices& c,
                 const std::vector<std::string>& devices) {
    for (const auto& device : devices) {
      out.insert({c.ns, c.pod, c.container, device});
    }
  };
  for (const auto& c : containers) {
    if (c.ids.empty()) continue;
    if (auto it = shared.find(c.resource); it != shared.end()) {
      add(c, it->second);
      continue;
    }
    for (const auto& id : c.ids) add(c, PciRdmaDevices(fs, id));
  }
  return {out.begin(), out.end()};
}

}  // namespace fabric
