// The fabric-wide switch sweep: for every switch of this shard,
// PortCounters + PortCountersExtended of every port except 0 (PerfMgt at
// the switch's LID) and PortInfo (directed route), all in flight together
// through the MadTransport engine. Only Get MADs: counters are never
// cleared.
//
// PortInfo (state, physical state, width, speed) changes only when a link
// goes down, comes up or retrains, so with a PortInfoMemory (the caller's,
// kept across sweeps) a port's PortInfo is asked only when something says
// it may have changed, and its last answer is reported otherwise:
//  - never read (the first sweep without a discovery just before: discovery
//    reads every switch port's PortInfo, and Seed() takes those);
//  - its PortCounters LinkDownedCounter or LinkErrorRecoveryCounter moved
//    since the last sweep, sits saturated at 255, or PortCounters got no
//    answer (asked right after that answer, in the same sweep);
//  - in transition or gone down under watch: not ACTIVE while its physical
//    link is up (INIT/ARMED, waiting for the SM), or not ACTIVE after this
//    memory saw it ACTIVE (so its return shows at the next sweep);
//  - its turn: every `every` sweeps (staggered over the ports, so each
//    sweep asks about 1/every of them), for what the counters cannot show:
//    firmware whose LinkDownedCounter never counts (ibsim's), or an
//    uncabled port that gets a cable. There a link that goes down shows
//    within `every` sweeps instead of at the next one.
// Without a memory (`every` 1 does the same), every port every sweep.
//
// PortExtendedSpeedsCounters (PESC, PMA 0x1F: FEC and PHY error counters)
// ride along, decided once per switch and topology generation (PescCache,
// the caller's, cleared on rediscovery): the switch PMA's ClassPortInfo says
// whether RS-FEC counters exist; PortInfoExtended (only then) says per port
// whether RS-FEC is active, which picks the layout (the decision of
// sources/mad/pesc.h, shared with the ib_link collector; as `perfquery -T`
// does). One PESC of one linked port probes the PMA first:
// a PMA that drops or refuses 0x1F (ibsim does) is marked unsupported and
// never asked again until the next discovery, so it costs one probe per
// discovery, not one timeout per port per sweep. The probe's unanswered
// tries are not counted as timeouts (SweepResult::pesc_unanswered): they
// are the PMA's answer, not loss. Once supported, every linked port's PESC
// is sent with the sweep's other MADs (no extra round trip).
//
// PortXmitWait (issue 42): the 32-bit PortCounters field saturates at
// 2^32-1 ticks (under a second of waiting on a Quantum-2 NDR port, whose tick
// is 8 bytes). PortCountersExtended carries a 64-bit one when the switch
// PMA's ClassPortInfo:CapabilityMask2 has IsAddlPortCountersExtendedSupported
// (as perfquery -x decides). The ClassPortInfo is the one the PESC path
// already asks once per switch and topology generation (kept in PescCache),
// so the choice costs no MAD: a switch whose cached answer advertises the
// bit has its PortXmitWait from PortCountersExtended, any other (no cache,
// a ClassPortInfo lost or without the bit: ibsim echoes the request, so all
// zero) from PortCounters, as before. With PESC off (`pesc_mads` false)
// the cache still holds the ClassPortInfo, asked alone. An SM's switch (below)
// gets that ClassPortInfo too, alone and until it answers: its PMA answers it
// (ibsim its own, as it answers PortCounters; see docs/mad-broker.md), and
// managed switches often host the SM. SwitchPortSample::xmit_wait holds the
// chosen one.
//
// Never to a subnet manager: a switch whose LID is an SM's (port 0's
// PortInfo CapabilityMask has IsSM at discovery, or `sm_lids`, e.g. the
// master SM LID the local port names now) gets no PESC path at all (no
// PortInfoExtended or PESC), only PortInfo, PortCounters,
// PortCountersExtended and the PMA ClassPortInfo (for PortXmitWait, above;
// ibsim answers it itself). A real kernel never hands a PESC Get to OpenSM
// (the HCA/switch PMA answers it, and OpenSM registers PerfMgt with no request
// methods), but ibsim forwards every PMA attribute it does not implement to
// the SM attached at the destination port, and OpenSM 3.3.23's PerfMgr
// receive callback dereferences the missing request of an unsolicited MAD:
// a segfault (docs/mad-broker.md, "Never to a subnet manager").
//
// Shards: a switch belongs to shard i of n by a hash of its GUID, so
// shards 1/n..n/n together cover every switch exactly once.
//
// Thread-safety: pure functions of the transport's answers; one Sweep() at
// a time per transport.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad {

struct Shard {
  int index = 1;  // 1-based
  int count = 1;
  bool Contains(std::uint64_t switch_guid) const;
  bool operator==(const Shard&) const = default;
};

