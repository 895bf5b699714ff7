// The probe wire format: one fixed-size, versioned, HMAC-SHA256-authenticated
// packet for every message two fabricmon daemons exchange on the probe port
// (probes, their answers, and the RDMA address exchange). Pure functions on
// bytes; decoding is fuzzed (fuzz/probe_wire_fuzz.cc).
//
// Layout (kPacketBytes = 96, integers big-endian):
//   off len
//    0   4  magic "FMPB"
//    4   1  version (kWireVersion)
//    5   1  type (MessageType)
//    6   1  flags (kFlag*)
//    7   1  reserved, 0
//    8   8  session: random per initiator run; with the source address it
//           keys the responder's replay window
//   16   8  sequence number (per session, from 1)
//   24  40  body:
//           probe/answer: t1 initiator send, t2 responder receive,
//             t3 responder send (ns; t2/t3 on the responder's clock,
//             kFlagHardwareClock says which), then 16 zero bytes
//           address request/answer: GID (16), QPN (4), Q_Key (4), LID (2),
//             port (1), then 13 zero bytes (RdmaAddress)
//           port request/answer: node GUID (8), port GUID (8), GID (16),
//             LID (2), port number (1), then 5 zero bytes (PortIdentity)
//   64  32  HMAC-SHA256 over bytes 0..63 with the shared key
// An answer is the request with type, flags and t2/t3 (or the address)
// replaced and the MAC recomputed: never larger than what was received.
//
// Thread-safety: pure functions; Hmac is const.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "auth/hmac.h"

namespace fabric::probe {

inline constexpr std::size_t kPacketBytes = 96;
inline constexpr std::size_t kSignedBytes = kPacketBytes - kMacBytes;
inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::array<std::uint8_t, 4> kMagic = {'F', 'M', 'P', 'B'};

enum class MessageType : std::uint8_t {
  kProbe = 1,           // initiator -> responder
  kAnswer = 2,          // responder -> initiator
  kAddressRequest = 3,  // "tell me your RDMA address" (carries the asker's)
  kAddressAnswer = 4,   // the responder's RDMA address
  // Added in version 1 without a version change (issue 29): a daemon that
  // predates them refuses them as `malformed` and never answers, and every
  // other message is unchanged, so old and new daemons still probe each
  // other; the asker then asks rarely (engine.h).
  kPortRequest = 5,  // "which fabric port did this reach you on"
  kPortAnswer = 6,   // the responder's fabric port, as the request reached it
};

// t2/t3 were taken from a hardware (NIC) clock.
inline constexpr std::uint8_t kFlagHardwareClock = 0x01;
// Address answer: the responder has no RDMA transport (use UDP).
inline constexpr std::uint8_t kFlagNoRdma = 0x02;
inline constexpr std::uint8_t kKnownFlags = kFlagHardwareClock | kFlagNoRdma;

// What an RDMA (verbs UD) transport needs to reach a peer's QP.
struct RdmaAddress {
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t qpn = 0;
  std::uint32_t qkey = 0;
  std::uint16_t lid = 0;
  std::uint8_t port = 0;
  bool operator==(const RdmaAddress&) const = default;
};

// A fabric port as the probes name it: node GUID, port GUID and LID (IB),
// GID (IB and RoCE), the port number on its node. All zero: not a fabric
// port (loopback, a plain NIC).
struct PortIdentity {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::array<std::uint8_t, 16> gid{};
  std::uint16_t lid = 0;
  std::uint8_t port = 0;
  bool known() const { return *this != PortIdentity{}; }
  bool operator==(const PortIdentity&) const = default;
};

struct Packet {
  MessageType type = MessageType::kProbe;
  std::uint8_t flags = 0;
  std::uint64_t session = 0;
  std::uint64_t seq = 0;
  // Probe/answer body.
  std::int64_t t1_ns = 0, t2_ns = 0, t3_ns = 0;
  // Address request/answer body.
  RdmaAddress address;
  // Port answer body (a request carries zeros).
  PortIdentity port_id;
  bool operator==(const Packet&) const = default;
};

using Bytes = std::array<std::uint8_t, kPacketBytes>;

enum class DecodeError {
  kMalformed,  // wrong size, magic, version, type, flags or padding
  kBadMac,     // well formed but not signed with our key
};

// The rejected_total{reason} label value of `e`.
const char* ReasonLabel(DecodeError e);

Bytes Encode(const Packet& packet, const Hmac& hmac);

// Checks size, magic and version first (kMalformed), then the MAC
// (kBadMac), then the rest of the fields (kMalformed). A packet that
// fails returns the error in `error` and nullopt.
std::optional<Packet> Decode(std::span<const std::uint8_t> bytes,
                             const Hmac& hmac, DecodeError* error);

}  // namespace fabric::probe
