#include "collectors/registry.h"

#include <functional>

#include "collectors/congestion.h"
#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "collectors/nic_identity.h"
#include "collectors/roce.h"

namespace fabric {
namespace {

using Factory = std::function<std::unique_ptr<Collector>(const CollectorEnv&)>;

struct Entry {
  std::string_view name;
  Factory make;
};

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = {
      {"ib_port", MakeIbPortCollector},
      {"hw_counters", MakeHwCountersCollector},
      {"congestion", MakeCongestionCollector},
      {"roce", [](const CollectorEnv& env) { return MakeRoceCollector(env); }},
      {"nic_identity", MakeNicIdentityCollector},
  };
  return table;
}

}  // namespace

std::vector<std::string> CollectorNames() {
  std::vector<std::string> names;
  for (const auto& e : Table()) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Collector> MakeCollector(std::string_view name,
                                         const CollectorEnv& env) {
  for (const auto& e : Table()) {
    if (e.name == name) return e.make(env);
  }
  return nullptr;
}

}  // namespace fabric
