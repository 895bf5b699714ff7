#include "benchtool/wire.h"

#include <cstring>

#include "core/bytes.h"

namespace fabric::bench {
namespace {

constexpr std::uint8_t kMagic[4] = {'F', 'M', 'B', 'N'};
constexpr std::string_view kMacContext = "fabricmon-bench/1";

// Big-endian (core/bytes.h), with this format's U32-length blobs.
class Writer : public ByteWriter<Endian::kBig> {
 public:
  void Blob(std::span<const std::uint8_t> b) {
    U32(static_cast<std::uint32_t>(b.size()));
    Bytes(b);
  }
};

// Bounds-checked reads (core/bytes.h); after the first failure every read
// fails and returns zero/empty, so decoders check ok() once at the end.
class Reader : public ByteReader<Endian::kBig> {
 public:
  using ByteReader::ByteReader;
  std::vector<std::uint8_t> Blob(std::size_t max) {
    const std::size_t n = U32();
    if (n > max) return Fail(), std::vector<std::uint8_t>();
    const auto b = Bytes(n);
    return {b.begin(), b.end()};
  }
  std::string Str() { return ByteReader::Str(kMaxStringBytes); }
  // A count of items each at least `min_item` bytes long: bounded by `max`
  // and by what is left, so a huge count cannot make the caller reserve.
  std::size_t Count(std::size_t max, std::size_t min_item) {
    const std::size_t n = U32();
    if (n > max || n * min_item > remaining()) return Fail(), 0;
    return n;
  }
  bool Done() const { return done(); }
  void Invalidate() { Fail(); }
};

Bytes MacInput(const Nonces& nonces, bool hello, bool sending,
               std::span<const std::uint8_t> frame_without_mac) {
  Bytes in(kMacContext.begin(), kMacContext.end());
  if (!hello) {
    // The sender's view is (theirs = receiver, mine = sender); the
    // receiver's the reverse: both compute receiver_nonce | sender_nonce.
    const Bytes& receiver = sending ? nonces.theirs : nonces.mine;
    const Bytes& sender = sending ? nonces.mine : nonces.theirs;
    in.insert(in.end(), receiver.begin(), receiver.end());
    in.insert(in.end(), sender.begin(), sender.end());
  }
  in.insert(in.end(), frame_without_mac.begin(), frame_without_mac.end());
  return in;
}

bool KnownType(std::uint8_t t) {
  return t >= static_cast<std::uint8_t>(MsgType::kHello) &&
         t <= static_cast<std::uint8_t>(MsgType::kError);
}

}  // namespace

std::string_view MsgTypeName(MsgType type) {
  switch (type) {
    case MsgType::kHello:
      return "hello";
    case MsgType::kPrepare:
      return "prepare";
    case MsgType::kPrepared:
      return "prepared";
    case MsgType::kConnect:
      return "connect";
    case MsgType::kRun:
      return "run";
    case MsgType::kRunResult:
      return "run_result";
    case MsgType::kStop:
      return "stop";
    case MsgType::kOk:
      return "ok";
    case MsgType::kError:
      return "error";
  }
  return "unknown";
}

std::string_view RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNone:
      return "none";
    case Refusal::kMalformed:
      return "malformed";
    case Refusal::kVersion:
      return "version";
    case Refusal::kBadMac:
      return "bad_mac";
    case Refusal::kReplay:
      return "replay";
  }
  return "unknown";
}

Refusal DecodeHeader(std::span<const std::uint8_t> bytes, FrameHeader* out) {
  if (bytes.size() < kHeaderBytes) return Refusal::kMalformed;
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return Refusal::kMalformed;
  Reader r(bytes.subspan(4, kHeaderBytes - 4));
  std::uint8_t version = r.U8();
  std::uint8_t type = r.U8();
  std::uint16_t reserved = r.U16();
  std::uint64_t seq = r.U64();
  std::uint32_t len = r.U32();
  if (version != kWireVersion) return Refusal::kVersion;
  if (reserved != 0 || !KnownType(type) || len > kMaxPayloadBytes) {
    return Refusal::kMalformed;
  }
  out->version = version;
  out->type = static_cast<MsgType>(type);
  out->seq = seq;
  out->payload_len = len;
  return Refusal::kNone;
}

