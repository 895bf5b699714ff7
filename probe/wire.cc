#include "probe/wire.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"

namespace fabric::probe {
namespace {

constexpr std::size_t kBody = 24;

// Big-endian at fixed offsets (core/bytes.h).
void Put(std::uint8_t* at, std::uint64_t v, int bytes) {
  StoreUint<Endian::kBig>(at, v, bytes);
}

std::uint64_t Get(const std::uint8_t* at, int bytes) {
  return LoadUint<Endian::kBig>(at, bytes);
}

bool IsAddress(MessageType t) {
  return t == MessageType::kAddressRequest || t == MessageType::kAddressAnswer;
}

bool IsPort(MessageType t) {
  return t == MessageType::kPortRequest || t == MessageType::kPortAnswer;
}

bool AllZero(const std::uint8_t* at, std::size_t n) {
  return std::all_of(at, at + n, [](std::uint8_t b) { return b == 0; });
}

}  // namespace

const char* ReasonLabel(DecodeError e) {
  return e == DecodeError::kBadMac ? "bad_mac" : "malformed";
}

Bytes Encode(const Packet& p, const Hmac& hmac) {
  Bytes b{};
  std::copy(kMagic.begin(), kMagic.end(), b.begin());
  b[4] = kWireVersion;
  b[5] = static_cast<std::uint8_t>(p.type);
  b[6] = p.flags;
  Put(&b[8], p.session, 8);
  Put(&b[16], p.seq, 8);
  std::uint8_t* body = &b[kBody];
  if (IsPort(p.type)) {
    Put(body, p.port_id.node_guid, 8);
    Put(body + 8, p.port_id.port_guid, 8);
    std::copy(p.port_id.gid.begin(), p.port_id.gid.end(), body + 16);
    Put(body + 32, p.port_id.lid, 2);
    body[34] = p.port_id.port;
  } else if (IsAddress(p.type)) {
    std::copy(p.address.gid.begin(), p.address.gid.end(), body);
    Put(body + 16, p.address.qpn, 4);
    Put(body + 20, p.address.qkey, 4);
    Put(body + 24, p.address.lid, 2);
    body[26] = p.address.port;
  } else {
    Put(body, static_cast<std::uint64_t>(p.t1_ns), 8);
    Put(body + 8, static_cast<std::uint64_t>(p.t2_ns), 8);
    Put(body + 16, static_cast<std::uint64_t>(p.t3_ns), 8);
  }
  Mac mac = hmac.Sign(std::span(b.data(), kSignedBytes));
  std::copy(mac.begin(), mac.end(), b.begin() + kSignedBytes);
  return b;
}

std::optional<Packet> Decode(std::span<const std::uint8_t> b, const Hmac& hmac,
                             DecodeError* error) {
  auto fail = [&](DecodeError e) -> std::optional<Packet> {
    if (error) *error = e;
    return std::nullopt;
  };
  if (b.size() != kPacketBytes ||
      !std::equal(kMagic.begin(), kMagic.end(), b.begin()) ||
      b[4] != kWireVersion) {
    return fail(DecodeError::kMalformed);
  }
  // Authenticate before trusting any other field: a peer with the wrong key
  // is told apart from a garbled packet.
  if (!hmac.Verify(b.first(kSignedBytes), b.subspan(kSignedBytes))) {
    return fail(DecodeError::kBadMac);
  }
  Packet p;
  std::uint8_t type = b[5];
  if (type < 1 || type > 6 || (b[6] & ~kKnownFlags) != 0 || b[7] != 0) {
    return fail(DecodeError::kMalformed);
  }
  p.type = static_cast<MessageType>(type);
  p.flags = b[6];
  p.session = Get(&b[8], 8);
  p.seq = Get(&b[16], 8);
  const std::uint8_t* body = &b[kBody];
  if (IsPort(p.type)) {
    if (!AllZero(body + 35, 5)) return fail(DecodeError::kMalformed);
    p.port_id.node_guid = Get(body, 8);
    p.port_id.port_guid = Get(body + 8, 8);
    std::copy(body + 16, body + 32, p.port_id.gid.begin());
    p.port_id.lid = static_cast<std::uint16_t>(Get(body + 32, 2));
    p.port_id.port = body[34];
  } else if (IsAddress(p.type)) {
    if (!AllZero(body + 27, 13)) return fail(DecodeError::kMalformed);
    std::copy(body, body + 16, p.address.gid.begin());
    p.address.qpn = static_cast<std::uint32_t>(Get(body + 16, 4));
    p.address.qkey = static_cast<std::uint32_t>(Get(body + 20, 4));
    p.address.lid = static_cast<std::uint16_t>(Get(body + 24, 2));
    p.address.port = body[26];
  } else {
    if (!AllZero(body + 24, 16)) return fail(DecodeError::kMalformed);
    p.t1_ns = static_cast<std::int64_t>(Get(body, 8));
    p.t2_ns = static_cast<std::int64_t>(Get(body + 8, 8));
    p.t3_ns = static_cast<std::int64_t>(Get(body + 16, 8));
  }
  return p;
}

}  // namespace fabric::probe
