// The simulator's MAD view: a MadTransport (core/mad_transport.h) that
// answers Get requests from the model, built and decoded with opensm's
// IBA wire structs (<iba/ib_types.h>):
//   SMInfo (SubnLid 0x20)        at an SM's LID: GUID, ActCount, priority,
//                                state; a dead SM times out.
//   NodeInfo (0x11), PortInfo (0x15) at any HCA or switch LID.
//   PortCounters (Perf 0x12)     the 16/8/4-bit fields (saturated) and the
//                                32-bit data/packet/xmit_wait fields
//                                (saturating at 2^32-1, as the PMA does).
//   PortCountersExtended (0x1D)  64-bit data/packet counters.
// Unknown LID: host_unreachable. Set or unknown attribute: answered with a
// MAD status (unsupported method / method-attribute combination).
//
// Thread-safety: one Send() at a time per instance; it reads the model under
// the LiveRunner's lock (or, for a bare Cluster, the caller must not step it
// concurrently).
#pragma once

#include <functional>
#include <memory>

#include "core/mad_transport.h"
#include "simulator/model.h"

namespace fabric::sim {

class LiveRunner;

// Answers from a Cluster the caller keeps alive and does not step during
// Send() (tests, single-threaded tools).
std::unique_ptr<MadTransport> MakeSimMadTransport(const Cluster& cluster);
// Answers from a running LiveRunner (locks it per request).
std::unique_ptr<MadTransport> MakeSimMadTransport(const LiveRunner& runner);

// The response to `request` at `dlid` computed from `cluster` (exposed for
// tests). Returns an error code as MadTransport::Send would.
MadResult AnswerMad(const Cluster& cluster, std::uint16_t dlid,
                    const Mad& request);

}  // namespace fabric::sim
