// Tests for the RDMA netlink statistics reader: request encoding, device
// dump and STAT_GET reply decoding on constructed messages (truncation,
// hostile lengths, random damage), node GUID parsing, the roce collector's
// optional-counter export through a fake source, and the real socket on a
// host without RDMA devices.
#include "sources/roce_rdma_netlink.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>

#include "collectors/roce.h"
#include "tests/support/fake_rdma_stats.h"
#include "tests/support/fake_sysfs.h"

namespace fabric {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::uint16_t kGet =
    RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
constexpr std::uint16_t kStat =
    RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET);

class Msg {
 public:
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    while (buf_.size() % 4) buf_.push_back(0);
  }
  std::size_t Open(std::uint16_t type) {
    std::size_t at = buf_.size();
    nlattr a{0, static_cast<std::uint16_t>(type | NLA_F_NESTED)};
    Raw(&a, sizeof(a));
    return at;
  }
  void Close(std::size_t at) {
    auto len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
  }
  void Attr(std::uint16_t type, const void* p, std::size_t n) {
    nlattr a{static_cast<std::uint16_t>(sizeof(nlattr) + n), type};
    Raw(&a, sizeof(a));
    Raw(p, n);
  }
  void Str(std::uint16_t type, const std::string& s) {
    Attr(type, s.c_str(), s.size() + 1);
  }
  void U32(std::uint16_t type, std::uint32_t v) { Attr(type, &v, 4); }
  void U64(std::uint16_t type, std::uint64_t v) { Attr(type, &v, 8); }
  const Bytes& bytes() const { return buf_; }

 private:
  Bytes buf_;
};

Bytes Message(std::uint16_t type, const Bytes& body, std::uint32_t seq = 1) {
  Bytes out(NLMSG_HDRLEN + body.size());
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(out.size());
  h.nlmsg_type = type;
  h.nlmsg_seq = seq;
  std::memcpy(out.data(), &h, sizeof(h));
  std::copy(body.begin(), body.end(), out.begin() + NLMSG_HDRLEN);
  return out;
}

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes Device(std::uint32_t index, const std::string& name, std::uint64_t guid) {
  Msg m;
  m.U32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
  m.Str(RDMA_NLDEV_ATTR_DEV_NAME, name);
  m.U64(RDMA_NLDEV_ATTR_NODE_GUID, guid);
  return Message(kGet, m.bytes());
}

Bytes StatReply() {
  Msg m;
  m.U32(RDMA_NLDEV_ATTR_DEV_INDEX, 3);
  m.Str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_2");
  m.U32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  std::size_t table = m.Open(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  auto entry = [&](const std::string& name, std::uint64_t v, bool value) {
    std::size_t e = m.Open(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
    m.Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name);
    m.U32(RDMA_NLDEV_ATTR_PAD, 0);  // alignment padding the kernel may add
    if (value) m.U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, v);
    m.Close(e);
  };
  entry("rx_write_requests", 5, true);
  entry("cc_rx_ce_pkts", 77, true);
  entry("cc_tx_cnp_pkts", 1ull << 40, true);
  entry("no_value", 0, false);
  m.Close(table);
  return Message(kStat, m.bytes());
}

TEST(RoceRdmaNetlinkTest, EncodesRequests) {
  Bytes dump = EncodeRdmaDeviceDump(5);
  nlmsghdr h;
  std::memcpy(&h, dump.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_len, dump.size());
  EXPECT_EQ(h.nlmsg_type, kGet);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  Bytes get = EncodeRdmaStatGet(3, 1, 6);
  std::memcpy(&h, get.data(), sizeof(h));
  EXPECT_EQ(h.nlmsg_len, get.size());
  EXPECT_EQ(h.nlmsg_type, kStat);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);  // a get, never a set
  ASSERT_EQ(get.size(), NLMSG_HDRLEN + 16);
  std::uint32_t v;
  nlattr a;
  std::memcpy(&a, get.data() + NLMSG_HDRLEN, sizeof(a));
  EXPECT_EQ(a.nla_type, RDMA_NLDEV_ATTR_DEV_INDEX);
  std::memcpy(&v, get.data() + NLMSG_HDRLEN + 4, 4);
  EXPECT_EQ(v, 3u);
  std::memcpy(&a, get.data() + NLMSG_HDRLEN + 8, sizeof(a));
  EXPECT_EQ(a.nla_type, RDMA_NLDEV_ATTR_PORT_INDEX);
}

