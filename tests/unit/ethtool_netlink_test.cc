// sources/ethtool_netlink: the generic netlink requests checked attribute by
// attribute, the FEC / module EEPROM / family replies decoded from messages
// built here as the kernel builds them (net/ethtool/fec.c fec_put_stats:
// each statistic an array of u64, total first, then per lane), malformed
// and hostile replies, and the live socket on `lo` degrading to "absent".
#include "sources/ethtool_netlink.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <cstring>
#include <random>

#include "sources/roce_netlink_attrs.h"

namespace fabric {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes Attr(std::uint16_t type, const void* data, std::size_t len) {
  Bytes b(nl::Align4(sizeof(nlattr) + len), 0);
  nlattr a{static_cast<std::uint16_t>(sizeof(nlattr) + len), type};
  std::memcpy(b.data(), &a, sizeof(a));
  if (len) std::memcpy(b.data() + sizeof(a), data, len);
  return b;
}
Bytes Attr(std::uint16_t type, const Bytes& payload) {
  return Attr(type, payload.data(), payload.size());
}
Bytes U64s(std::initializer_list<std::uint64_t> v) {
  Bytes b(v.size() * 8);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}
Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A generic netlink message of `type` with command `cmd`.
Bytes Message(std::uint16_t type, std::uint8_t cmd, const Bytes& attrs,
              std::uint32_t seq = 7) {
  Bytes b(NLMSG_HDRLEN + GENL_HDRLEN, 0);
  genlmsghdr g{cmd, 1, 0};
  std::memcpy(b.data() + NLMSG_HDRLEN, &g, sizeof(g));
  b.insert(b.end(), attrs.begin(), attrs.end());
  nlmsghdr h{static_cast<std::uint32_t>(b.size()), type, 0, seq, 0};
  std::memcpy(b.data(), &h, sizeof(h));
  return b;
}

Bytes Error(int error) {
  Bytes b(NLMSG_HDRLEN + sizeof(nlmsgerr), 0);
  nlmsghdr h{static_cast<std::uint32_t>(b.size()), NLMSG_ERROR, 0, 7, 0};
  std::memcpy(b.data(), &h, sizeof(h));
  std::int32_t e = error;
  std::memcpy(b.data() + NLMSG_HDRLEN, &e, sizeof(e));
  return b;
}

// Attributes of a request, after its headers.
std::vector<nl::Attr> RequestAttrs(const Bytes& req, std::uint16_t* type,
                                   std::uint8_t* cmd) {
  nlmsghdr h;
  std::memcpy(&h, req.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_len, req.size());
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);  // a get; never a dump or a set
  *type = h.nlmsg_type;
  genlmsghdr g;
  std::memcpy(&g, req.data() + NLMSG_HDRLEN, sizeof(g));
  *cmd = g.cmd;
  std::vector<nl::Attr> attrs;
  EXPECT_TRUE(nl::SplitAttrs(std::span(req).subspan(NLMSG_HDRLEN + GENL_HDRLEN),
                             attrs));
  return attrs;
}

std::uint32_t U32(const nl::Attr& a) {
  std::uint32_t v = 0;
  EXPECT_EQ(a.payload.size(), 4u);
  std::memcpy(&v, a.payload.data(), 4);
  return v;
}

void ExpectHeader(const nl::Attr& nest, std::uint32_t flags) {
  std::vector<nl::Attr> h;
  ASSERT_TRUE(nl::SplitAttrs(nest.payload, h));
  ASSERT_GE(h.size(), 1u);
  EXPECT_EQ(h[0].type, ETHTOOL_A_HEADER_DEV_NAME);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(h[0].payload.data()),
                        h[0].payload.size()),
            std::string("ens1f0np0\0", 10));
  if (flags) {
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[1].type, ETHTOOL_A_HEADER_FLAGS);
    EXPECT_EQ(U32(h[1]), flags);
  } else {
    EXPECT_EQ(h.size(), 1u);
  }
}

TEST(EthtoolNetlinkTest, FecGetAsksForStatisticsOfTheNamedNetdev) {
  Bytes req = EncodeFecGet(0x1d, "ens1f0np0", 42);
  std::uint16_t type;
  std::uint8_t cmd;
  auto attrs = RequestAttrs(req, &type, &cmd);
  EXPECT_EQ(type, 0x1d);
  EXPECT_EQ(cmd, ETHTOOL_MSG_FEC_GET);
  ASSERT_EQ(attrs.size(), 1u);
  EXPECT_EQ(attrs[0].type, ETHTOOL_A_FEC_HEADER);
  ExpectHeader(attrs[0], ETHTOOL_FLAG_STATS);
}

