#include "sources/mad/broker_protocol.h"

#include <infiniband/mad.h>

#include <algorithm>

#include "core/bytes.h"
#include "sources/mad/codec.h"

namespace fabric::mad::broker {
namespace {

// The directed-route SMP's initial path (IBA 14.2.1.2; IB_DRSMP_PATH_F):
// byte 0 unused, then one exit port per hop.
constexpr std::size_t kInitialPath = 128;

constexpr AllowedAttribute kAllowed[] = {
    {false, kAttrNodeDescription, "NodeDescription", 0, false},
    {false, kAttrNodeInfo, "NodeInfo", 0, false},
    {false, 0x12, "SwitchInfo", 0, false},
    // Modifier: the port number.
    {false, kAttrPortInfo, "PortInfo", 255, false},
    // Modifier: the block of 64 LIDs (48K unicast LIDs / 64).
    {false, 0x19, "LinearForwardingTable", 767, false},
    {false, kAttrSmInfo, "SMInfo", 0, false},
    // Modifier: the port number (FEC mode, for the PESC layout).
    {false, kAttrPortInfoExtended, "PortInfoExtended", 255, false},
    {true, kAttrClassPortInfo, "ClassPortInfo", 0, false},
    {true, kAttrPortCounters, "PortCounters", 0, true},
    {true, kAttrPortCountersExtended, "PortCountersExtended", 0, true},
    {true, kAttrPortExtendedSpeedsCounters, "PortExtendedSpeedsCounters", 0,
     true},
};

// Little-endian, bounds-checked reads (core/bytes.h).
using Writer = ByteWriter<Endian::kLittle>;
using Reader = ByteReader<Endian::kLittle>;

const AllowedAttribute* Find(bool perf, std::uint16_t attribute) {
  for (const auto& a : kAllowed) {
    if (a.perf == perf && a.attribute == attribute) return &a;
  }
  return nullptr;
}

std::uint8_t* Raw(const Mad& mad) {
  return const_cast<std::uint8_t*>(mad.data());
}

}  // namespace

std::string_view RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNone:
      return "none";
    case Refusal::kMalformed:
      return "malformed";
    case Refusal::kMethod:
      return "method";
    case Refusal::kClass:
      return "class";
    case Refusal::kAttribute:
      return "attribute";
    case Refusal::kModifier:
      return "modifier";
    case Refusal::kDestination:
      return "destination";
    case Refusal::kTimeout:
      return "timeout";
    case Refusal::kState:
      return "state";
    case Refusal::kInFlight:
      return "in_flight";
    case Refusal::kCount:
      break;
  }
  return "unknown";
}

std::span<const AllowedAttribute> AllowedAttributes() { return kAllowed; }

