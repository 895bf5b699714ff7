// Tests for the DCB rtnetlink request encoder and reply decoder on
// constructed messages: a full mlx5-like reply, trust rules, kernel errors,
// truncation at every length, hostile attribute lengths and random damage.
#include "sources/dcb_netlink.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

namespace fabric {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Minimal netlink message builder for the tests.
class Msg {
 public:
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    while (buf_.size() % 4) buf_.push_back(0);
  }
  // Opens an attribute; returns its offset for Close().
  std::size_t Open(std::uint16_t type) {
    std::size_t at = buf_.size();
    nlattr a{0, static_cast<std::uint16_t>(type | NLA_F_NESTED)};
    Raw(&a, sizeof(a));
    return at;
  }
  void Close(std::size_t at) {
    std::uint16_t len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
  }
  void Attr(std::uint16_t type, const void* p, std::size_t n) {
    nlattr a{static_cast<std::uint16_t>(sizeof(nlattr) + n), type};
    Raw(&a, sizeof(a));
    Raw(p, n);
  }
  Bytes& bytes() { return buf_; }

 private:
  Bytes buf_;
};

Bytes WithHeader(std::uint16_t type, const Bytes& body) {
  Bytes out(NLMSG_HDRLEN + body.size());
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(NLMSG_HDRLEN + body.size());
  h.nlmsg_type = type;
  h.nlmsg_seq = 7;
  std::memcpy(out.data(), &h, sizeof(h));
  std::copy(body.begin(), body.end(), out.begin() + NLMSG_HDRLEN);
  return out;
}

Bytes FullReply(bool with_dscp = true, bool with_app_table = true) {
  Msg m;
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = DCB_CMD_IEEE_GET;
  m.Raw(&d, sizeof(d));
  m.Attr(DCB_ATTR_IFNAME, "eth0", 5);
  std::size_t ieee = m.Open(DCB_ATTR_IEEE);
  ieee_ets ets{};
  ets.willing = 1;
  ets.ets_cap = 8;
  for (int p = 0; p < 8; ++p) ets.prio_tc[p] = p == 3 ? 3 : 0;
  m.Attr(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  std::uint64_t maxrate[8] = {};
  m.Attr(DCB_ATTR_IEEE_MAXRATE, maxrate, sizeof(maxrate));  // ignored
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1u << 3;
  pfc.delay = 7;
  pfc.requests[3] = 120;      // tx pause
  pfc.indications[3] = 4500;  // rx pause
  m.Attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  if (with_app_table) {
    std::size_t apps = m.Open(DCB_ATTR_IEEE_APP_TABLE);
    dcb_app roce{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915};
    m.Attr(DCB_ATTR_IEEE_APP, &roce, sizeof(roce));
    if (with_dscp) {
      dcb_app dscp{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26};
      m.Attr(DCB_ATTR_IEEE_APP, &dscp, sizeof(dscp));
    }
    m.Close(apps);
  }
  m.Close(ieee);
  std::uint8_t dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  m.Attr(DCB_ATTR_DCBX, &dcbx, 1);
  return WithHeader(RTM_GETDCB, m.bytes());
}

TEST(DcbNetlinkTest, DecodesFullReply) {
  Bytes b = FullReply();
  DcbResult r = DecodeDcbIeeeReply(b);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->pfc);
  EXPECT_EQ(r->pfc->cap, 8);
  EXPECT_EQ(r->pfc->enabled, 0x08);
  EXPECT_EQ(r->pfc->delay, 7);
  EXPECT_EQ(r->pfc->requests[3], 120u);
  EXPECT_EQ(r->pfc->indications[3], 4500u);
  EXPECT_EQ(r->pfc->indications[0], 0u);
  ASSERT_TRUE(r->ets);
  EXPECT_TRUE(r->ets->willing);
  EXPECT_EQ(r->ets->prio_tc[3], 3);
  EXPECT_EQ(r->ets->prio_tc[4], 0);
  ASSERT_EQ(r->apps.size(), 2u);
  EXPECT_EQ(r->apps[0].protocol, 0x8915);
  EXPECT_EQ(r->apps[1].selector, IEEE_8021QAZ_APP_SEL_DSCP);
  EXPECT_EQ(r->apps[1].protocol, 26);
  EXPECT_EQ(r->Trust(), "dscp");
  ASSERT_TRUE(r->dcbx);
  EXPECT_EQ(*r->dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
}

TEST(DcbNetlinkTest, TrustRule) {
  Bytes pcp = FullReply(/*with_dscp=*/false);
  EXPECT_EQ(DecodeDcbIeeeReply(pcp)->Trust(), "pcp");
  Bytes none = FullReply(false, /*with_app_table=*/false);
  DcbResult r = DecodeDcbIeeeReply(none);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_app_table);
  EXPECT_EQ(r->Trust(), "");  // unknown, not guessed
}

TEST(DcbNetlinkTest, KernelErrorIsReported) {
  nlmsgerr err{};
  err.error = -EOPNOTSUPP;  // veth, lo: no dcbnl_ops
  Bytes body(sizeof(err));
  std::memcpy(body.data(), &err, sizeof(err));
  DcbResult r = DecodeDcbIeeeReply(WithHeader(NLMSG_ERROR, body));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), std::errc::operation_not_supported);
}

// Found by fuzz/dcb_netlink_fuzz (UBSan: -INT_MIN overflowed); the input
// is in fuzz/corpus/dcb_netlink/.
TEST(DcbNetlinkTest, ErrorOutsideTheErrnoRangeIsBad) {
  for (int value : {std::numeric_limits<int>::min(), -4096, 1}) {
    nlmsgerr err{};
    err.error = value;
    Bytes body(sizeof(err));
    std::memcpy(body.data(), &err, sizeof(err));
    EXPECT_EQ(DecodeDcbIeeeReply(WithHeader(NLMSG_ERROR, body)).error(),
              std::errc::bad_message)
        << value;
  }
}