TEST(EthtoolNetlinkTest, ModuleEepromGetNamesPageBankAndAddress) {
  EepromRequest r{.page = 0x11,
                  .bank = 1,
                  .i2c_address = 0x50,
                  .offset = 128,
                  .length = 128};
  Bytes req = EncodeModuleEepromGet(0x1d, "ens1f0np0", r, 3);
  std::uint16_t type;
  std::uint8_t cmd;
  auto attrs = RequestAttrs(req, &type, &cmd);
  EXPECT_EQ(cmd, ETHTOOL_MSG_MODULE_EEPROM_GET);
  ASSERT_EQ(attrs.size(), 6u);
  ExpectHeader(attrs[0], 0);
  EXPECT_EQ(attrs[1].type, ETHTOOL_A_MODULE_EEPROM_OFFSET);
  EXPECT_EQ(U32(attrs[1]), 128u);
  EXPECT_EQ(attrs[2].type, ETHTOOL_A_MODULE_EEPROM_LENGTH);
  EXPECT_EQ(U32(attrs[2]), 128u);
  EXPECT_EQ(attrs[3].type, ETHTOOL_A_MODULE_EEPROM_PAGE);
  EXPECT_EQ(attrs[3].payload[0], 0x11);
  EXPECT_EQ(attrs[4].type, ETHTOOL_A_MODULE_EEPROM_BANK);
  EXPECT_EQ(attrs[4].payload[0], 1);
  EXPECT_EQ(attrs[5].type, ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS);
  EXPECT_EQ(attrs[5].payload[0], 0x50);
}

TEST(EthtoolNetlinkTest, FamilyLookup) {
  Bytes req = EncodeGenlFamilyGet("ethtool", 1);
  std::uint16_t type;
  std::uint8_t cmd;
  auto attrs = RequestAttrs(req, &type, &cmd);
  EXPECT_EQ(type, GENL_ID_CTRL);
  EXPECT_EQ(cmd, CTRL_CMD_GETFAMILY);
  ASSERT_EQ(attrs.size(), 1u);
  EXPECT_EQ(attrs[0].type, CTRL_ATTR_FAMILY_NAME);

  std::uint16_t id = 0x1d;
  const char name[] = "ethtool";
  auto r = DecodeGenlFamilyReply(
      Message(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY,
              Cat({Attr(CTRL_ATTR_FAMILY_NAME, name, sizeof(name)),
                   Attr(CTRL_ATTR_FAMILY_ID, &id, sizeof(id))})));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0x1d);
  // A kernel without ethtool netlink answers ENOENT.
  EXPECT_EQ(DecodeGenlFamilyReply(Error(-ENOENT)).error(),
            std::errc::no_such_file_or_directory);
}

TEST(EthtoolNetlinkTest, DecodesActiveModeAndStatisticsPerLane) {
  std::uint32_t active = ETHTOOL_LINK_MODE_FEC_RS_BIT;
  std::uint8_t autoneg = 0;
  Bytes stats = Cat({
      Attr(ETHTOOL_A_FEC_STAT_PAD, nullptr, 0),
      // Total 30: lanes 10, 20 (a 2-lane 100G link).
      Attr(ETHTOOL_A_FEC_STAT_CORRECTED, U64s({30, 10, 20})),
      // The driver counts this one for the port only.
      Attr(ETHTOOL_A_FEC_STAT_UNCORR, U64s({5})),
      // And not at all: the kernel sends an empty array.
      Attr(ETHTOOL_A_FEC_STAT_CORR_BITS, nullptr, 0),
      Attr(99, U64s({1, 2})),  // a newer statistic: skipped
  });
  Bytes attrs = Cat({
      Attr(ETHTOOL_A_FEC_HEADER | NLA_F_NESTED, nullptr, 0),
      Attr(ETHTOOL_A_FEC_AUTO, &autoneg, 1),
      Attr(ETHTOOL_A_FEC_ACTIVE, &active, 4),
      Attr(ETHTOOL_A_FEC_STATS | NLA_F_NESTED, stats),
  });
  auto r = DecodeFecReply(Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY, attrs));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->active_mode, "rs");
  ASSERT_TRUE(r->corrected_blocks);
  EXPECT_EQ(r->corrected_blocks->total, 30u);
  EXPECT_EQ(r->corrected_blocks->lanes, (std::vector<std::uint64_t>{10, 20}));
  ASSERT_TRUE(r->uncorrectable_blocks);
  EXPECT_EQ(r->uncorrectable_blocks->total, 5u);
  EXPECT_TRUE(r->uncorrectable_blocks->lanes.empty());
  EXPECT_FALSE(r->corrected_bits);

  // No statistics, no active mode (an older kernel, a link that is down).
  r = DecodeFecReply(Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY, {}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->active_mode);
  EXPECT_FALSE(r->corrected_blocks);

  for (auto [bit, name] : std::initializer_list<std::pair<int, const char*>>{
           {ETHTOOL_LINK_MODE_FEC_NONE_BIT, "none"},
           {ETHTOOL_LINK_MODE_FEC_BASER_BIT, "baser"},
           {ETHTOOL_LINK_MODE_FEC_LLRS_BIT, "llrs"},
           {77, "mode77"}}) {
    std::uint32_t b = static_cast<std::uint32_t>(bit);
    r = DecodeFecReply(Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY,
                               Attr(ETHTOOL_A_FEC_ACTIVE, &b, 4)));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->active_mode, name);
  }
}

