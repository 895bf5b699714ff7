// Which local IB ports a MAD collector (sm, fabric) can use right now, with
// their LID and SM LID as the port has them now. Re-evaluated at every
// collection, so that a daemon started before the subnet manager starts
// reporting once its port goes ACTIVE, and follows a port that goes down or
// changes LID / SM LID (a failover).
//
// Two sources, because neither alone is current everywhere:
//  - libibumad's view (umad_get_ca/umad_get_port: sysfs on a real host, but
//    under ibsim's umad2sim a copy frozen at the process's first libibumad
//    call, so a port it saw INIT stays INIT there forever) says which ports
//    exist and which have a trained link (ACTIVE, or PhysLinkUp and waiting
//    for the SM);
//  - the port's own PortInfo, a zero-hop directed-route SMP answered by the
//    local SMA (no SM or LID needed), says its state, LID and SM LID now.
// Only ports with a trained link are opened: an uncabled port costs nothing
// and a node without IB stays a quiet success.
//
// Thread-safety: pure functions over their arguments; the transports they
// return are the caller's (one Run() at a time each).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sources/mad/mad_transport.h"
#include "sources/mad/umad_transport.h"

namespace fabric::mad {

// The local ports libibumad knows; injectable (real: LocalIbPorts).
using LocalPortLister =
    std::function<std::vector<LocalPort>(std::string* error)>;
// Opens a MAD transport on `ca` port `port` (CollectorEnv::mad); nullptr
// when it cannot (e.g. no permission on /dev/infiniband/umad*).
using PortOpener =
    std::function<std::unique_ptr<MadTransport>(const std::string&, int)>;

// An IB port whose link is trained per libibumad: ACTIVE already, or
// PhysLinkUp and waiting for the SM to make it ACTIVE.
bool LinkTrained(const LocalPort& p);

// Updates `p` (state, phys_state, lid, sm_lid) from the port's own PortInfo
// through `transport`; false, `p` unchanged, when it did not answer.
bool RefreshFromPortInfo(MadTransport& transport, const MadOptions& options,
                         LocalPort* p);

struct LivePort {
  LocalPort port;  // as its PortInfo has it now (libibumad's if no answer)
  std::unique_ptr<MadTransport> transport;
};

struct LivePorts {
  std::vector<LivePort> active;         // ACTIVE now, in the view's order
  std::vector<std::string> waiting;     // "ca port N (state S)": not yet
  std::vector<std::string> unopenable;  // "ca port N": exists, no transport
};

// The ports of `view` (only `ca` / `port` when not ""/0) that are ACTIVE now.
LivePorts FindLivePorts(const std::vector<LocalPort>& view,
                        const std::string& ca, int port, const PortOpener& open,
                        const MadOptions& options);

}  // namespace fabric::mad
