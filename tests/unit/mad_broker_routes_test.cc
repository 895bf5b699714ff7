// Issue 40 item 8: the MAD broker's directed routes are bounded by the
// fabric and counted per node, and an empty datagram does not end it.
// A broker session on one end of a socket pair, over a fake fabric whose
// SMAs answer directed-route NodeInfo with their GUID and never answer
// PortInfo (so those stay in flight):
//
//   host 0x10 [1] -- [1] A 0xa0 [2] -- [1] B 0xb0 [2] -- [1] D 0xd0
//                          A    [3] -- [1] C 0xc0 [2] -- [2] D
//
// [1,2,2] and [1,3,2] are two loop-free routes to D; [1,2,1,2,...]
// bounces between A and B.
#include <gtest/gtest.h>
#include <infiniband/mad.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "sources/mad/broker.h"
#include "sources/mad/broker_routes.h"
#include "sources/mad/codec.h"
#include "tests/support/broker_session.h"

namespace fabric::mad::broker {
namespace {

using std::chrono::milliseconds;

struct Node {
  std::uint64_t guid;
  std::map<int, std::pair<int, int>> links;  // port -> (node index, port)
};
const std::vector<Node>& Graph() {
  static const std::vector<Node> g = {
      {0x10, {{1, {1, 1}}}},                            // 0 host
      {0xa0, {{1, {0, 1}}, {2, {2, 1}}, {3, {3, 1}}}},  // 1 A
      {0xb0, {{1, {1, 2}}, {2, {4, 1}}}},               // 2 B
      {0xc0, {{1, {1, 3}}, {2, {4, 2}}}},               // 3 C
      {0xd0, {{1, {2, 2}}, {2, {3, 2}}}},               // 4 D
  };
  return g;
}

// Answers DR NodeInfo from Graph(); records every posted MAD's route.
class FakeFabric final : public MadTransport {
 public:
  explicit FakeFabric(std::vector<DrPath>* posted) : posted_(posted) {}

 protected:
  bool Post(std::uint16_t, const Mad& mad, std::chrono::milliseconds) override {
    Mad r = mad;
    std::uint8_t* b = r.data();
    DrPath path;
    const unsigned hops = mad_get_field(b, 0, IB_DRSMP_HOPCNT_F);
    for (unsigned i = 1; i <= hops; ++i) path.push_back(b[128 + i]);
    posted_->push_back(path);
    if (mad_get_field(b, 0, IB_MAD_ATTRID_F) != kAttrNodeInfo) return true;
    int at = 0;
    int entered = 1;  // the port the SMP came in on (the host's own: 1)
    for (std::uint8_t p : path) {
      auto it = Graph()[at].links.find(p);
      if (it == Graph()[at].links.end()) return true;  // no cable: lost
      at = it->second.first;
      entered = it->second.second;
    }
    mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
    std::uint8_t* d = b + IB_SMP_DATA_OFFS;
    std::uint64_t guid = Graph()[at].guid;
    mad_set_field(d, 0, IB_NODE_BASE_VERS_F, 1);
    mad_set_field(d, 0, IB_NODE_TYPE_F, at == 0 ? 1 : 2);
    mad_set_field(d, 0, IB_NODE_NPORTS_F, 3);
    mad_set_field(d, 0, IB_NODE_LOCAL_PORT_F, entered);
    mad_encode_field(d, IB_NODE_GUID_F, &guid);
    mad_encode_field(d, IB_NODE_PORT_GUID_F, &guid);
    answers_.push_back(r);
    return true;
  }
  void Poll(std::chrono::microseconds, std::vector<Answer>* out) override {
    for (const Mad& m : answers_) out->push_back(Answer::Of(m));
    answers_.clear();
  }

 private:
  std::vector<DrPath>* posted_;
  std::vector<Mad> answers_;
};

class BrokerRoutes : public testing::BrokerSessionTest {
 protected:
  void SetUp() override {
    deps_.open = [this](const std::string&, int, std::string*) {
      return std::make_unique<FakeFabric>(&posted_);
    };
    limits_.max_per_destination = 2;
    Serve();
    ASSERT_EQ(Call(MakeRequest(Kind::kOpen, 1)).status, Status::kOk);
  }
  // A DR Get of `attr` along `path`; PortInfo is never answered.
  Reply Dr(std::uint16_t attr, const DrPath& path, std::uint32_t tid) {
    Mad m = DrSmpGet(attr, attr == kAttrPortInfo ? 1 : 0, path);
    mad_set_field64(m.data(), 0, IB_MAD_TRID_F, tid);
    Request r = MakeRequest(Kind::kMad, tid);
    r.mad = CallFromMad(kPermissiveLid, m, milliseconds(5000));
    if (attr == kAttrPortInfo) {  // no answer comes: nothing to wait for
      EXPECT_EQ(
          ::send(client_, EncodeRequest(r).data(), EncodeRequest(r).size(), 0),
          static_cast<ssize_t>(EncodeRequest(r).size()));
      return Reply{};
    }
    return Call(r);
  }
  std::uint64_t Refused(Refusal why) {
    const Reply s = Call(MakeRequest(Kind::kStats, 2));
    return s.refused.size() > static_cast<std::size_t>(why)
               ? s.refused[static_cast<std::size_t>(why)]
               : 0;
  }
  // Discovery as the daemon walks it: the local node, then one hop at a
  // time.
  void Discover() {
    std::uint32_t tid = 10;
    for (const DrPath& p :
         std::vector<DrPath>{{}, {1}, {1, 2}, {1, 3}, {1, 2, 2}, {1, 3, 2}}) {
      EXPECT_EQ(Dr(kAttrNodeInfo, p, tid++).status, Status::kOk);
    }
  }