TEST(DcbNetlinkTest, WrongMessageTypeOrCommandIsBad) {
  Bytes b = FullReply();
  b[4] = RTM_NEWLINK & 0xff;  // nlmsg_type low byte
  b[5] = RTM_NEWLINK >> 8;
  EXPECT_EQ(DecodeDcbIeeeReply(b).error(), std::errc::bad_message);
  Bytes c = FullReply();
  c[NLMSG_HDRLEN + 1] = DCB_CMD_GSTATE;  // dcbmsg.cmd
  EXPECT_EQ(DecodeDcbIeeeReply(c).error(), std::errc::bad_message);
}

TEST(DcbNetlinkTest, EveryTruncationIsRejectedWithoutCrashing) {
  Bytes full = FullReply();
  for (std::size_t n = 0; n < full.size(); ++n) {
    Bytes cut(full.begin(), full.begin() + n);
    DcbResult r = DecodeDcbIeeeReply(cut);
    EXPECT_EQ(r.error(), std::errc::bad_message) << "length " << n;
  }
}

TEST(DcbNetlinkTest, TruncatedMessageWithConsistentHeaderIsRejected) {
  // Cut inside the IEEE nest but fix nlmsg_len to match: the nested
  // attribute's length now runs past the message.
  Bytes full = FullReply();
  Bytes cut(full.begin(), full.begin() + full.size() - 40);
  std::uint32_t len = static_cast<std::uint32_t>(cut.size());
  std::memcpy(cut.data(), &len, sizeof(len));
  EXPECT_EQ(DecodeDcbIeeeReply(cut).error(), std::errc::bad_message);
}

TEST(DcbNetlinkTest, HostileAttributeLengths) {
  for (std::uint16_t bad_len : {0, 1, 3, 0xffff}) {
    Msg m;
    dcbmsg d{AF_UNSPEC, DCB_CMD_IEEE_GET, 0};
    m.Raw(&d, sizeof(d));
    nlattr a{bad_len, DCB_ATTR_IEEE};
    m.Raw(&a, sizeof(a));
    DcbResult r = DecodeDcbIeeeReply(WithHeader(RTM_GETDCB, m.bytes()));
    EXPECT_EQ(r.error(), std::errc::bad_message) << bad_len;
  }
  // A nested APP entry claiming more than its table.
  Msg m;
  dcbmsg d{AF_UNSPEC, DCB_CMD_IEEE_GET, 0};
  m.Raw(&d, sizeof(d));
  std::size_t ieee = m.Open(DCB_ATTR_IEEE);
  std::size_t apps = m.Open(DCB_ATTR_IEEE_APP_TABLE);
  nlattr a{200, DCB_ATTR_IEEE_APP};
  m.Raw(&a, sizeof(a));
  m.Close(apps);
  m.Close(ieee);
  EXPECT_EQ(DecodeDcbIeeeReply(WithHeader(RTM_GETDCB, m.bytes())).error(),
            std::errc::bad_message);
}

TEST(DcbNetlinkTest, ShortPfcPayloadIsSkippedNotTrusted) {
  Msg m;
  dcbmsg d{AF_UNSPEC, DCB_CMD_IEEE_GET, 0};
  m.Raw(&d, sizeof(d));
  std::size_t ieee = m.Open(DCB_ATTR_IEEE);
  std::uint8_t half_pfc[8] = {8, 0xff, 0, 0, 0, 0, 0, 0};
  m.Attr(DCB_ATTR_IEEE_PFC, half_pfc, sizeof(half_pfc));
  m.Close(ieee);
  DcbResult r = DecodeDcbIeeeReply(WithHeader(RTM_GETDCB, m.bytes()));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pfc);  // absent, not a guessed bitmap
}

TEST(DcbNetlinkTest, RandomDamageNeverCrashes) {
  Bytes full = FullReply();
  std::mt19937 rng(42);
  int ok = 0;
  for (int i = 0; i < 5000; ++i) {
    Bytes b = full;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = rng() & 0xff;
    b.resize(rng() % (b.size() + 1));
    DcbResult r = DecodeDcbIeeeReply(b);
    // Either decoded or an error saying why (never half a result).
    if (r.ok()) {
      ++ok;
    } else {
      EXPECT_TRUE(r.error());
    }
  }
  SUCCEED() << ok << " damaged messages still decoded";
}

TEST(DcbNetlinkTest, EncodesRequest) {
  Bytes req = EncodeDcbIeeeGet("ens1f0np0", 99);
  ASSERT_GE(req.size(), NLMSG_HDRLEN + sizeof(dcbmsg) + sizeof(nlattr));
  nlmsghdr h;
  std::memcpy(&h, req.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_len, req.size());
  EXPECT_EQ(h.nlmsg_len % 4, 0u);
  EXPECT_EQ(h.nlmsg_type, RTM_GETDCB);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);
  EXPECT_EQ(h.nlmsg_seq, 99u);
  dcbmsg d;
  std::memcpy(&d, req.data() + NLMSG_HDRLEN, sizeof(d));
  EXPECT_EQ(d.cmd, DCB_CMD_IEEE_GET);
  nlattr a;
  std::memcpy(&a, req.data() + NLMSG_HDRLEN + 4, sizeof(a));
  EXPECT_EQ(a.nla_type, DCB_ATTR_IFNAME);
  EXPECT_EQ(a.nla_len, sizeof(nlattr) + 10);  // name + NUL
  EXPECT_STREQ(reinterpret_cast<const char*>(req.data() + NLMSG_HDRLEN + 8),
               "ens1f0np0");
}

}  // namespace
}  // namespace fabric