TEST(RoceRdmaNetlinkTest, DecodesDeviceDump) {
  Bytes done = Message(NLMSG_DONE, Bytes(4, 0));
  Bytes dgram = Concat({Device(0, "mlx5_0", 0x0002c90300001a2c),
                        Device(7, "mlx5_bond_0", 42), done});
  std::vector<RdmaDevice> devs;
  bool finished = false;
  EXPECT_FALSE(DecodeRdmaDeviceDump(dgram, devs, &finished));
  EXPECT_TRUE(finished);
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].name, "mlx5_0");
  EXPECT_EQ(devs[0].node_guid, 0x0002c90300001a2cu);
  EXPECT_EQ(devs[1].index, 7u);
  EXPECT_EQ(devs[1].name, "mlx5_bond_0");
}

// An error below the kernel's -4095 (INT_MIN would overflow the negation;
// the same bug fuzz/dcb_netlink_fuzz found in the DCB decoder) is a bad
// message, not an errno.
TEST(RoceRdmaNetlinkTest, ErrorOutsideTheErrnoRangeIsBad) {
  for (int value : {std::numeric_limits<int>::min(), -4096}) {
    nlmsgerr err{};
    err.error = value;
    Bytes body(sizeof(err));
    std::memcpy(body.data(), &err, sizeof(err));
    std::vector<RdmaDevice> devs;
    bool done = false;
    EXPECT_EQ(DecodeRdmaDeviceDump(Message(NLMSG_ERROR, body), devs, &done),
              std::errc::bad_message)
        << value;
  }
}

TEST(RoceRdmaNetlinkTest, DeviceDumpErrorsAndTruncation) {
  nlmsgerr err{};
  err.error = -EPERM;
  Bytes body(sizeof(err));
  std::memcpy(body.data(), &err, sizeof(err));
  std::vector<RdmaDevice> devs;
  bool done = false;
  EXPECT_EQ(DecodeRdmaDeviceDump(Message(NLMSG_ERROR, body), devs, &done),
            std::errc::operation_not_permitted);
  Bytes full = Concat({Device(0, "mlx5_0", 1), Device(1, "mlx5_1", 2)});
  for (std::size_t n = 0; n < full.size(); ++n) {
    if (n == full.size() / 2) continue;  // exactly one whole message
    std::vector<RdmaDevice> d;
    bool fin = false;
    Bytes cut(full.begin(), full.begin() + n);
    EXPECT_EQ(DecodeRdmaDeviceDump(cut, d, &fin), std::errc::bad_message) << n;
    EXPECT_FALSE(fin);
  }
}

TEST(RoceRdmaNetlinkTest, DecodesStatReply) {
  RdmaStatResult r = DecodeRdmaStatReply(StatReply());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 3u);  // the entry without a value is skipped
  EXPECT_EQ((*r)[0].name, "rx_write_requests");
  EXPECT_EQ((*r)[0].value, 5u);
  EXPECT_EQ((*r)[1].name, "cc_rx_ce_pkts");
  EXPECT_EQ((*r)[1].value, 77u);
  EXPECT_EQ((*r)[2].value, 1ull << 40);
}