namespace {

void WriteRequest(const Request& r, Writer& w) {
  w.U8(kVersion);
  w.U8(static_cast<std::uint8_t>(r.kind));
  w.U16(0);
  w.U32(r.tid);
  if (r.kind == Kind::kOpen) {
    w.U16(static_cast<std::uint16_t>(r.port));
    w.Str(r.ca);
  } else if (r.kind == Kind::kMad) {
    const MadCall& m = r.mad;
    w.U8(m.mgmt_class);
    w.U8(m.method);
    w.U16(m.attribute);
    w.U32(m.modifier);
    w.U16(m.dlid);
    w.U8(m.port_select);
    w.U8(static_cast<std::uint8_t>(m.path.size()));
    w.U32(m.timeout_ms);
    std::array<std::uint8_t, kMaxHops + 1> path{};
    std::copy_n(m.path.begin(), std::min(m.path.size(), path.size()),
                path.begin());
    w.Bytes(path);
  }
}

// The request at the reader's position; nullopt (with `d` saying why) when
// it cannot be read, which also ends the message: nothing after it can be
// delimited.
DecodedRequest ReadRequest(Reader& in) {
  DecodedRequest d;
  d.refusal = Refusal::kMalformed;
  const std::uint8_t version = in.U8();
  const std::uint8_t kind = in.U8();
  const std::uint16_t zero = in.U16();
  Request r;
  r.tid = in.U32();
  if (!in.ok()) return d;
  d.tid = r.tid;
  if (version != kVersion || zero != 0) return d;
  r.kind = static_cast<Kind>(kind);
  switch (r.kind) {
    case Kind::kPorts:
    case Kind::kStats:
      break;
    case Kind::kOpen:
      r.port = in.U16();
      r.ca = in.Str(kMaxCaName);
      break;
    case Kind::kMad: {
      MadCall& m = r.mad;
      m.tid = r.tid;
      m.mgmt_class = in.U8();
      m.method = in.U8();
      m.attribute = in.U16();
      m.modifier = in.U32();
      m.dlid = in.U16();
      m.port_select = in.U8();
      const std::size_t hops = in.U8();
      m.timeout_ms = in.U32();
      const auto path = in.Bytes(kMaxHops + 1);
      if (!in.ok()) return d;
      // The route is the first `hops` bytes; the padding must be zero, so
      // one request has exactly one encoding.
      if (hops > kMaxHops ||
          std::any_of(path.begin() + hops, path.end(),
                      [](std::uint8_t b) { return b != 0; })) {
        return d;
      }
      m.path.assign(path.begin(), path.begin() + hops);
      break;
    }
    default:
      return d;
  }
  if (!in.ok()) return d;
  d.refusal = Refusal::kNone;
  d.request = std::move(r);
  return d;
}

void WriteReply(const Reply& r, Writer& w) {
  w.U8(kVersion);
  w.U8(static_cast<std::uint8_t>(r.kind));
  w.U8(static_cast<std::uint8_t>(r.status));
  w.U8(static_cast<std::uint8_t>(r.refusal));
  w.U32(r.tid);
  switch (r.kind) {
    case Kind::kMad:
      if (r.status == Status::kOk) {
        w.Bytes(r.mad);
      } else {
        w.Str(r.error);
      }
      break;
    case Kind::kOpen:
      w.Str(r.error);
      break;
    case Kind::kPorts: {
      const std::size_t n = std::min(r.ports.size(), kMaxPorts);
      w.U16(static_cast<std::uint16_t>(n));
      for (std::size_t i = 0; i < n; ++i) {
        const LocalPort& p = r.ports[i];
        w.Str(p.ca.substr(0, kMaxCaName));
        w.U16(static_cast<std::uint16_t>(p.port));
        w.U8(static_cast<std::uint8_t>(p.node_type));
        w.U64(p.node_guid);
        w.U64(p.port_guid);
        w.U16(p.lid);
        w.U16(p.sm_lid);
        w.U8(static_cast<std::uint8_t>(p.state));
        w.U8(static_cast<std::uint8_t>(p.phys_state));
        w.Str(p.link_layer.substr(0, kMaxCaName));
      }
      break;
    }
    case Kind::kStats:
      w.U8(static_cast<std::uint8_t>(r.refused.size()));
      for (std::uint64_t v : r.refused) w.U64(v);
      break;
  }
}

// The reply at the reader's position, nullopt when it cannot be read.
std::optional<Reply> ReadReply(Reader& in) {
  Reply r;
  if (in.U8() != kVersion) return std::nullopt;
  r.kind = static_cast<Kind>(in.U8());
  r.status = static_cast<Status>(in.U8());
  const std::uint8_t refusal = in.U8();
  r.tid = in.U32();
  if (!in.ok() || r.status > Status::kFailed ||
      refusal >= static_cast<std::uint8_t>(Refusal::kCount)) {
    return std::nullopt;
  }
  r.refusal = static_cast<Refusal>(refusal);
  switch (r.kind) {
    case Kind::kMad:
      if (r.status == Status::kOk) {
        const auto mad = in.Bytes(kMadSize);
        if (in.ok()) std::copy(mad.begin(), mad.end(), r.mad.begin());
      } else {
        r.error = in.Str(1024);
      }
      break;
    case Kind::kOpen:
      r.error = in.Str(1024);
      break;
    case Kind::kPorts: {
      const std::size_t n = in.U16();
      for (std::size_t i = 0; in.ok() && i < n && i < kMaxPorts; ++i) {
        LocalPort p;
        p.ca = in.Str(kMaxCaName);
        p.port = in.U16();
        p.node_type = in.U8();
        p.node_guid = in.U64();
        p.port_guid = in.U64();
        p.lid = in.U16();
        p.sm_lid = in.U16();
        p.state = in.U8();
        p.phys_state = in.U8();
        p.link_layer = in.Str(kMaxCaName);
        r.ports.push_back(std::move(p));
      }
      break;
    }
    case Kind::kStats: {
      const std::size_t n = in.U8();
      for (std::size_t i = 0; in.ok() && i < n; ++i)
        r.refused.push_back(in.U64());
      break;
    }
    default:
      return std::nullopt;
  }
  if (!in.ok()) return std::nullopt;
  return r;
}

}  // namespace

std::vector<std::uint8_t> EncodeRequest(const Request& r) {
  std::vector<std::uint8_t> out;
  AppendRequest(r, &out);
  return out;
}

void AppendRequest(const Request& r, std::vector<std::uint8_t>* message) {
  Writer w(std::move(*message));
  WriteRequest(r, w);
  *message = w.Take();
}

std::optional<Request> DecodeRequest(std::span<const std::uint8_t> bytes,
                                     Refusal* refusal, std::uint32_t* tid) {
  Reader in(bytes);
  DecodedRequest d = ReadRequest(in);
  if (d.request && !in.done()) {
    d.request.reset();
    d.refusal = Refusal::kMalformed;
  }
  *refusal = d.refusal;
  *tid = d.tid;
  return std::move(d.request);
}