  std::vector<DrPath> posted_;
};

TEST_F(BrokerRoutes, AnEmptyDatagramIsCountedAndTheSessionGoesOn) {
  EXPECT_EQ(::send(client_, "", 0, 0), 0);
  EXPECT_EQ(::send(client_, "", 0, 0), 0);
  EXPECT_EQ(Refused(Refusal::kMalformed), 2u);
  EXPECT_EQ(Dr(kAttrNodeInfo, {1}, 3).status, Status::kOk);
}

TEST_F(BrokerRoutes, TwoRoutesToOneNodeShareItsLimit) {
  Discover();
  Dr(kAttrPortInfo, {1, 2, 2}, 100);
  Dr(kAttrPortInfo, {1, 2, 2}, 101);
  // D has 2 in flight: the other route to D is D too.
  EXPECT_EQ(Dr(kAttrNodeInfo, {1, 3, 2}, 102).refusal, Refusal::kInFlight);
  // B is not D.
  EXPECT_EQ(Dr(kAttrNodeInfo, {1, 2}, 103).status, Status::kOk);
  EXPECT_EQ(Refused(Refusal::kInFlight), 1u);
}

TEST_F(BrokerRoutes, ARouteThatBouncesIsRefusedOnceItsCablesAreKnown) {
  Discover();
  const std::size_t before = posted_.size();
  // A -> B -> A: passes A twice.
  EXPECT_EQ(Dr(kAttrNodeInfo, {1, 2, 1}, 200).refusal, Refusal::kDestination);
  // host -> A -> host -> A ...: the local node twice.
  EXPECT_EQ(Dr(kAttrNodeInfo, {1, 1, 1}, 201).refusal, Refusal::kDestination);
  // Longer than any real fabric: refused before anything is known.
  DrPath bounce;
  for (int i = 0; i < 63; ++i) bounce.push_back(i % 2 ? 1 : 2);
  bounce[0] = 1;
  EXPECT_EQ(Dr(kAttrNodeInfo, bounce, 202).refusal, Refusal::kDestination);
  EXPECT_EQ(posted_.size(), before);  // none of them reached the fabric
  EXPECT_EQ(Refused(Refusal::kDestination), 3u);
}

TEST_F(BrokerRoutes, UnknownRoutesShareTheirFirstUnknownCable) {
  // Nothing learnt: every route leaves by the local port 1, one cable.
  Dr(kAttrPortInfo, {1, 2, 2}, 300);
  Dr(kAttrPortInfo, {1, 3, 2}, 301);
  EXPECT_EQ(Dr(kAttrNodeInfo, {1, 2}, 302).refusal, Refusal::kInFlight);
}

TEST(RouteBook, ResolvesByLearntCablesAndFindsLoops) {
  RouteBook book;
  auto answer = [](std::uint64_t guid) {
    Mad m = DrSmpGet(kAttrNodeInfo, 0, {});
    std::uint8_t* b = m.data();
    mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
    mad_encode_field(b + IB_SMP_DATA_OFFS, IB_NODE_GUID_F, &guid);
    mad_set_field(b + IB_SMP_DATA_OFFS, 0, IB_NODE_BASE_VERS_F, 1);
    mad_set_field(b + IB_SMP_DATA_OFFS, 0, IB_NODE_TYPE_F,
                  2);  // a switch: DecodeNodeInfo refuses type 0
    return m;
  };
  book.Learn({}, answer(0x10));
  book.Learn({1, 2}, answer(0xb0));  // prefix [1] unknown: not learnt
  EXPECT_EQ(book.edges(), 0u);
  book.Learn({1}, answer(0xa0));
  book.Learn({1, 2}, answer(0xb0));
  book.Learn({1, 2, 1}, answer(0xa0));
  EXPECT_EQ(book.Resolve({1, 2}).key, book.Resolve({1, 2}).key);
  EXPECT_EQ(book.Resolve({1, 2}).key, "N" + std::to_string(0xb0));
  EXPECT_TRUE(book.Resolve({1, 2, 1}).loop);
  EXPECT_FALSE(book.Resolve({1, 3}).loop);
  EXPECT_EQ(book.Resolve({1, 3, 5}).key, "V" + std::to_string(0xa0) + ":3");
  // A host port that answers with the local node's GUID is the local node.
  book.Learn({1, 1}, answer(0x10));
  EXPECT_TRUE(book.Resolve({1, 1}).loop);
}

}  // namespace
}  // namespace fabric::mad::broker