// "i/n" with 1 <= i <= n; nullopt otherwise.
std::optional<Shard> ParseShard(const std::string& text);

// A switch port's PortXmitWait as the sweep exports it.
struct PortXmitWait {
  std::uint64_t ticks = 0;
  bool wide = false;       // from PortCountersExtended (64-bit)
  bool saturated = false;  // the 32-bit one at 2^32-1: no longer counts
};

struct SwitchPortSample {
  int num = 0;
  std::optional<PortInfo> info;  // absent when PortInfo got no answer
  std::optional<PortCounters> counters;
  std::optional<PortCountersExtended> extended;
  std::optional<PortExtendedSpeedsCounters> pesc;
  // From `extended` when the PMA advertises the 64-bit one (then absent if
  // PortCountersExtended got no answer: never a 32-bit value in between),
  // else from `counters`.
  std::optional<PortXmitWait> xmit_wait;
};

// Fills p.xmit_wait as above; `wide`: the switch PMA advertises
// IsAddlPortCountersExtendedSupported. Without it p.extended->xmit_wait is
// dropped (reserved bytes); with it "port_xmit_wait" leaves
// p.counters->saturated (the exported one no longer saturates).
void ChooseXmitWait(SwitchPortSample& p, bool wide);

struct SwitchSample {
  std::uint64_t guid = 0;
  std::uint16_t lid = 0;
  std::string description;
  std::vector<SwitchPortSample> ports;  // 1..N
  bool reachable = false;               // at least one answer this sweep
  int failed_mads = 0;  // MADs of this sweep that got no answer (PESC probe
                        // aside)
  bool pesc_unsupported = false;  // the PMA has no PESC (see PescCache)
  bool hosts_sm = false;          // an SM's LID: no PESC asked (see above)
};

// What the sweep learnt about one switch PMA's PESC; kept by the caller for
// one topology generation.
struct PescSwitchState {
  enum class Support : std::uint8_t { kUnknown, kSupported, kUnsupported };
  Support support = Support::kUnknown;
  std::optional<PmaClassPortInfo> class_port_info;
  std::map<int, PescLayout> layouts;  // port -> layout, once decided
};
using PescCache = std::map<std::uint64_t, PescSwitchState>;  // switch GUID

// What the sweeps learnt of the switch ports' PortInfo (see above); kept by
// the caller across sweeps and topologies.
struct PortInfoMemory {
  // An ACTIVE, quiet port's PortInfo is asked every `every` sweeps (1: every
  // sweep).
  int every = 1;
  std::uint64_t sweeps = 0;  // sweeps done with this memory
  struct Port {
    std::optional<PortInfo> info;  // the last answer
    bool was_active = false;       // `info` said ACTIVE at some point
    bool seeded = false;  // `info` from discovery, since the last sweep
    // LinkDownedCounter + LinkErrorRecoveryCounter at the last sweep.
    std::optional<std::uint64_t> link_events;
  };
  std::map<std::uint64_t, std::vector<Port>> ports;  // switch GUID, by port

  // Takes discovery's PortInfo of every switch port of `topology` as read
  // now (the next sweep asks none of them again unless the rules above
  // say so) and forgets switches no longer in it.
  void Seed(const Topology& topology);
  // The switch's ports, sized for ports 0..num_ports.
  std::vector<Port>& Of(std::uint64_t guid, int num_ports);
};

struct SweepResult {
  std::vector<SwitchSample> switches;
  int unreachable = 0;       // switches that answered nothing
  int pesc_unsupported = 0;  // switches whose PMA has no PESC (this sweep)
  int hosts_sm = 0;          // switches not asked for PESC: an SM is there
  // PESC probe tries that got no answer (a PMA without 0x1F), taken out of
  // stats.timeouts / stats.retries.
  std::uint64_t pesc_unanswered = 0;
  std::vector<std::string> errors;  // malformed / non-zero status (first few)
  MadStats stats;
  // PortInfo Gets this sweep, and the ports reported from the memory.
  int port_info_asked = 0;
  int port_info_remembered = 0;
};

// The switches of `topology` in `shard`, swept once. With `pesc` (null:
// no PESC and no ClassPortInfo at all, so the 32-bit PortXmitWait),
// PortExtendedSpeedsCounters as above, never to a switch whose LID is in
// topology.SmLids() or `sm_lids`. `pesc_mads` false: the cache serves the
// PortXmitWait choice only (ClassPortInfo, no PESC path; pesc_unsupported
// not counted), as for an SM's switch. `port_info` null: PortInfo of every
// port (above).
SweepResult Sweep(MadTransport& transport, const Topology& topology,
                  const Shard& shard, const MadOptions& options,
                  PescCache* pesc = nullptr,
                  const std::vector<std::uint16_t>& sm_lids = {},
                  bool pesc_mads = true, PortInfoMemory* port_info = nullptr);

}  // namespace fabric::mad