std::vector<DecodedRequest> DecodeRequests(
    std::span<const std::uint8_t> bytes) {
  std::vector<DecodedRequest> out;
  Reader in(bytes);
  do {
    out.push_back(ReadRequest(in));
  } while (out.back().request && !in.done() &&
           out.size() < kMaxRequestsPerMessage);
  if (!out.back().request || !in.done()) {
    // All or nothing: one malformed request, named by the first tid.
    DecodedRequest bad;
    bad.tid = out.front().tid;
    return {bad};
  }
  return out;
}

std::vector<std::uint8_t> EncodeReply(const Reply& r) {
  std::vector<std::uint8_t> out;
  AppendReply(r, &out);
  return out;
}

void AppendReply(const Reply& r, std::vector<std::uint8_t>* message) {
  Writer w(std::move(*message));
  WriteReply(r, w);
  *message = w.Take();
}

std::optional<Reply> DecodeReply(std::span<const std::uint8_t> bytes) {
  Reader in(bytes);
  auto r = ReadReply(in);
  if (!r || !in.done()) return std::nullopt;
  return r;
}

std::optional<std::vector<Reply>> DecodeReplies(
    std::span<const std::uint8_t> bytes) {
  std::vector<Reply> out;
  Reader in(bytes);
  do {
    auto r = ReadReply(in);
    if (!r) return std::nullopt;
    out.push_back(std::move(*r));
  } while (!in.done());
  return out;
}

Refusal Check(const MadCall& call) {
  if (call.method != kMadMethodGet) return Refusal::kMethod;
  const bool perf = call.mgmt_class == kMadClassPerf;
  const bool dr = call.mgmt_class == kMadClassSmiDirected;
  if (!perf && !dr && call.mgmt_class != kMadClassSmiLid) {
    return Refusal::kClass;
  }
  const AllowedAttribute* a = Find(perf, call.attribute);
  if (!a) return Refusal::kAttribute;
  if (call.modifier > a->max_modifier) return Refusal::kModifier;
  if (call.port_select != 0 && !a->port_select) return Refusal::kModifier;
  if (dr) {
    // A hop's exit port is 1..254 (255 is no port); the destination LID is
    // the permissive one, whatever the client said.
    if (call.path.size() > kMaxHops ||
        std::any_of(call.path.begin(), call.path.end(),
                    [](std::uint8_t p) { return p == 0 || p == 255; })) {
      return Refusal::kDestination;
    }
  } else if (call.dlid == 0 || call.dlid >= 0xc000 || !call.path.empty()) {
    return Refusal::kDestination;  // LID-routed: a unicast LID only
  }
  if (call.timeout_ms == 0 || call.timeout_ms > kMaxTimeoutMs) {
    return Refusal::kTimeout;
  }
  return Refusal::kNone;
}

Mad BuildMad(const MadCall& call) {
  Mad mad;
  if (call.mgmt_class == kMadClassPerf) {
    mad = PerfGet(call.attribute, call.port_select);
  } else if (call.mgmt_class == kMadClassSmiDirected) {
    mad = DrSmpGet(call.attribute, call.modifier, call.path);
  } else {
    mad = SmpGet(call.attribute, call.modifier);
  }
  mad_set_field64(mad.data(), 0, IB_MAD_TRID_F, call.tid);
  return mad;
}

MadCall CallFromMad(std::uint16_t dlid, const Mad& mad,
                    std::chrono::milliseconds timeout) {
  std::uint8_t* b = Raw(mad);
  MadCall c;
  c.tid = static_cast<std::uint32_t>(mad_get_field64(b, 0, IB_MAD_TRID_F));
  c.mgmt_class =
      static_cast<std::uint8_t>(mad_get_field(b, 0, IB_MAD_MGMTCLASS_F));
  c.method = mad[3];  // the whole byte: a response bit set is not a Get
  c.attribute =
      static_cast<std::uint16_t>(mad_get_field(b, 0, IB_MAD_ATTRID_F));
  c.modifier = mad_get_field(b, 0, IB_MAD_ATTRMOD_F);
  c.timeout_ms = static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(timeout.count(), 0, 0xffffffff));
  if (c.mgmt_class == kMadClassSmiDirected) {
    const unsigned hops = mad_get_field(b, 0, IB_DRSMP_HOPCNT_F);
    for (unsigned i = 1; i <= hops && i <= kMaxHops; ++i) {
      c.path.push_back(b[kInitialPath + i]);
    }
  } else {
    c.dlid = dlid;
  }
  if (c.mgmt_class == kMadClassPerf) {
    c.port_select = static_cast<std::uint8_t>(
        mad_get_field(b + IB_PC_DATA_OFFS, 0, IB_PC_PORT_SELECT_F));
  }
  return c;
}

}  // namespace fabric::mad::broker