TEST(RoceRdmaNetlinkTest, StatReplyHostileInput) {
  Bytes full = StatReply();
  for (std::size_t n = 0; n < full.size(); ++n) {
    Bytes cut(full.begin(), full.begin() + n);
    RdmaStatResult r = DecodeRdmaStatReply(cut);
    EXPECT_EQ(r.error(), std::errc::bad_message) << n;
  }
  // An entry claiming to be longer than its table.
  Msg m;
  std::size_t table = m.Open(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  nlattr big{400, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY};
  m.Raw(&big, sizeof(big));
  m.Close(table);
  EXPECT_EQ(DecodeRdmaStatReply(Message(kStat, m.bytes())).error(),
            std::errc::bad_message);
  // A reply of the wrong type.
  EXPECT_EQ(DecodeRdmaStatReply(Message(kGet, Bytes())).error(),
            std::errc::bad_message);
  // Random damage never crashes; what decodes has named counters.
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    Bytes b = full;
    for (int f = 0; f < 3; ++f) b[rng() % b.size()] = rng() & 0xff;
    b.resize(rng() % (b.size() + 1));
    RdmaStatResult r = DecodeRdmaStatReply(b);
    if (r.ok()) {
      for (const RdmaCounter& c : *r) EXPECT_FALSE(c.name.empty());
    }
  }
}

TEST(RoceRdmaNetlinkTest, ParsesNodeGuid) {
  EXPECT_EQ(ParseNodeGuid("0002:c903:0000:1a2c\n"), 0x0002c90300001a2cu);
  EXPECT_EQ(ParseNodeGuid("A088:C203:00A4:B2D0"), 0xa088c20300a4b2d0u);
  EXPECT_FALSE(ParseNodeGuid("0002c90300001a2c"));
  EXPECT_FALSE(ParseNodeGuid("0002:c903:0000:1a2g"));
  EXPECT_FALSE(ParseNodeGuid(""));
}

TEST(RoceRdmaNetlinkTest, CollectorExportsOnlyCountersSysfsHides) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  fs->File("class/infiniband/mlx5_0/node_guid", "0002:c903:0000:1a2c\n");
  fs->File("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence",
           "4\n");
  // Same name, another GUID: a recorded tree's device, not this host's.
  fs->File("class/infiniband/mlx5_9/node_guid", "0002:c903:0000:ffff\n");
  fs->File("class/infiniband/mlx5_9/ports/1/link_layer", "Ethernet\n");
  // No node_guid at all: not queried.
  fs->File("class/infiniband/mlx5_8/ports/1/link_layer", "Ethernet\n");
  auto rdma = std::make_unique<testing::FakeRdmaStats>();
  rdma->results.insert_or_assign(
      {"mlx5_0", 0x0002c90300001a2cu, 1},
      std::vector<RdmaCounter>{{"out_of_sequence", 4},
                               {"cc_rx_ce_pkts", 77},
                               {"cc_tx_cnp_pkts", 12}});
  CollectorEnv env;
  env.sysfs = fs;
  auto c = MakeRoceCollector(env, {}, nullptr, nullptr, std::move(rdma));
  MetricSink sink;
  EXPECT_TRUE(c->Collect(sink));
  EXPECT_EQ(sink.skipped(), 0u);
  auto fams = sink.Take();
  ASSERT_EQ(fams.size(), 1u);
  EXPECT_EQ(fams[0].name, "fabric_roce_optional_counter_total");
  ASSERT_EQ(fams[0].metric.size(), 2u);
  std::map<std::string, double> got;
  for (const auto& m : fams[0].metric) {
    std::string counter;
    for (const auto& l : m.label) {
      if (l.name == "counter") counter = l.value;
      if (l.name == "device") {
        EXPECT_EQ(l.value, "mlx5_0");
      }
    }
    got[counter] = m.counter.value;
  }
  EXPECT_EQ(got["cc_rx_ce_pkts"], 77);
  EXPECT_EQ(got["cc_tx_cnp_pkts"], 12);
}

TEST(RoceRdmaNetlinkTest, RealSourceOnHostWithoutRdmaIsAbsent) {
  auto source = MakeRealRdmaStatSource();
  RdmaStatResult r = source->PortCounters("fabricmon_nodev", 1, 1);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.error() == std::errc::no_such_device ||
              r.error() == std::errc::protocol_not_supported)
      << r.error().message();
  std::cout << "real RDMA netlink source: " << r.error().message() << "\n";
}

}  // namespace
}  // namespace fabric
