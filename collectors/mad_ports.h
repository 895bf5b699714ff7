// The local IB ports a MAD collector (fabric, ib_link, sm) sends from, found
// and opened the same way by each: the lister says which ports exist (injected
// in tests; else CollectorEnv::local_ports, else libibumad's
// mad::LocalIbPorts), and those ACTIVE now are opened through the daemon's
// MAD transport (CollectorEnv::mad) with the collector's mad_timeout /
// mad_retries (collectors/mad_settings.h). Which ports are ACTIVE is asked
// again at every Find() (sources/mad/live_ports.h says why).
// Not a collector: a member of the MAD collectors.
//
// Thread-safety: one Find() at a time (the owning collector's Collect());
// the transports it returns are the caller's.
#pragma once

#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/mad_settings.h"
#include "sources/mad/live_ports.h"

namespace fabric {

class MadPorts {
 public:
  // `collector` names the Skips; `ports` null: the env's lister.
  MadPorts(std::string collector, const CollectorEnv& env,
           const MadSettings& settings, mad::LocalPortLister ports);

  // False without a MAD service (a build without rdma-core, or a recorded
  // or simulated tree instead of the live system): nothing to ask.
  bool available() const { return static_cast<bool>(open_); }
  // Per-MAD options with the collector's timeout and retry count.
  MadOptions options() const { return settings_.Apply({}); }

  struct Found {
    std::vector<mad::LocalPort> view;  // the ports libibumad lists
    std::string error;                 // why the listing failed; "" = fine
    mad::LivePorts live;               // those of them ACTIVE now, opened
  };
  // Lists the local ports (a listing error is also a Skip) and opens those
  // ACTIVE now; only `ca` / `port` where not ""/0.
  Found Find(MetricSink& sink, const std::string& ca = "", int port = 0) const;

 private:
  std::string collector_;
  mad::PortOpener open_;
  MadSettings settings_;
  mad::LocalPortLister ports_;
};

}  // namespace fabric
