#include "osm/event_wire.h"

#include "core/bytes.h"

namespace fabric::osm {
namespace {

constexpr std::size_t kPortErrorsSize = kPortIdSize + 13 * 8;
constexpr std::size_t kPortDataSize = kPortIdSize + 8 * 8;
constexpr std::size_t kPortSelectSize = kPortIdSize + 8;
constexpr std::size_t kTrapSize = 12;
constexpr std::size_t kRoutingSize = 4;
constexpr std::size_t kLftSize = 24;

// Little-endian (core/bytes.h). EncodeEvent sizes the buffer and
// DecodeEvent checks the length before the fields are read; the writer and
// reader check their bounds again.
using Writer = SpanWriter<Endian::kLittle>;
using Reader = ByteReader<Endian::kLittle>;

void PutPortId(Writer& w, const PortId& id) {
  w.U64(id.node_guid);
  w.U8(id.port);
  w.U8(static_cast<uint8_t>(id.node_type));
  w.U16(0);
  w.U32(id.time_diff_s);
  w.Bytes({reinterpret_cast<const uint8_t*>(id.name.data()), kNodeNameSize});
}

NodeType ToNodeType(uint8_t v) {
  switch (v) {
    case 1:
      return NodeType::kChannelAdapter;
    case 2:
      return NodeType::kSwitch;
    case 3:
      return NodeType::kRouter;
    default:
      return NodeType::kUnknown;
  }
}

PortId GetPortId(Reader& r) {
  PortId id;
  id.node_guid = r.U64();
  id.port = r.U8();
  id.node_type = ToNodeType(r.U8());
  r.Skip(2);
  id.time_diff_s = r.U32();
  const std::span<const uint8_t> name = r.Bytes(kNodeNameSize);
  std::size_t n = 0;
  while (n < name.size() && name[n] != 0) {
    const uint8_t c = name[n];
    id.name[n] = (c >= 0x20 && c <= 0x7e) ? static_cast<char>(c) : '?';
    ++n;
  }
  return id;
}

// True when `body` holds the alternative `event` needs.
bool BodyMatches(Event event, const Body& body) {
  switch (event) {
    case Event::kPortErrors:
      return std::holds_alternative<PortErrors>(body);
    case Event::kPortDataCounters:
      return std::holds_alternative<PortData>(body);
    case Event::kPortSelect:
      return std::holds_alternative<PortSelect>(body);
    case Event::kTrap:
      return std::holds_alternative<Trap>(body);
    case Event::kUcastRoutingDone:
      return std::holds_alternative<UcastRoutingDone>(body);
    case Event::kLftChange:
      return std::holds_alternative<LftChange>(body);
    case Event::kSubnetUp:
    case Event::kHeavySweepStart:
    case Event::kHeavySweepDone:
    case Event::kStateChange:
    case Event::kSaDbDumped:
      return std::holds_alternative<std::monostate>(body);
  }
  return false;
}

}  // namespace

std::string_view EventName(Event event) {
  switch (event) {
    case Event::kPortErrors:
      return "port_errors";
    case Event::kPortDataCounters:
      return "port_data_counters";
    case Event::kPortSelect:
      return "port_select";
    case Event::kTrap:
      return "trap";
    case Event::kSubnetUp:
      return "subnet_up";
    case Event::kHeavySweepStart:
      return "heavy_sweep_start";
    case Event::kHeavySweepDone:
      return "heavy_sweep_done";
    case Event::kUcastRoutingDone:
      return "ucast_routing_done";
    case Event::kStateChange:
      return "state_change";
    case Event::kSaDbDumped:
      return "sa_db_dumped";
    case Event::kLftChange:
      return "lft_change";
  }
  return "unknown";
}

std::size_t BodySize(Event event) {
  switch (event) {
    case Event::kPortErrors:
      return kPortErrorsSize;
    case Event::kPortDataCounters:
      return kPortDataSize;
    case Event::kPortSelect:
      return kPortSelectSize;
    case Event::kTrap:
      return kTrapSize;
    case Event::kUcastRoutingDone:
      return kRoutingSize;
    case Event::kLftChange:
      return kLftSize;
    case Event::kSubnetUp:
    case Event::kHeavySweepStart:
    case Event::kHeavySweepDone:
    case Event::kStateChange:
    case Event::kSaDbDumped:
      return 0;
  }
  return 0;
}

std::string_view PortId::NameView() const {
  std::size_t n = 0;
  while (n < name.size() && name[n] != '\0') ++n;
  return std::string_view(name.data(), n);
}

void PortId::SetName(const char* text, std::size_t max_len) {
  name.fill('\0');
  if (text == nullptr) return;
  const std::size_t limit = max_len < kNodeNameSize ? max_len : kNodeNameSize;
  for (std::size_t i = 0; i < limit && text[i] != '\0'; ++i) name[i] = text[i];
}

std::size_t EncodeEvent(const Message& message, std::span<uint8_t> out) {
  if (static_cast<int>(message.event) >= kEventCount) return 0;
  if (!BodyMatches(message.event, message.body)) return 0;
  const std::size_t body = BodySize(message.event);
  if (out.size() < kHeaderSize + body) return 0;
  Writer w(out);
  w.U32(kWireMagic);
  w.U8(kWireVersion);
  w.U8(static_cast<uint8_t>(message.event));
  w.U16(static_cast<uint16_t>(body));
  w.U64(message.dropped);
  w.U64(message.monotonic_ns);
  if (const auto* pe = std::get_if<PortErrors>(&message.body)) {
    PutPortId(w, pe->id);
    for (uint64_t v :
         {pe->symbol_error, pe->link_error_recovery, pe->link_downed,
          pe->port_rcv_errors, pe->port_rcv_remote_physical_errors,
          pe->port_rcv_switch_relay_errors, pe->port_xmit_discards,
          pe->port_xmit_constraint_errors, pe->port_rcv_constraint_errors,
          pe->local_link_integrity_errors, pe->excessive_buffer_overrun_errors,
          pe->vl15_dropped, pe->port_xmit_wait}) {
      w.U64(v);
    }
  } else if (const auto* dc = std::get_if<PortData>(&message.body)) {
    PutPortId(w, dc->id);
    for (uint64_t v : {dc->xmit_data, dc->rcv_data, dc->xmit_pkts, dc->rcv_pkts,
                       dc->unicast_xmit_pkts, dc->unicast_rcv_pkts,
                       dc->multicast_xmit_pkts, dc->multicast_rcv_pkts}) {
      w.U64(v);
    }
  } else if (const auto* ps = std::get_if<PortSelect>(&message.body)) {
    PutPortId(w, ps->id);
    w.U64(ps->xmit_wait);
  } else if (const auto* trap = std::get_if<Trap>(&message.body)) {
    w.U8(trap->generic ? 1 : 0);
    w.U8(trap->type);
    w.U16(trap->generic ? trap->trap_number : 0);
    w.U32(trap->producer_or_vendor & 0xffffff);
    w.U16(trap->issuer_lid);
    w.U16(0);
  } else if (const auto* rd = std::get_if<UcastRoutingDone>(&message.body)) {
    w.U32(rd->flags);
  } else if (const auto* lft = std::get_if<LftChange>(&message.body)) {
    w.U64(lft->switch_guid);
    w.U32(lft->flags);
    w.U32(lft->block_num);
    w.U16(lft->lft_top);
    w.Zeros(6);
  }
  return kHeaderSize + body;
}

std::string_view DecodeStatusName(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::kOk:
      return "ok";
    case DecodeStatus::kTruncated:
      return "truncated";
    case DecodeStatus::kOversized:
      return "oversized";
    case DecodeStatus::kBadMagic:
      return "bad_magic";
    case DecodeStatus::kWrongVersion:
      return "wrong_version";
    case DecodeStatus::kUnknownEvent:
      return "unknown_event";
    case DecodeStatus::kBadBodyLength:
      return "bad_body_length";
  }
  return "unknown";
}

