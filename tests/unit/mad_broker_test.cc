// The MAD broker's protocol (sources/mad/broker_protocol.h) and server
// (broker.h) without a fabric: every allow-listed Get survives the trip
// daemon MAD -> typed request -> bytes -> broker-built MAD unchanged, and
// everything else is refused, counted by reason, and never reaches the
// wire (a FakeMadTransport that records what was posted).
#include <gtest/gtest.h>
#include <infiniband/mad.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <thread>

#include "sources/mad/broker.h"
#include "sources/mad/broker_client.h"
#include "sources/mad/codec.h"
#include "tests/support/broker_session.h"
#include "tests/support/fake_mad_transport.h"
#include "tests/support/paths.h"

namespace fabric::mad::broker {
namespace {

using std::chrono::milliseconds;

// Every Get the collectors build, one per allow-list row and routing.
std::vector<std::pair<std::uint16_t, Mad>> CodecGets() {
  std::vector<std::pair<std::uint16_t, Mad>> out;
  for (const AllowedAttribute& a : AllowedAttributes()) {
    const std::uint32_t mod = a.max_modifier;
    if (a.perf) {
      out.emplace_back(7, PerfGet(a.attribute, a.port_select ? 0xff : 0));
    } else {
      out.emplace_back(9, SmpGet(a.attribute, mod));
      out.emplace_back(kPermissiveLid, DrSmpGet(a.attribute, mod, {1, 3, 36}));
      out.emplace_back(kPermissiveLid, DrSmpGet(a.attribute, 0, {}));
    }
  }
  out.emplace_back(7, PmaClassPortInfoGet());
  out.emplace_back(7, PescGet(12));
  return out;
}

void SetTid(Mad& mad, std::uint32_t tid) {
  mad_set_field64(mad.data(), 0, IB_MAD_TRID_F, tid);
}

TEST(BrokerProtocol, EveryAllowedGetIsRebuiltByteForByte) {
  std::uint32_t tid = 0x10000;
  for (auto [dlid, mad] : CodecGets()) {
    SetTid(mad, ++tid);
    const MadCall call = CallFromMad(dlid, mad, milliseconds(500));
    EXPECT_EQ(Check(call), Refusal::kNone) << "attribute " << call.attribute;
    // Through the wire format, as the broker receives it.
    Request r = MakeRequest(Kind::kMad, tid);
    r.mad = call;
    Refusal refusal;
    std::uint32_t got_tid;
    const auto decoded = DecodeRequest(EncodeRequest(r), &refusal, &got_tid);
    ASSERT_TRUE(decoded) << RefusalName(refusal);
    EXPECT_EQ(got_tid, tid);
    EXPECT_EQ(BuildMad(decoded->mad), mad) << "attribute " << call.attribute;
  }
}

TEST(BrokerProtocol, RefusesWhatIsNotAnAllowedGet) {
  auto call_of = [](Mad mad, std::uint16_t dlid = 5) {
    return CallFromMad(dlid, mad, milliseconds(500));
  };
  // SubnSet(PortInfo): the method byte says Set.
  Mad set = SmpGet(kAttrPortInfo, 1);
  mad_set_field(set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  EXPECT_EQ(Check(call_of(set)), Refusal::kMethod);
  // A GetResp (response bit set) and a Trap are not Gets either.
  Mad resp = SmpGet(kAttrNodeInfo, 0);
  mad_set_field(resp.data(), 0, IB_MAD_RESPONSE_F, 1);
  EXPECT_EQ(Check(call_of(resp)), Refusal::kMethod);
  Mad trap = SmpGet(kAttrNodeInfo, 0);
  mad_set_field(trap.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_TRAP);
  EXPECT_EQ(Check(call_of(trap)), Refusal::kMethod);
  // Attributes off the list: P_KeyTable, VLArbitration, a vendor one.
  for (std::uint16_t attr : {0x16, 0x18, 0xff90}) {
    EXPECT_EQ(Check(call_of(SmpGet(attr, 0))), Refusal::kAttribute) << attr;
  }
  // PerfMgt PortSamplesControl is a PMA attribute, but not on the list.
  EXPECT_EQ(Check(call_of(PerfGet(0x10, 1))), Refusal::kAttribute);
  // SA (class 0x03) is no class the broker serves.
  MadCall sa = call_of(SmpGet(kAttrNodeInfo, 0));
  sa.mgmt_class = 0x03;
  EXPECT_EQ(Check(sa), Refusal::kClass);
  // Modifiers: NodeInfo takes none, an LFT block past 48K LIDs, a port
  // select on a PMA attribute that has none.
  EXPECT_EQ(Check(call_of(SmpGet(kAttrNodeInfo, 1))), Refusal::kModifier);
  EXPECT_EQ(Check(call_of(SmpGet(0x19, 768))), Refusal::kModifier);
  MadCall cpi = call_of(PmaClassPortInfoGet());
  cpi.port_select = 3;
  EXPECT_EQ(Check(cpi), Refusal::kModifier);
  // Destinations: LID 0, a multicast LID, the permissive LID LID-routed; a
  // directed route through port 0 or 255.
  EXPECT_EQ(Check(call_of(SmpGet(kAttrNodeInfo, 0), 0)), Refusal::kDestination);
  EXPECT_EQ(Check(call_of(SmpGet(kAttrNodeInfo, 0), 0xc001)),
            Refusal::kDestination);
  EXPECT_EQ(Check(call_of(SmpGet(kAttrNodeInfo, 0), kPermissiveLid)),
            Refusal::kDestination);
  EXPECT_EQ(Check(call_of(DrSmpGet(kAttrNodeInfo, 0, {1, 0}))),
            Refusal::kDestination);
  EXPECT_EQ(Check(call_of(DrSmpGet(kAttrNodeInfo, 0, {255}))),
            Refusal::kDestination);
  MadCall slow = call_of(SmpGet(kAttrNodeInfo, 0));
  slow.timeout_ms = kMaxTimeoutMs + 1;
  EXPECT_EQ(Check(slow), Refusal::kTimeout);
}

TEST(BrokerProtocol, MalformedBytesAreRefusedNotMisread) {
  Request r = MakeRequest(Kind::kMad, 42);
  r.mad = CallFromMad(5, SmpGet(kAttrNodeInfo, 0), milliseconds(500));
  const std::vector<std::uint8_t> good = EncodeRequest(r);
  Refusal refusal;
  std::uint32_t tid;
  ASSERT_TRUE(DecodeRequest(good, &refusal, &tid));
  // Every truncation, one extra byte, a raw 256-byte MAD, another version,
  // an unknown kind, a non-zero padding byte after the route.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeRequest({good.data(), n}, &refusal, &tid)) << n;
    EXPECT_EQ(refusal, Refusal::kMalformed);
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(DecodeRequest(longer, &refusal, &tid));
  const Mad raw = SmpGet(kAttrPortInfo, 1);
  EXPECT_FALSE(DecodeRequest(raw, &refusal, &tid));
  for (std::size_t at : {std::size_t{0}, std::size_t{1}, good.size() - 1}) {
    std::vector<std::uint8_t> bad = good;
    bad[at] = 0x77;
    EXPECT_FALSE(DecodeRequest(bad, &refusal, &tid)) << at;
  }
  EXPECT_EQ(tid, 42u);  // readable header: the refusal can name it
}

TEST(BrokerProtocol, RepliesRoundTrip) {
  Reply ports = MakeReply(Kind::kPorts, 3);
  LocalPort p;
  p.ca = "mlx5_0";
  p.port = 1;
  p.node_guid = 0x1122334455667788;
  p.lid = 17;
  p.state = 4;
  p.link_layer = "InfiniBand";
  ports.ports = {p, p};
  const auto got = DecodeReply(EncodeReply(ports));
  ASSERT_TRUE(got);
  ASSERT_EQ(got->ports.size(), 2u);
  EXPECT_EQ(got->ports[1].ca, "mlx5_0");
  EXPECT_EQ(got->ports[1].node_guid, p.node_guid);
  EXPECT_TRUE(got->ports[1].usable());
  Reply refused = MakeReply(Kind::kMad, 9, Status::kRefused, "method");
  refused.refusal = Refusal::kMethod;
  const auto r = DecodeReply(EncodeReply(refused));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->refusal, Refusal::kMethod);
  EXPECT_EQ(r->tid, 9u);
}

// A broker session on one end of a socket pair, over a fake wire that
// answers every LID-routed Get and records what was posted.
class BrokerSession : public testing::BrokerSessionTest {
 protected:
  // Starts the session with limits_ and answer_ as the test set them.
  void Start() {
    deps_.open = [this](const std::string&, int, std::string*) {
      return std::make_unique<testing::FakeMadTransport>(
          std::make_shared<testing::FakePortState>(),
          [this](std::uint16_t, const Mad& mad) -> MadResult {
            posted_.push_back(mad);
            if (!answer_) return std::errc::timed_out;  // stays in flight
            Mad r = mad;
            mad_set_field(r.data(), 0, IB_MAD_RESPONSE_F, 1);
            return r;
          });
    };
    Serve();
  }
  // Every reply of the next datagram.
  std::vector<Reply> ReadAll() {
    const auto d = Datagram();
    if (!d) return {};
    return DecodeReplies({d->data(), d->size()}).value_or(std::vector<Reply>{});
  }
  Request MadRequest(const Mad& mad, std::uint32_t tid,
                     std::uint16_t dlid = 5) {
    Mad m = mad;
    SetTid(m, tid);
    Request r = MakeRequest(Kind::kMad, tid);
    r.mad = CallFromMad(dlid, m, milliseconds(500));
    return r;
  }
  void Open() {
    Request open = MakeRequest(Kind::kOpen, 1);
    EXPECT_EQ(Call(open).status, Status::kOk);
  }
  bool answer_ = true;
  std::vector<Mad> posted_;  // the server thread's, read after Hangup()
};

TEST_F(BrokerSession, AnswersAllowedGetsAndSendsExactlyThem) {
  Start();
  Open();
  const Reply r = Call(MadRequest(SmpGet(kAttrNodeInfo, 0), 0x10001));
  EXPECT_EQ(r.status, Status::kOk);
  EXPECT_EQ(r.tid, 0x10001u);
  EXPECT_EQ(r.mad[2 + 1] & 0x80, 0x80);  // the response
  Hangup();
  EXPECT_EQ(rc_, 0);  // the client hung up: a clean exit
  ASSERT_EQ(posted_.size(), 1u);
  Mad expected = SmpGet(kAttrNodeInfo, 0);
  SetTid(expected, 0x10001);
  EXPECT_EQ(posted_[0], expected);
}

TEST_F(BrokerSession, ForgedRequestsAreRefusedCountedAndNeverSent) {
  Start();
  // Before OPEN: no port to send on.
  EXPECT_EQ(Call(MadRequest(SmpGet(kAttrNodeInfo, 0), 1)).refusal,
            Refusal::kState);
  Open();
  Mad set = SmpGet(kAttrPortInfo, 1);
  mad_set_field(set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  EXPECT_EQ(Call(MadRequest(set, 2)).refusal, Refusal::kMethod);
  EXPECT_EQ(Call(MadRequest(SmpGet(0x16, 0), 3)).refusal, Refusal::kAttribute);
  // Raw MAD bytes (a SubnSet), an oversized and a truncated message.
  Write(std::vector<std::uint8_t>(set.begin(), set.end()));
  EXPECT_EQ(Read()->refusal, Refusal::kMalformed);
  Write(std::vector<std::uint8_t>(kMaxMessage + 100, 0x01));
  EXPECT_EQ(Read()->refusal, Refusal::kMalformed);
  Write({1, 3, 0});
  EXPECT_EQ(Read()->refusal, Refusal::kMalformed);
  // A second OPEN.
  EXPECT_EQ(Call(MakeRequest(Kind::kOpen, 4)).refusal, Refusal::kState);
  const Reply stats = Call(MakeRequest(Kind::kStats, 5));
  ASSERT_EQ(stats.refused.size(), static_cast<std::size_t>(Refusal::kCount));
  EXPECT_EQ(stats.refused[static_cast<int>(Refusal::kState)], 2u);
  EXPECT_EQ(stats.refused[static_cast<int>(Refusal::kMethod)], 1u);
  EXPECT_EQ(stats.refused[static_cast<int>(Refusal::kAttribute)], 1u);
  EXPECT_EQ(stats.refused[static_cast<int>(Refusal::kMalformed)], 3u);
  Hangup();
  EXPECT_TRUE(posted_.empty());
  EXPECT_EQ(counts_[static_cast<int>(Refusal::kMalformed)], 3u);
}

TEST_F(BrokerSession, EachRequestOfABatchIsCheckedOnItsOwn) {
  Start();
  Open();
  // One datagram: an allowed Get, a SubnSet, a Get off the list.
  std::vector<std::uint8_t> message;
  AppendRequest(MadRequest(SmpGet(kAttrNodeInfo, 0), 20), &message);
  Mad set = SmpGet(kAttrPortInfo, 1);
  mad_set_field(set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  AppendRequest(MadRequest(set, 21), &message);
  AppendRequest(MadRequest(SmpGet(0x16, 0), 22), &message);
  Write(message);
  // Then an allowed Get followed by raw MAD bytes: refused whole.
  message = EncodeRequest(MadRequest(SmpGet(kAttrNodeInfo, 0), 23));
  message.insert(message.end(), set.begin(), set.end());
  Write(message);
  std::map<std::uint32_t, Reply> replies;
  while (replies.size() < 4) {
    const auto batch = ReadAll();
    ASSERT_FALSE(batch.empty());
    for (const Reply& r : batch) replies[r.tid] = r;
  }
  EXPECT_EQ(replies[20].status, Status::kOk);
  EXPECT_EQ(replies[21].refusal, Refusal::kMethod);
  EXPECT_EQ(replies[22].refusal, Refusal::kAttribute);
  EXPECT_EQ(replies[23].refusal, Refusal::kMalformed);
  Hangup();
  ASSERT_EQ(posted_.size(), 1u);  // tid 20 only
  EXPECT_EQ(counts_[static_cast<int>(Refusal::kMethod)], 1u);
  EXPECT_EQ(counts_[static_cast<int>(Refusal::kAttribute)], 1u);
  EXPECT_EQ(counts_[static_cast<int>(Refusal::kMalformed)], 1u);
}

TEST_F(BrokerSession, InFlightLimitsHold) {
  limits_.max_per_destination = 2;
  answer_ = false;
  Start();
  Open();
  for (std::uint32_t tid = 10; tid < 12; ++tid) {
    Write(EncodeRequest(MadRequest(SmpGet(kAttrNodeInfo, 0), tid)));
  }
  // A third to the same LID, and a tid already in flight, are refused; another
  // LID still goes.
  EXPECT_EQ(Call(MadRequest(SmpGet(kAttrNodeInfo, 0), 12)).refusal,
            Refusal::kInFlight);
  EXPECT_EQ(Call(MadRequest(SmpGet(kAttrNodeInfo, 0), 10, 6)).refusal,
            Refusal::kInFlight);
  Write(EncodeRequest(MadRequest(SmpGet(kAttrNodeInfo, 0), 13, 6)));
  const Reply stats = Call(MakeRequest(Kind::kStats, 5));
  EXPECT_EQ(stats.refused[static_cast<int>(Refusal::kInFlight)], 2u);
  Hangup();
  EXPECT_EQ(posted_.size(), 3u);
}

TEST(BrokerTransport, ABrokerThatIsGoneFailsFastAndSaysSo) {
  Endpoint nowhere;
  nowhere.socket_path = "/nonexistent/fabricmon-mad-broker.sock";
  std::string error;
  EXPECT_EQ(Transport::Open(nowhere, "", 0, &error), nullptr);
  EXPECT_NE(error.find("/nonexistent"), std::string::npos) << error;
  PortLister lister(nowhere);
  error.clear();
  EXPECT_TRUE(lister.List(&error).empty());
  EXPECT_FALSE(error.empty());
}

TEST(BrokerProtocol, TheDocsNameEveryAllowListRow) {
  std::ifstream in(::fabric::testing::SourceDir() + "/docs/mad-broker.md");
  const std::string doc{std::istreambuf_iterator<char>(in), {}};
  for (const AllowedAttribute& a : AllowedAttributes()) {
    EXPECT_NE(doc.find("| " + std::string(a.name) + " |"), std::string::npos)
        << a.name << " is allowed but not in docs/mad-broker.md";
  }
}

TEST(AllowListed, InProcessMadsOffTheListAreNotPosted) {
  std::vector<Mad> posted;
  auto fake = std::make_unique<testing::FakeMadTransport>(
      std::make_shared<testing::FakePortState>(),
      [&](std::uint16_t, const Mad& mad) -> MadResult {
        posted.push_back(mad);
        Mad r = mad;
        mad_set_field(r.data(), 0, IB_MAD_RESPONSE_F, 1);
        return r;
      });
  auto t = AllowListed(std::move(fake));
  MadOptions fast;
  fast.timeout = milliseconds(20);
  fast.retries = 0;
  const std::uint64_t before =
      ProcessCounters().refused[static_cast<int>(Refusal::kAttribute)];
  EXPECT_FALSE(t->Send({.dlid = 5, .mad = SmpGet(0x16, 0)}, fast).ok());
  EXPECT_EQ(ProcessCounters().refused[static_cast<int>(Refusal::kAttribute)],
            before + 1);
  EXPECT_TRUE(posted.empty());
  EXPECT_TRUE(t->Send({.dlid = 5, .mad = SmpGet(kAttrNodeInfo, 0)}, fast).ok());
  EXPECT_EQ(posted.size(), 1u);
}

}  // namespace
}  // namespace fabric::mad::broker
