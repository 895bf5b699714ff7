// The probe wire format: round trips, and every way a packet is refused.
#include <gtest/gtest.h>

#include "probe/wire.h"

namespace fabric::probe {
namespace {

Hmac TestHmac(std::uint8_t fill = 0x11) { return Hmac(Key(32, fill)); }

Packet SampleProbe() {
  Packet p;
  p.type = MessageType::kProbe;
  p.session = 0x0102030405060708ULL;
  p.seq = 42;
  p.t1_ns = 1'700'000'000'123'456'789;
  return p;
}

TEST(ProbeWireTest, ProbeRoundTrips) {
  Hmac h = TestHmac();
  Packet p = SampleProbe();
  p.type = MessageType::kAnswer;
  p.flags = kFlagHardwareClock;
  p.t2_ns = p.t1_ns + 1000;
  p.t3_ns = p.t1_ns + 3000;
  Bytes b = Encode(p, h);
  EXPECT_EQ(b.size(), kPacketBytes);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "FMPB");
  EXPECT_EQ(b[4], kWireVersion);
  DecodeError e{};
  auto got = Decode(b, h, &e);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, p);
}

TEST(ProbeWireTest, FieldsAreBigEndianAtTheirOffsets) {
  Bytes b = Encode(SampleProbe(), TestHmac());
  EXPECT_EQ(b[5], 1);     // type probe
  EXPECT_EQ(b[8], 0x01);  // session MSB first
  EXPECT_EQ(b[15], 0x08);
  EXPECT_EQ(b[23], 42);  // seq LSB
}

TEST(ProbeWireTest, AddressRoundTrips) {
  Hmac h = TestHmac();
  Packet p;
  p.type = MessageType::kAddressAnswer;
  p.session = 7;
  p.seq = 1;
  for (int i = 0; i < 16; ++i) p.address.gid[i] = static_cast<uint8_t>(i + 1);
  p.address.qpn = 0x123456;
  p.address.qkey = 0x11111111;
  p.address.lid = 9;
  p.address.port = 1;
  auto got = Decode(Encode(p, h), h, nullptr);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, p);
}

TEST(ProbeWireTest, PortIdentityRoundTripsAtItsOffsets) {
  Hmac h = TestHmac();
  Packet p;
  p.type = MessageType::kPortAnswer;
  p.session = 7;
  p.seq = 3;
  p.port_id.node_guid = 0x0002c90300a1b2c0ULL;
  p.port_id.port_guid = 0x0002c90300a1b2c3ULL;
  for (int i = 0; i < 16; ++i)
    p.port_id.gid[i] = static_cast<uint8_t>(0xa0 + i);
  p.port_id.lid = 0x1234;
  p.port_id.port = 2;
  Bytes b = Encode(p, h);
  EXPECT_EQ(b[5], 6);
  EXPECT_EQ(b[24], 0x00);  // node GUID, MSB first
  EXPECT_EQ(b[31], 0xc0);
  EXPECT_EQ(b[39], 0xc3);  // port GUID LSB
  EXPECT_EQ(b[40], 0xa0);  // GID
  EXPECT_EQ(b[56], 0x12);  // LID
  EXPECT_EQ(b[58], 2);     // port
  auto got = Decode(b, h, nullptr);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, p);
  EXPECT_TRUE(got->port_id.known());
  // A request carries zeros: "unknown".
  p.type = MessageType::kPortRequest;
  p.port_id = {};
  got = Decode(Encode(p, h), h, nullptr);
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->port_id.known());
}

TEST(ProbeWireTest, WrongKeyIsBadMac) {
  Bytes b = Encode(SampleProbe(), TestHmac(0x11));
  DecodeError e = DecodeError::kMalformed;
  EXPECT_FALSE(Decode(b, TestHmac(0x22), &e));
  EXPECT_EQ(e, DecodeError::kBadMac);
  EXPECT_STREQ(ReasonLabel(e), "bad_mac");
}

TEST(ProbeWireTest, AnyFlippedBitIsRefused) {
  Hmac h = TestHmac();
  Bytes good = Encode(SampleProbe(), h);
  for (std::size_t i = 0; i < kPacketBytes; ++i) {
    Bytes b = good;
    b[i] ^= 0x01;
    DecodeError e{};
    EXPECT_FALSE(Decode(b, h, &e)) << "byte " << i;
    // Header bytes checked before the MAC are malformed; the rest bad_mac.
    EXPECT_EQ(e, i < 5 ? DecodeError::kMalformed : DecodeError::kBadMac)
        << "byte " << i;
  }
}

TEST(ProbeWireTest, WrongSizesAreMalformed) {
  Hmac h = TestHmac();
  Bytes good = Encode(SampleProbe(), h);
  for (std::size_t n : {std::size_t{0}, std::size_t{4}, kPacketBytes - 1}) {
    DecodeError e = DecodeError::kBadMac;
    EXPECT_FALSE(Decode(std::span(good.data(), n), h, &e));
    EXPECT_EQ(e, DecodeError::kMalformed);
  }
  std::vector<std::uint8_t> longer(good.begin(), good.end());
  longer.push_back(0);
  DecodeError e = DecodeError::kBadMac;
  EXPECT_FALSE(Decode(longer, h, &e));
  EXPECT_EQ(e, DecodeError::kMalformed);
}

TEST(ProbeWireTest, SignedButInvalidFieldsAreMalformed) {
  Hmac h = TestHmac();
  // Re-sign a packet whose type / flags / padding are out of range: only a
  // key holder can make one, and it is still refused.
  auto resign = [&](Bytes b) {
    Mac m = h.Sign(std::span(b.data(), kSignedBytes));
    std::copy(m.begin(), m.end(), b.begin() + kSignedBytes);
    return b;
  };
  for (int field : {5, 6, 7, 60}) {
    Bytes b = Encode(SampleProbe(), h);
    b[field] = field == 5 ? 9 : 0x80;
    DecodeError e = DecodeError::kBadMac;
    EXPECT_FALSE(Decode(resign(b), h, &e)) << field;
    EXPECT_EQ(e, DecodeError::kMalformed) << field;
  }
  // The port messages' padding too.
  Packet port;
  port.type = MessageType::kPortAnswer;
  Bytes b = Encode(port, h);
  b[24 + 39] = 1;
  DecodeError e = DecodeError::kBadMac;
  EXPECT_FALSE(Decode(resign(b), h, &e));
  EXPECT_EQ(e, DecodeError::kMalformed);
}

}  // namespace
}  // namespace fabric::probe