Bytes SealFrame(const Hmac& hmac, const Nonces& nonces, MsgType type,
                std::uint64_t seq, std::span<const std::uint8_t> payload) {
  Writer w;
  for (auto c : kMagic) w.U8(c);
  w.U8(kWireVersion);
  w.U8(static_cast<std::uint8_t>(type));
  w.U16(0);
  w.U64(seq);
  w.U32(static_cast<std::uint32_t>(payload.size()));
  Bytes frame = w.Take();
  frame.insert(frame.end(), payload.begin(), payload.end());
  Mac mac = hmac.Sign(MacInput(nonces, type == MsgType::kHello, true, frame));
  frame.insert(frame.end(), mac.begin(), mac.end());
  return frame;
}

Refusal OpenFrame(const Hmac& hmac, const Nonces& nonces,
                  std::span<const std::uint8_t> frame, std::uint64_t* last_seq,
                  FrameHeader* header, Bytes* payload) {
  FrameHeader h;
  if (Refusal r = DecodeHeader(frame, &h); r != Refusal::kNone) return r;
  if (frame.size() != kHeaderBytes + h.payload_len + kMacBytes) {
    return Refusal::kMalformed;
  }
  auto body = frame.first(kHeaderBytes + h.payload_len);
  bool hello = h.type == MsgType::kHello;
  if (!hello && (nonces.mine.empty() || nonces.theirs.empty())) {
    return Refusal::kMalformed;  // only a Hello may come first
  }
  if (!hmac.Verify(MacInput(nonces, hello, false, body),
                   frame.subspan(body.size()))) {
    return Refusal::kBadMac;
  }
  if (!hello) {
    if (h.seq <= *last_seq) return Refusal::kReplay;
    *last_seq = h.seq;
  }
  *header = h;
  payload->assign(body.begin() + kHeaderBytes, body.end());
  return Refusal::kNone;
}

Bytes EncodeHello(const HelloMsg& m) {
  Writer w;
  w.Blob(m.nonce);
  return w.Take();
}

std::optional<HelloMsg> DecodeHello(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  HelloMsg m;
  m.nonce = r.Blob(kNonceBytes);
  if (!r.Done() || m.nonce.size() != kNonceBytes) return std::nullopt;
  return m;
}

Bytes EncodePrepare(const PrepareMsg& m) {
  Writer w;
  w.U64(m.session_id);
  w.Blob(m.token);
  w.U32(m.rank);
  w.U32(static_cast<std::uint32_t>(m.peers.size()));
  for (const auto& p : m.peers) w.Str(p);
  w.Str(m.transport);
  w.Str(m.pattern);
  w.U32(m.tp);
  w.U64(m.max_size_bytes);
  w.U32(m.io_timeout_ms);
  return w.Take();
}

std::optional<PrepareMsg> DecodePrepare(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  PrepareMsg m;
  m.session_id = r.U64();
  m.token = r.Blob(64);
  m.rank = r.U32();
  std::size_t n = r.Count(kMaxRanks, 2);
  for (std::size_t i = 0; i < n && r.ok(); ++i) m.peers.push_back(r.Str());
  m.transport = r.Str();
  m.pattern = r.Str();
  m.tp = r.U32();
  m.max_size_bytes = r.U64();
  m.io_timeout_ms = r.U32();
  if (!r.Done() || m.peers.size() < 2 || m.rank >= m.peers.size() ||
      m.tp == 0 || m.token.empty()) {
    return std::nullopt;
  }
  return m;
}

