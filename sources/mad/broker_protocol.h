// The MAD broker's protocol and allow-list: what the daemon may ask the
// broker (the one process that holds a umad descriptor) to send, and how
// requests and replies travel over the Unix SOCK_SEQPACKET socket between
// them (one message per datagram).
//
// A request is typed, never raw MAD bytes: destination (LID or directed
// route), class, method, attribute, modifier and, for PerfMgt, the port
// select. The broker checks it against the one allow-list below
// (AllowedAttributes), then builds the MAD itself with sources/mad/codec.h,
// so a request cannot carry a payload: nothing but a Get of a listed
// attribute can reach the fabric, whatever bytes a compromised daemon
// writes. Replies carry the whole response MAD (the daemon decodes it) or
// the reason a request was refused.
//
// Layout: fixed little-endian fields, checked for exact size; see
// broker_protocol.cc. Version 2: a message (one datagram) carries one or
// more requests, or one or more replies, back to back (each delimits
// itself), so a sweep's MADs cross the socket in a few datagrams rather
// than two per MAD. Each request in a message is checked on its own.
//
// Thread-safety: pure functions and constant tables.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sources/mad/codec.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/umad_transport.h"

namespace fabric::mad::broker {

inline constexpr std::uint8_t kVersion = 2;
// Larger than any valid message, so an oversized one is seen as such
// (recv reports MSG_TRUNC) rather than cut to fit.
inline constexpr std::size_t kMaxMessage = 16384;
inline constexpr std::size_t kMaxCaName = 64;
inline constexpr std::size_t kMaxHops = 63;
inline constexpr std::uint32_t kMaxTimeoutMs = 10000;
inline constexpr std::size_t kMaxPorts = 128;
// Requests one message may hold; a longer one is refused as malformed.
inline constexpr std::size_t kMaxRequestsPerMessage = 256;

enum class Kind : std::uint8_t {
  kOpen = 1,   // bind this connection to one local port
  kPorts = 2,  // list the local IB ports (libibumad's view)
  kMad = 3,    // send one Get
  kStats = 4,  // the broker's refusal counts
};

// Why a request was refused; each is a `reason` label value of
// fabric_mad_broker_refused_total.
enum class Refusal : std::uint8_t {
  kNone = 0,
  kMalformed,    // wrong size, version or kind; an oversized message
  kMethod,       // not Get (a Set, a Trap, anything else)
  kClass,        // not SMI LID-routed, SMI directed-route or PerfMgt
  kAttribute,    // not on the allow-list for its class
  kModifier,     // attribute modifier or port select out of range
  kDestination,  // LID not unicast; directed route too long or malformed
  kTimeout,      // per-try timeout outside 1..kMaxTimeoutMs
  kState,        // MAD before OPEN, a second OPEN
  kInFlight,     // over the broker's in-flight limits, or a tid in flight
  kCount,
};
std::string_view RefusalName(Refusal r);

// One row per attribute the broker will send a Get for: the single table
// (docs/mad-broker.md lists it too; a test keeps them in step).
struct AllowedAttribute {
  bool perf;  // PerfMgt (0x04); false: SMP (LID-routed or directed)
  std::uint16_t attribute;
  std::string_view name;
  std::uint32_t max_modifier;  // SMP attribute modifier (PerfMgt: 0)
  bool port_select;            // PerfMgt: takes a port select (0..255)
};
std::span<const AllowedAttribute> AllowedAttributes();

struct MadCall {
  std::uint32_t tid = 0;  // the client's transaction id (low 32 bits)
  std::uint8_t mgmt_class = 0;
  std::uint8_t method = 0;
  std::uint16_t attribute = 0;
  std::uint32_t modifier = 0;
  std::uint16_t dlid = 0;  // LID-routed SMP and PerfMgt
  std::uint8_t port_select = 0;
  std::uint32_t timeout_ms = 0;
  DrPath path;  // directed route: exit port per hop
};

struct Request {
  Kind kind = Kind::kPorts;
  std::uint32_t tid = 0;  // echoed in the reply
  // kOpen
  std::string ca;
  int port = 0;
  // kMad
  MadCall mad;
};

enum class Status : std::uint8_t {
  kOk = 0,
  kTimedOut = 1,  // no answer within the try's timeout
  kRefused = 2,   // see `refusal`; never sent
  kFailed = 3,    // could not be sent, or OPEN failed: see `error`
};

struct Reply {
  Kind kind = Kind::kMad;
  Status status = Status::kOk;
  Refusal refusal = Refusal::kNone;
  std::uint32_t tid = 0;
  Mad mad{};                           // kMad, kOk
  std::string error;                   // kOpen / kMad, kFailed
  std::vector<LocalPort> ports;        // kPorts
  std::vector<std::uint64_t> refused;  // kStats: by Refusal, kCount of them
};

inline Request MakeRequest(Kind kind, std::uint32_t tid) {
  Request r;
  r.kind = kind;
  r.tid = tid;
  return r;
}
inline Reply MakeReply(Kind kind, std::uint32_t tid,
                       Status status = Status::kOk, std::string error = "") {
  Reply r;
  r.kind = kind;
  r.tid = tid;
  r.status = status;
  r.error = std::move(error);
  return r;
}

std::vector<std::uint8_t> EncodeRequest(const Request& r);
// Appends `r` to a message (a batch of requests in one datagram).
void AppendRequest(const Request& r, std::vector<std::uint8_t>* message);
// A message of exactly one request, or the refusal that makes it unusable
// (then *tid holds the tid when the header was readable, else 0).
std::optional<Request> DecodeRequest(std::span<const std::uint8_t> bytes,
                                     Refusal* refusal, std::uint32_t* tid);

struct DecodedRequest {
  std::optional<Request> request;
  Refusal refusal = Refusal::kMalformed;  // kNone when `request` is set
  std::uint32_t tid = 0;                  // when the header was readable
};
// Every request of a message, in order; or, when any part of the message
// cannot be read as requests (or it holds more than
// kMaxRequestsPerMessage), one malformed request carrying the first
// header's tid: nothing from such a message is sent. Never empty.
std::vector<DecodedRequest> DecodeRequests(std::span<const std::uint8_t> bytes);

std::vector<std::uint8_t> EncodeReply(const Reply& r);
// Appends `r` to a message (a batch of replies in one datagram).
void AppendReply(const Reply& r, std::vector<std::uint8_t>* message);
// A message of exactly one reply.
std::optional<Reply> DecodeReply(std::span<const std::uint8_t> bytes);
// Every reply of a message; nullopt when any of it cannot be read.
std::optional<std::vector<Reply>> DecodeReplies(
    std::span<const std::uint8_t> bytes);

// Checks `call` against the allow-list and the wire limits (not the
// in-flight ones: those are the broker's state). kNone when it may go.
Refusal Check(const MadCall& call);

// The MAD for an allowed `call` (codec.h builders), transaction id set.
Mad BuildMad(const MadCall& call);

// The typed call a MAD built with codec.h asks for (the daemon's side:
// its collectors build MADs, the broker rebuilds them from this). `dlid`
// is the engine's destination. Fields it cannot express (a payload) are
// not carried: BuildMad(CallFromMad(m)) == m for every codec-built Get.
MadCall CallFromMad(std::uint16_t dlid, const Mad& mad,
                    std::chrono::milliseconds timeout);

}  // namespace fabric::mad::broker