DecodeStatus DecodeEvent(std::span<const uint8_t> bytes, Message* out) {
  // Magic and version come first so a stray or future datagram is named
  // for what it is even when its length differs.
  if (bytes.size() < 5) return DecodeStatus::kTruncated;
  Reader r(bytes);
  if (r.U32() != kWireMagic) return DecodeStatus::kBadMagic;
  if (r.U8() != kWireVersion) return DecodeStatus::kWrongVersion;
  if (bytes.size() < kHeaderSize) return DecodeStatus::kTruncated;
  const uint8_t event_number = r.U8();
  if (event_number >= kEventCount) return DecodeStatus::kUnknownEvent;
  const auto event = static_cast<Event>(event_number);
  const std::size_t body = r.U16();
  if (body != BodySize(event)) return DecodeStatus::kBadBodyLength;
  if (bytes.size() < kHeaderSize + body) return DecodeStatus::kTruncated;
  if (bytes.size() > kHeaderSize + body) return DecodeStatus::kOversized;

  Message m;
  m.event = event;
  m.dropped = r.U64();
  m.monotonic_ns = r.U64();
  switch (event) {
    case Event::kPortErrors: {
      PortErrors pe;
      pe.id = GetPortId(r);
      for (uint64_t* v :
           {&pe.symbol_error, &pe.link_error_recovery, &pe.link_downed,
            &pe.port_rcv_errors, &pe.port_rcv_remote_physical_errors,
            &pe.port_rcv_switch_relay_errors, &pe.port_xmit_discards,
            &pe.port_xmit_constraint_errors, &pe.port_rcv_constraint_errors,
            &pe.local_link_integrity_errors,
            &pe.excessive_buffer_overrun_errors, &pe.vl15_dropped,
            &pe.port_xmit_wait}) {
        *v = r.U64();
      }
      m.body = pe;
      break;
    }
    case Event::kPortDataCounters: {
      PortData dc;
      dc.id = GetPortId(r);
      for (uint64_t* v :
           {&dc.xmit_data, &dc.rcv_data, &dc.xmit_pkts, &dc.rcv_pkts,
            &dc.unicast_xmit_pkts, &dc.unicast_rcv_pkts,
            &dc.multicast_xmit_pkts, &dc.multicast_rcv_pkts}) {
        *v = r.U64();
      }
      m.body = dc;
      break;
    }
    case Event::kPortSelect: {
      PortSelect ps;
      ps.id = GetPortId(r);
      ps.xmit_wait = r.U64();
      m.body = ps;
      break;
    }
    case Event::kTrap: {
      Trap t;
      t.generic = r.U8() != 0;
      t.type = r.U8();
      t.trap_number = r.U16();
      t.producer_or_vendor = r.U32() & 0xffffff;
      t.issuer_lid = r.U16();
      m.body = t;
      break;
    }
    case Event::kUcastRoutingDone:
      m.body = UcastRoutingDone{r.U32()};
      break;
    case Event::kLftChange: {
      LftChange l;
      l.switch_guid = r.U64();
      l.flags = r.U32();
      l.block_num = r.U32();
      l.lft_top = r.U16();
      m.body = l;
      break;
    }
    case Event::kSubnetUp:
    case Event::kHeavySweepStart:
    case Event::kHeavySweepDone:
    case Event::kStateChange:
    case Event::kSaDbDumped:
      break;
  }
  *out = m;
  return DecodeStatus::kOk;
}

}  // namespace fabric::osm
