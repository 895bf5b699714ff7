// The one PortInfo / PortExtendedSpeedsCounters (PESC) reader: how a port's
// PESC layout is decided (as `perfquery -T` does, codec.h) and the Get MADs
// of one port. The switch sweep (sweep.h, every MAD of a sweep in flight
// together) takes the decision in steps (StartPesc, then LayoutAfter-
// PortInfoExtended when it said so); the ib_link collector reads local ports
// one MAD at a time through PortReader, which takes the same steps.
//
// The decision, for a port whose PortInfo:CapabilityMask says
// IsExtendedSpeedsSupported (else it has no PESC):
//   1. the PMA's ClassPortInfo (no answer or garbage: no PESC);
//   2. when the PMA has RS-FEC counters and the port may have
//      PortInfoExtended (PortInfo:CapabilityMask2, when read), its
//      PortInfoExtended: RS-FEC active picks the RS-FEC layout; no answer
//      the original one;
//   3. the PESC, decoded in that layout.
//
// Thread-safety: the functions are pure; a PortReader is used by one
// thread, for one collection, like the transport it sends through.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sources/mad/codec.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad {

// What to do for a port once its PMA's ClassPortInfo is known.
struct PescStart {
  enum class Next { kNone, kPortInfoExtended, kPesc };
  Next next = Next::kNone;
  // kPesc: the layout to decode with. kNone: PescLayout::kNone.
  PescLayout layout = PescLayout::kNone;
};

// Step 2. `capability_mask2` is the port's PortInfo:CapabilityMask2 when
// it was read; without it (a switch port seen by discovery) PortInfoExtended
// is asked whenever the PMA has RS-FEC counters.
PescStart StartPesc(std::uint32_t capability_mask,
                    std::optional<std::uint16_t> capability_mask2,
                    const PmaClassPortInfo& pma);

// The layout once PortInfoExtended answered (`answer`; nullopt: no answer).
// An answer that does not decode counts as none: the original layout.
PescLayout LayoutAfterPortInfoExtended(std::uint32_t capability_mask,
                                       const PmaClassPortInfo& pma,
                                       std::optional<Bytes> answer);

// A port's PortInfo and its CapabilityMask2.
struct PortInfoReading {
  PortInfo info;
  std::uint16_t capability_mask2 = 0;
};

// The Get MADs of one port (PortInfo by directed route, PMA at its LID),
// each sent and waited for. `skip` hears of what could not be read
// (`what`, `why`), except where a missing answer is itself the answer
// (quiet reads: a far end without a cable, a PMA without PESC).
class PortReader {
 public:
  using SkipFn = std::function<void(const char* what, const std::string& why)>;
  PortReader(MadTransport& transport, const MadOptions& options,
             std::uint8_t port, std::uint16_t lid, SkipFn skip)
      : transport_(transport),
        options_(options),
        port_(port),
        lid_(lid),
        skip_(std::move(skip)) {}

  // The port's own PortInfo.
  std::optional<PortInfoReading> OwnPortInfo();
  // The far end's PortInfo: NodeInfo one hop out names the port the SMP
  // came in by. Quiet when nothing answers (no cable: not bad input).
  std::optional<PortInfo> RemotePortInfo();
  // Steps 1 and 2 for this port: the layout, or nullopt when the port or
  // its PMA has no PESC (or the port has no LID yet). Quiet.
  std::optional<PescLayout> ChooseLayout(const PortInfoReading& own);
  // Step 3; nullopt on no answer or a status, quietly (the caller knows
  // whether PESC was expected).
  std::optional<PortExtendedSpeedsCounters> Pesc(PescLayout layout);

 private:
  std::optional<Mad> Get(std::uint16_t dlid, const Mad& mad, const char* what,
                         bool quiet);

  MadTransport& transport_;
  const MadOptions& options_;
  std::uint8_t port_;
  std::uint16_t lid_;
  SkipFn skip_;
};

}  // namespace fabric::mad