TEST(EthtoolNetlinkTest, KernelErrorsAndMalformedReplies) {
  EXPECT_EQ(DecodeFecReply(Error(-EOPNOTSUPP)).error(),
            std::errc::operation_not_supported);
  EXPECT_EQ(DecodeFecReply(Error(-ENODEV)).error(), std::errc::no_such_device);
  EXPECT_EQ(DecodeFecReply(Error(0)).error(), std::errc::bad_message);
  EXPECT_EQ(DecodeFecReply(Error(INT32_MIN)).error(), std::errc::bad_message);

  auto bad = [](const Bytes& msg) {
    return DecodeFecReply(msg).error() == std::errc::bad_message;
  };
  // A u64 array whose size is not a multiple of 8.
  EXPECT_TRUE(
      bad(Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY,
                  Attr(ETHTOOL_A_FEC_STATS,
                       Attr(ETHTOOL_A_FEC_STAT_CORRECTED, Bytes(12, 1))))));
  // More lanes than any link.
  EXPECT_TRUE(
      bad(Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY,
                  Attr(ETHTOOL_A_FEC_STATS,
                       Attr(ETHTOOL_A_FEC_STAT_CORRECTED, Bytes(8 * 40, 1))))));
  // Another command's reply.
  EXPECT_TRUE(bad(Message(0x1d, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, {})));
  // An attribute that runs past the message.
  Bytes cut = Message(
      0x1d, ETHTOOL_MSG_FEC_GET_REPLY,
      Attr(ETHTOOL_A_FEC_STATS, Attr(ETHTOOL_A_FEC_STAT_UNCORR, U64s({1, 2}))));
  cut[NLMSG_HDRLEN + GENL_HDRLEN] = 200;  // outer nla_len
  EXPECT_TRUE(bad(cut));
  // nlmsg_len longer than the datagram; shorter than a header.
  Bytes longer = Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY, {});
  longer.pop_back();
  EXPECT_TRUE(bad(longer));
  EXPECT_TRUE(bad(Bytes(3, 0)));
}

TEST(EthtoolNetlinkTest, ModuleEepromReply) {
  Bytes page(128);
  for (std::size_t i = 0; i < page.size(); ++i)
    page[i] = static_cast<std::uint8_t>(i);
  auto r = DecodeModuleEepromReply(
      Message(0x1d, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY,
              Cat({Attr(ETHTOOL_A_MODULE_EEPROM_HEADER, nullptr, 0),
                   Attr(ETHTOOL_A_MODULE_EEPROM_DATA, page)})));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, page);
  EXPECT_EQ(DecodeModuleEepromReply(
                Message(0x1d, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, {}))
                .error(),
            std::errc::bad_message);
  EXPECT_EQ(DecodeModuleEepromReply(Error(-EOPNOTSUPP)).error(),
            std::errc::operation_not_supported);
}

TEST(EthtoolNetlinkTest, GarbageNeverCrashes) {
  std::mt19937 rng(28);
  Bytes valid =
      Message(0x1d, ETHTOOL_MSG_FEC_GET_REPLY,
              Attr(ETHTOOL_A_FEC_STATS,
                   Attr(ETHTOOL_A_FEC_STAT_CORRECTED, U64s({3, 1, 2}))));
  for (int i = 0; i < 5000; ++i) {
    Bytes b = valid;
    for (int k = 0; k < 4; ++k)
      b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
    b.resize(rng() % (b.size() + 1));
    (void)DecodeFecReply(b);
    (void)DecodeModuleEepromReply(b);
    (void)DecodeGenlFamilyReply(b);
  }
}

// The real socket: `lo` exists in every network namespace and has no FEC,
// so the answer is an error the roce collector treats as "absent"
// (EOPNOTSUPP; ENOENT where the kernel has no ethtool netlink; EPROTONOSUPPORT
// without generic netlink), never a crash or a hang.
TEST(EthtoolNetlinkTest, LiveLoopbackHasNoFec) {
  EthtoolNetlink nl;
  auto r = nl.Fec("lo");
  ASSERT_FALSE(r.ok());
  const std::error_code e = r.error();
  EXPECT_TRUE(e == std::errc::operation_not_supported ||
              e == std::errc::no_such_file_or_directory ||
              e == std::errc::protocol_not_supported)
      << e.message();
  auto missing = nl.Fec("nosuchdev0");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.error() == std::errc::no_such_device ||
              missing.error() == std::errc::no_such_file_or_directory ||
              missing.error() == std::errc::protocol_not_supported)
      << missing.error().message();
  EXPECT_EQ(nl.Fec("").error(), std::errc::invalid_argument);
}

}  // namespace
}  // namespace fabric
