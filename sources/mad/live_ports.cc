#include "sources/mad/live_ports.h"

#include "sources/mad/codec.h"

namespace fabric::mad {
namespace {

constexpr int kActive = 4;
constexpr int kPhysLinkUp = 5;

std::string Name(const LocalPort& p) {
  return p.ca + " port " + std::to_string(p.port);
}

}  // namespace

bool LinkTrained(const LocalPort& p) {
  const bool ib = p.link_layer == "InfiniBand" || p.link_layer == "IB";
  return ib && (p.state == kActive || p.phys_state == kPhysLinkUp);
}

bool RefreshFromPortInfo(MadTransport& transport, const MadOptions& options,
                         LocalPort* p) {
  const MadResult r = transport.Send(
      {.mad = DrSmpGet(kAttrPortInfo, static_cast<std::uint32_t>(p->port), {})},
      options);
  if (!r.ok()) return false;
  std::string error;
  const auto info = DecodePortInfo(*r, &error);
  if (!info) return false;
  p->state = info->state;
  p->phys_state = info->phys_state;
  p->lid = info->lid;
  p->sm_lid = info->sm_lid;
  return true;
}

LivePorts FindLivePorts(const std::vector<LocalPort>& view,
                        const std::string& ca, int port, const PortOpener& open,
                        const MadOptions& options) {
  LivePorts out;
  for (const LocalPort& seen : view) {
    if (!ca.empty() && seen.ca != ca) continue;
    if (port != 0 && seen.port != port) continue;
    if (!LinkTrained(seen)) continue;
    LivePort live{seen, open ? open(seen.ca, seen.port) : nullptr};
    if (!live.transport) {
      out.unopenable.push_back(Name(seen));
      continue;
    }
    // No answer: libibumad's view is all there is (as before this check).
    RefreshFromPortInfo(*live.transport, options, &live.port);
    if (live.port.state != kActive) {
      out.waiting.push_back(Name(seen) + " (state " +
                            std::to_string(live.port.state) + ")");
      continue;
    }
    out.active.push_back(std::move(live));
  }
  return out;
}

}  // namespace fabric::mad
