#include "collectors/registry.h"

#include "collectors/bench_agent.h"
#include "collectors/congestion.h"
#include "collectors/fabric_class.h"
#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "collectors/jobs.h"
#include "collectors/nic_identity.h"
#include "collectors/opensm.h"
#include "collectors/probe.h"
#include "collectors/roce.h"
#include "collectors/series_names.h"
#include "collectors/transceiver.h"
#if FABRICMON_WITH_GNMI
#include "collectors/gnmi_switch.h"
#endif
#if FABRICMON_WITH_PODS
#include "collectors/pods.h"
#endif
#if FABRICMON_WITH_RDMA
#include "collectors/fabric.h"
#include "collectors/ib_link.h"
#include "collectors/sm.h"
#endif

namespace fabric {

const std::vector<CollectorSpec>& CollectorSpecs() {
  static const std::vector<CollectorSpec> table = [] {
    std::vector<CollectorSpec> specs = {
      IbPortCollectorSpec(),
      HwCountersCollectorSpec(),
      CongestionCollectorSpec(),
      RoceCollectorSpec(),
      TransceiverCollectorSpec(),
      NicIdentityCollectorSpec(),
      FabricClassCollectorSpec(),
      OpensmCollectorSpec(),
      ProbeCollectorSpec(),
      BenchAgentCollectorSpec(),
      JobsCollectorSpec(),
#if FABRICMON_WITH_PODS
      PodsCollectorSpec(),
#endif
#if FABRICMON_WITH_RDMA
      SmCollectorSpec(),
      FabricCollectorSpec(),
      IbLinkCollectorSpec(),
#endif
#if FABRICMON_WITH_GNMI
      GnmiSwitchCollectorSpec(),
#endif
    };
    // What their include/exclude can match (collectors/series_names.h).
    for (auto& spec : specs) spec.series = KnownSeries(spec.name);
    return specs;
  }();
  return table;
}

const std::vector<CollectorKeys>& AllCollectorKeys() {
  static const std::vector<CollectorKeys> table = [] {
    std::vector<CollectorKeys> out;
    for (const auto& spec : CollectorSpecs()) out.push_back(spec);
    return out;
  }();
  return table;
}

std::vector<std::string> CollectorNames() {
  std::vector<std::string> names;
  for (const auto& spec : CollectorSpecs()) names.push_back(spec.name);
  return names;
}

std::unique_ptr<Collector> MakeCollector(std::string_view name,
                                         const CollectorEnv& env,
                                         const CollectorConfig& config) {
  for (const auto& spec : CollectorSpecs()) {
    if (spec.name == name) return spec.make(env, config);
  }
  return nullptr;
}

}  // namespace fabric