Bytes EncodePrepared(const PreparedMsg& m) {
  Writer w;
  w.Blob(m.endpoint);
  w.U32(static_cast<std::uint32_t>(m.rails.size()));
  for (const auto& r : m.rails) {
    for (const std::string* s :
         {&r.device, &r.port, &r.fabric_class, &r.fabric}) {
      w.Str(*s);
    }
  }
  return w.Take();
}

std::optional<PreparedMsg> DecodePrepared(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  PreparedMsg m;
  m.endpoint = r.Blob(kMaxEndpointBytes);
  if (r.Done()) return m;  // an agent that does not report rails
  const std::size_t n = r.Count(kMaxRails, 8);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    RailSummary rail;
    for (std::string* s :
         {&rail.device, &rail.port, &rail.fabric_class, &rail.fabric}) {
      *s = r.Str();
    }
    m.rails.push_back(std::move(rail));
  }
  if (!r.Done()) return std::nullopt;
  return m;
}

Bytes EncodeConnect(const ConnectMsg& m) {
  Writer w;
  w.U32(static_cast<std::uint32_t>(m.endpoints.size()));
  for (const auto& e : m.endpoints) w.Blob(e);
  return w.Take();
}

std::optional<ConnectMsg> DecodeConnect(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  ConnectMsg m;
  std::size_t n = r.Count(kMaxRanks, 4);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    m.endpoints.push_back(r.Blob(kMaxEndpointBytes));
  }
  if (!r.Done() || m.endpoints.size() < 2) return std::nullopt;
  return m;
}

Bytes EncodeRun(const RunMsg& m) {
  Writer w;
  w.U64(m.size_bytes);
  w.U32(m.warmup);
  w.U32(m.iterations);
  return w.Take();
}

std::optional<RunMsg> DecodeRun(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  RunMsg m;
  m.size_bytes = r.U64();
  m.warmup = r.U32();
  m.iterations = r.U32();
  if (!r.Done() || m.iterations == 0 || m.iterations > kMaxIterations ||
      m.warmup > kMaxIterations) {
    return std::nullopt;
  }
  return m;
}

Bytes EncodeRunResult(const RunResultMsg& m) {
  Writer w;
  w.U32(static_cast<std::uint32_t>(m.iterations.size()));
  for (const auto& it : m.iterations) {
    w.U64(it.nanoseconds);
    w.U32(static_cast<std::uint32_t>(it.counters.size()));
    for (const auto& [name, value] : it.counters) {
      w.Str(name);
      w.U64(value);
    }
  }
  return w.Take();
}

std::optional<RunResultMsg> DecodeRunResult(
    std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  RunResultMsg m;
  std::size_t n = r.Count(kMaxIterations, 12);
  m.iterations.reserve(n);
  for (std::size_t i = 0; i < n && r.ok(); ++i) {
    IterationSample s;
    s.nanoseconds = r.U64();
    std::size_t c = r.Count(kMaxCountersPerIteration, 10);
    for (std::size_t j = 0; j < c && r.ok(); ++j) {
      std::string name = r.Str();
      std::uint64_t value = r.U64();
      s.counters.emplace_back(std::move(name), value);
    }
    m.iterations.push_back(std::move(s));
  }
  if (!r.Done() || m.iterations.empty()) return std::nullopt;
  return m;
}

Bytes EncodeError(const ErrorMsg& m) {
  Writer w;
  w.U32(static_cast<std::uint32_t>(m.peer_rank));
  w.Str(m.text.size() > kMaxStringBytes ? m.text.substr(0, kMaxStringBytes)
                                        : m.text);
  return w.Take();
}

std::optional<ErrorMsg> DecodeError(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  ErrorMsg m;
  m.peer_rank = static_cast<std::int32_t>(r.U32());
  m.text = r.Str();
  if (!r.Done() || m.peer_rank < -1 ||
      m.peer_rank >= static_cast<std::int32_t>(kMaxRanks)) {
    return std::nullopt;
  }
  return m;
}

}  // namespace fabric::bench
