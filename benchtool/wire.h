// The fabricmon-bench control protocol between the coordinator
// (`fabricmon-bench run`) and an agent (a daemon's bench_agent collector or
// `fabricmon-bench agent`): a small versioned, length-prefixed frame, each
// authenticated with HMAC-SHA256 under the shared probe key (auth/hmac.h).
// Bulk data does not travel here (transport.h).
//
// Frame (big-endian):
//   magic "FMBN" | version u8 (=1) | type u8 | reserved u16 (=0)
//   | seq u64 | payload_len u32 (<= kMaxPayloadBytes) | payload | mac[32]
// mac = HMAC(key, "fabricmon-bench/1" | receiver_nonce | sender_nonce
//            | header | payload).
// Both sides open with a Hello carrying a fresh 16-byte nonce (its MAC uses
// empty nonces, so a peer without the key is refused at once). Every later
// frame binds both nonces, so a frame recorded on another connection does not
// verify, and its seq must be larger than the last accepted one, so a frame
// replayed on the same connection is refused ("replay").
//
// Thread-safety: pure functions on bytes; FrameAuth is immutable after
// construction except ReplayGuard, which belongs to one connection.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auth/hmac.h"
#include "benchtool/transport.h"
#include "sources/rail_class.h"

namespace fabric::bench {

constexpr std::uint8_t kWireVersion = 1;
constexpr std::size_t kHeaderBytes = 20;
constexpr std::size_t kNonceBytes = 16;
constexpr std::size_t kMaxPayloadBytes = 1 << 20;
using Bytes = std::vector<std::uint8_t>;

enum class MsgType : std::uint8_t {
  kHello = 1,
  kPrepare = 2,    // coordinator -> agent
  kPrepared = 3,   // agent -> coordinator: the rank's endpoint
  kConnect = 4,    // coordinator -> agent: every rank's endpoint
  kRun = 5,        // coordinator -> agent: one size, all iterations
  kRunResult = 6,  // agent -> coordinator
  kStop = 7,       // coordinator -> agent: abort the session
  kOk = 8,
  kError = 9,
};
std::string_view MsgTypeName(MsgType type);

// Why a frame was refused; also the `reason` label of
// fabric_bench_agent_refused_total.
enum class Refusal { kNone, kMalformed, kVersion, kBadMac, kReplay };
std::string_view RefusalName(Refusal r);

struct FrameHeader {
  std::uint8_t version = kWireVersion;
  MsgType type = MsgType::kHello;
  std::uint64_t seq = 0;
  std::uint32_t payload_len = 0;
};

// Parses the fixed header. kMalformed for a wrong magic, a reserved field
// that is not zero, an unknown type or a payload over the limit; kVersion
// for another version. The caller then reads payload_len + kMacBytes more.
Refusal DecodeHeader(std::span<const std::uint8_t> bytes, FrameHeader* out);

// The nonces of one connection as seen from one side.
struct Nonces {
  Bytes mine;    // sent in my Hello
  Bytes theirs;  // received in theirs (empty before)
};

// Builds a whole frame. Hello frames use empty nonces.
Bytes SealFrame(const Hmac& hmac, const Nonces& nonces, MsgType type,
                std::uint64_t seq, std::span<const std::uint8_t> payload);

// Checks a whole frame (header + payload + mac) received on a connection with
// `nonces`: framing, version, MAC, and seq > *last_seq (then updates it).
// On success `payload` holds the payload.
Refusal OpenFrame(const Hmac& hmac, const Nonces& nonces,
                  std::span<const std::uint8_t> frame, std::uint64_t* last_seq,
                  FrameHeader* header, Bytes* payload);

// ---- messages -------------------------------------------------------------

struct HelloMsg {
  Bytes nonce;  // kNonceBytes
};
struct PrepareMsg {
  std::uint64_t session_id = 0;
  Bytes token;  // 16 bytes
  std::uint32_t rank = 0;
  std::vector<std::string> peers;  // rank -> host:port
  std::string transport;           // "tcp" | "rdma"
  std::string pattern;
  std::uint32_t tp = 1;
  std::uint64_t max_size_bytes = 0;
  std::uint32_t io_timeout_ms = 10000;
};
struct PreparedMsg {
  Bytes endpoint;
  // The agent's host's rails (benchtool/fabric_guard.h), after the endpoint;
  // absent in an older agent's reply (decoded as none).
  std::vector<RailSummary> rails;
};
struct ConnectMsg {
  std::vector<Bytes> endpoints;  // by rank
};
struct RunMsg {
  std::uint64_t size_bytes = 0;
  std::uint32_t warmup = 0;
  std::uint32_t iterations = 0;
};
// One iteration as one rank saw it.
struct IterationSample {
  std::uint64_t nanoseconds = 0;
  // Fabric counters that moved on this agent's host during the iteration,
  // by name (xmit_wait, cnp_sent, cnp_handled, pfc_pause_frames). A counter
  // the host does not have is absent, not zero.
  std::vector<std::pair<std::string, std::uint64_t>> counters;
};
struct RunResultMsg {
  std::vector<IterationSample> iterations;
};
struct ErrorMsg {
  // The peer at fault as the agent knows it (rank, host:port), or -1.
  std::int32_t peer_rank = -1;
  std::string text;
};

Bytes EncodeHello(const HelloMsg& m);
Bytes EncodePrepare(const PrepareMsg& m);
Bytes EncodePrepared(const PreparedMsg& m);
Bytes EncodeConnect(const ConnectMsg& m);
Bytes EncodeRun(const RunMsg& m);
Bytes EncodeRunResult(const RunResultMsg& m);
Bytes EncodeError(const ErrorMsg& m);

// Each decoder fails (nullopt) on short input, trailing bytes, a count or
// length over its bound, or a field out of range; it never reads past
// `bytes`.
std::optional<HelloMsg> DecodeHello(std::span<const std::uint8_t> bytes);
std::optional<PrepareMsg> DecodePrepare(std::span<const std::uint8_t> bytes);
std::optional<PreparedMsg> DecodePrepared(std::span<const std::uint8_t> bytes);
std::optional<ConnectMsg> DecodeConnect(std::span<const std::uint8_t> bytes);
std::optional<RunMsg> DecodeRun(std::span<const std::uint8_t> bytes);
std::optional<RunResultMsg> DecodeRunResult(
    std::span<const std::uint8_t> bytes);
std::optional<ErrorMsg> DecodeError(std::span<const std::uint8_t> bytes);

// Bounds the decoders enforce.
constexpr std::size_t kMaxRanks = 4096;
constexpr std::size_t kMaxStringBytes = 1024;
constexpr std::size_t kMaxIterations = 10000;
constexpr std::size_t kMaxCountersPerIteration = 16;
constexpr std::size_t kMaxRails = 256;

}  // namespace fabric::bench
