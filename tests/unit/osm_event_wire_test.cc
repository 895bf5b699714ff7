// The plugin -> daemon datagram format: round trips for every event, the
// exact byte layout of one datagram, and rejection of truncated, oversized,
// wrong-version, unknown-event and garbage bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "osm/event_wire.h"

namespace fabric::osm {
namespace {

std::vector<uint8_t> Encode(const Message& m) {
  std::vector<uint8_t> out(kMaxMessageSize);
  const std::size_t n = EncodeEvent(m, out);
  out.resize(n);
  return out;
}

PortId SomePort() {
  PortId id;
  id.node_guid = 0x0002c90300a1b2c3ull;
  id.port = 17;
  id.node_type = NodeType::kSwitch;
  id.time_diff_s = 3;
  id.SetName("leaf01 MF0;leaf01:MQM9700/U1", 64);
  return id;
}

Message Make(Event event) {
  Message m;
  m.event = event;
  m.dropped = 5;
  m.monotonic_ns = 123456789012345ull;
  switch (event) {
    case Event::kPortErrors: {
      PortErrors pe;
      pe.id = SomePort();
      uint64_t v = 1;
      for (uint64_t* f :
           {&pe.symbol_error, &pe.link_error_recovery, &pe.link_downed,
            &pe.port_rcv_errors, &pe.port_rcv_remote_physical_errors,
            &pe.port_rcv_switch_relay_errors, &pe.port_xmit_discards,
            &pe.port_xmit_constraint_errors, &pe.port_rcv_constraint_errors,
            &pe.local_link_integrity_errors,
            &pe.excessive_buffer_overrun_errors, &pe.vl15_dropped,
            &pe.port_xmit_wait}) {
        *f = v++ * 0x0101010101ull;
      }
      m.body = pe;
      break;
    }
    case Event::kPortDataCounters: {
      PortData dc;
      dc.id = SomePort();
      dc.xmit_data = ~0ull;
      dc.rcv_data = 2;
      dc.xmit_pkts = 3;
      dc.rcv_pkts = 4;
      dc.unicast_xmit_pkts = 5;
      dc.unicast_rcv_pkts = 6;
      dc.multicast_xmit_pkts = 7;
      dc.multicast_rcv_pkts = 8;
      m.body = dc;
      break;
    }
    case Event::kPortSelect:
      m.body = PortSelect{SomePort(), 99};
      break;
    case Event::kTrap:
      m.body = Trap{true, 1, 128, 0x000002, 0x1234};
      break;
    case Event::kUcastRoutingDone:
      m.body = UcastRoutingDone{2};
      break;
    case Event::kLftChange:
      m.body = LftChange{0x0002c90300a1b2c3ull, 3, 7, 0xbfff};
      break;
    default:
      break;
  }
  return m;
}

void ExpectSamePort(const PortId& a, const PortId& b) {
  EXPECT_EQ(a.node_guid, b.node_guid);
  EXPECT_EQ(a.port, b.port);
  EXPECT_EQ(a.node_type, b.node_type);
  EXPECT_EQ(a.time_diff_s, b.time_diff_s);
  EXPECT_EQ(a.NameView(), b.NameView());
}

TEST(OsmEventWire, EveryEventRoundTrips) {
  for (int e = 0; e < kEventCount; ++e) {
    const auto event = static_cast<Event>(e);
    SCOPED_TRACE(std::string(EventName(event)));
    const Message in = Make(event);
    const auto bytes = Encode(in);
    ASSERT_EQ(bytes.size(), kHeaderSize + BodySize(event));
    Message out;
    ASSERT_EQ(DecodeEvent(bytes, &out), DecodeStatus::kOk);
    EXPECT_EQ(out.event, event);
    EXPECT_EQ(out.dropped, 5u);
    EXPECT_EQ(out.monotonic_ns, 123456789012345ull);
    EXPECT_EQ(out.body.index(), in.body.index());
    if (auto* pe = std::get_if<PortErrors>(&out.body)) {
      const auto& want = std::get<PortErrors>(in.body);
      ExpectSamePort(pe->id, want.id);
      EXPECT_EQ(pe->symbol_error, want.symbol_error);
      EXPECT_EQ(pe->link_downed, want.link_downed);
      EXPECT_EQ(pe->port_xmit_discards, want.port_xmit_discards);
      EXPECT_EQ(pe->vl15_dropped, want.vl15_dropped);
      EXPECT_EQ(pe->port_xmit_wait, 13 * 0x0101010101ull);
    } else if (auto* dc = std::get_if<PortData>(&out.body)) {
      ExpectSamePort(dc->id, std::get<PortData>(in.body).id);
      EXPECT_EQ(dc->xmit_data, ~0ull);
      EXPECT_EQ(dc->multicast_rcv_pkts, 8u);
    } else if (auto* ps = std::get_if<PortSelect>(&out.body)) {
      ExpectSamePort(ps->id, SomePort());
      EXPECT_EQ(ps->xmit_wait, 99u);
    } else if (auto* t = std::get_if<Trap>(&out.body)) {
      EXPECT_TRUE(t->generic);
      EXPECT_EQ(t->type, 1);
      EXPECT_EQ(t->trap_number, 128);
      EXPECT_EQ(t->producer_or_vendor, 2u);
      EXPECT_EQ(t->issuer_lid, 0x1234);
    } else if (auto* r = std::get_if<UcastRoutingDone>(&out.body)) {
      EXPECT_EQ(r->flags, 2u);
    } else if (auto* l = std::get_if<LftChange>(&out.body)) {
      EXPECT_EQ(l->switch_guid, 0x0002c90300a1b2c3ull);
      EXPECT_EQ(l->flags, 3u);
      EXPECT_EQ(l->block_num, 7u);
      EXPECT_EQ(l->lft_top, 0xbfff);
    }
  }
}

// The header layout is the contract between two separately built binaries.
TEST(OsmEventWire, HeaderBytesAreLittleEndianAtFixedOffsets) {
  Message m;
  m.event = Event::kHeavySweepDone;
  m.dropped = 0x0102030405060708ull;
  m.monotonic_ns = 0x1112131415161718ull;
  const auto b = Encode(m);
  const std::vector<uint8_t> want = {
      'F',  'M',  'O',  'E',  1,    6,    0,    0,    0x08, 0x07, 0x06, 0x05,
      0x04, 0x03, 0x02, 0x01, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11};
  EXPECT_EQ(b, want);
}

TEST(OsmEventWire, PortIdLayout) {
  const auto b = Encode(Make(Event::kPortSelect));
  ASSERT_EQ(b.size(), kHeaderSize + kPortIdSize + 8);
  const uint8_t* id = b.data() + kHeaderSize;
  EXPECT_EQ(id[0], 0xc3);  // GUID low byte first
  EXPECT_EQ(id[7], 0x00);
  EXPECT_EQ(id[8], 17);  // port
  EXPECT_EQ(id[9], 2);   // switch
  EXPECT_EQ(id[12], 3);  // time_diff_s
  EXPECT_EQ(std::memcmp(id + 16, "leaf01 MF0", 10), 0);
  EXPECT_EQ(b[kHeaderSize + kPortIdSize], 99);  // xmit_wait
}

TEST(OsmEventWire, EncoderRefusesMismatchedBodyAndSmallBuffer) {
  std::vector<uint8_t> buf(kMaxMessageSize);
  Message m;
  m.event = Event::kPortErrors;  // but body is monostate
  EXPECT_EQ(EncodeEvent(m, buf), 0u);
  Message ok = Make(Event::kPortErrors);
  std::vector<uint8_t> small(kHeaderSize + BodySize(Event::kPortErrors) - 1);
  EXPECT_EQ(EncodeEvent(ok, small), 0u);
  Message bad;
  bad.event = static_cast<Event>(kEventCount);
  EXPECT_EQ(EncodeEvent(bad, buf), 0u);
}

TEST(OsmEventWire, EveryTruncationIsRejected) {
  for (int e = 0; e < kEventCount; ++e) {
    const auto bytes = Encode(Make(static_cast<Event>(e)));
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      Message out;
      const DecodeStatus s = DecodeEvent(std::span(bytes.data(), n), &out);
      EXPECT_EQ(s, DecodeStatus::kTruncated) << "event " << e << " len " << n;
    }
  }
}

TEST(OsmEventWire, TrailingBytesAreOversized) {
  auto bytes = Encode(Make(Event::kTrap));
  bytes.push_back(0);
  Message out;
  EXPECT_EQ(DecodeEvent(bytes, &out), DecodeStatus::kOversized);
  bytes.resize(65536, 0xff);
  EXPECT_EQ(DecodeEvent(bytes, &out), DecodeStatus::kOversized);
}

TEST(OsmEventWire, OtherVersionsMagicEventsAndLengthsAreRejected) {
  const auto good = Encode(Make(Event::kPortErrors));
  Message out;
  for (uint8_t version : {0, 2, 255}) {
    auto b = good;
    b[4] = version;
    EXPECT_EQ(DecodeEvent(b, &out), DecodeStatus::kWrongVersion);
  }
  auto b = good;
  b[0] = 'X';
  EXPECT_EQ(DecodeEvent(b, &out), DecodeStatus::kBadMagic);
  b = good;
  b[5] = kEventCount;
  EXPECT_EQ(DecodeEvent(b, &out), DecodeStatus::kUnknownEvent);
  b = good;
  b[6] += 1;  // body length no longer the event's
  EXPECT_EQ(DecodeEvent(b, &out), DecodeStatus::kBadBodyLength);
  // An empty-body event claiming a body.
  b = Encode(Make(Event::kSubnetUp));
  b[6] = 8;
  b.resize(b.size() + 8);
  EXPECT_EQ(DecodeEvent(b, &out), DecodeStatus::kBadBodyLength);
}

TEST(OsmEventWire, NodeNamesBecomePrintableAscii) {
  Message m = Make(Event::kPortSelect);
  auto bytes = Encode(m);
  uint8_t* name = bytes.data() + kHeaderSize + 16;
  name[0] = 0xc3;  // a UTF-8 lead byte
  name[1] = '\n';
  std::memset(name + 2, 'x', kNodeNameSize - 2);  // no terminator at all
  Message out;
  ASSERT_EQ(DecodeEvent(bytes, &out), DecodeStatus::kOk);
  const auto view = std::get<PortSelect>(out.body).id.NameView();
  EXPECT_EQ(view.size(), kNodeNameSize);
  EXPECT_EQ(view.substr(0, 3), "??x");
}

TEST(OsmEventWire, UnknownNodeTypeByteDecodesAsUnknown) {
  auto bytes = Encode(Make(Event::kPortSelect));
  bytes[kHeaderSize + 9] = 77;
  Message out;
  ASSERT_EQ(DecodeEvent(bytes, &out), DecodeStatus::kOk);
  EXPECT_EQ(std::get<PortSelect>(out.body).id.node_type, NodeType::kUnknown);
}

// Random bytes and random corruptions of valid datagrams: the decoder
// returns a status for each and never reads past the span (ASan checks the
// latter in the sanitizer build).
TEST(OsmEventWire, GarbageNeverDecodesOutOfBounds) {
  std::mt19937 rng(12);
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> b;
    if (i % 2 == 0) {
      b.resize(rng() % 300);
      for (auto& c : b) c = static_cast<uint8_t>(rng());
    } else {
      b = Encode(Make(static_cast<Event>(rng() % kEventCount)));
      b[rng() % b.size()] = static_cast<uint8_t>(rng());
    }
    Message out;
    if (DecodeEvent(b, &out) == DecodeStatus::kOk) {
      ++ok;
      EXPECT_EQ(b.size(), kHeaderSize + BodySize(out.event));
    }
  }
  // Corrupting one byte of the counters or name keeps a datagram valid.
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace fabric::osm
