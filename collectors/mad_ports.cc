#include "collectors/mad_ports.h"

#include <utility>

namespace fabric {

MadPorts::MadPorts(std::string collector, const CollectorEnv& env,
                   const MadSettings& settings, mad::LocalPortLister ports)
    : collector_(std::move(collector)),
      open_(env.mad),
      settings_(settings),
      ports_(ports             ? std::move(ports)
             : env.local_ports ? env.local_ports
                               : mad::LocalIbPorts) {}

MadPorts::Found MadPorts::Find(MetricSink& sink, const std::string& ca,
                               int port) const {
  Found found;
  found.view = ports_(&found.error);
  if (!found.error.empty()) sink.Skip(collector_ + ": " + found.error);
  found.live = mad::FindLivePorts(found.view, ca, port, open_, options());
  return found;
}

}  // namespace fabric
