// sources/mad/routes and the codec's SwitchInfo / LinearForwardingTable
// decoders. Answers are built with libibmad's own encoder
// (mad_encode_field), field by field, so the decoders are checked against
// an independent writer; the tracer runs on a hand-built topology whose
// switches answer from LFTs the test wrote, through a MadTransport that
// counts what it was asked.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <map>
#include <random>
#include <set>

#include "sources/mad/codec.h"
#include "sources/mad/routes.h"

namespace fabric::mad {
namespace {

// A GetResp to `request` carrying `data` (the SMP data area).
Mad Answer(const Mad& request, const std::uint8_t* data) {
  Mad r = request;
  std::uint8_t* b = r.data();
  mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
  if (mad_get_field(b, 0, IB_MAD_MGMTCLASS_F) == IB_SMI_DIRECT_CLASS) {
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
  }
  std::copy(data, data + IB_SMP_DATA_SIZE, b + IB_SMP_DATA_OFFS);
  return r;
}

Mad SwitchInfoAnswer(const Mad& request, std::uint32_t cap, std::uint32_t top) {
  std::uint8_t d[IB_SMP_DATA_SIZE] = {};
  std::uint32_t v = cap;
  mad_encode_field(d, IB_SW_LINEAR_FDB_CAP_F, &v);
  v = top;
  mad_encode_field(d, IB_SW_LINEAR_FDB_TOP_F, &v);
  v = 1024;
  mad_encode_field(d, IB_SW_MCAST_FDB_CAP_F, &v);
  v = 3;
  mad_encode_field(d, IB_SW_DEF_PORT_F, &v);
  v = 1;
  mad_encode_field(d, IB_SW_ENHANCED_PORT0_F, &v);
  return Answer(request, d);
}

Mad LftAnswer(const Mad& request, const std::array<std::uint8_t, 64>& ports) {
  std::uint8_t d[IB_SMP_DATA_SIZE] = {};
  std::array<std::uint8_t, 64> copy = ports;
  mad_encode_field(d, IB_LINEAR_FORW_TBL_F, copy.data());
  return Answer(request, d);
}

TEST(MadRoutesCodec, DecodesSwitchInfoAndLftBlocksAsLibibmadEncodesThem) {
  std::string error;
  const Mad si_req = SmpGet(kAttrSwitchInfo, 0);
  auto si = DecodeSwitchInfo(SwitchInfoAnswer(si_req, 49152, 0x1234), &error);
  ASSERT_TRUE(si) << error;
  EXPECT_EQ(si->linear_fdb_cap, 49152u);
  EXPECT_EQ(si->linear_fdb_top, 0x1234u);
  EXPECT_EQ(si->mcast_fdb_cap, 1024u);
  EXPECT_EQ(si->default_port, 3);
  EXPECT_TRUE(si->enhanced_port0);

  std::array<std::uint8_t, 64> ports;
  for (int i = 0; i < 64; ++i) ports[i] = static_cast<std::uint8_t>(i * 3);
  ports[63] = kLftNoRoute;
  const Mad lft_req = DrSmpGet(kAttrLinearForwardingTable, 767, {1, 2});
  auto b = DecodeLftBlock(LftAnswer(lft_req, ports), &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->block, 767u);
  EXPECT_EQ(b->ports, ports);

  // The requests carry the attribute and block as IBA numbers them.
  std::uint8_t* h = const_cast<std::uint8_t*>(lft_req.data());
  EXPECT_EQ(mad_get_field(h, 0, IB_MAD_ATTRID_F), 0x19u);
  EXPECT_EQ(mad_get_field(h, 0, IB_MAD_ATTRMOD_F), 767u);
  EXPECT_EQ(mad_get_field(const_cast<std::uint8_t*>(si_req.data()), 0,
                          IB_MAD_ATTRID_F),
            0x12u);
}

TEST(MadRoutesCodec, RefusesWhatIsNotAnLftOrSwitchInfoAnswer) {
  std::string error;
  std::array<std::uint8_t, 64> ports{};
  // Block beyond the unicast range.
  EXPECT_FALSE(DecodeLftBlock(
      LftAnswer(SmpGet(kAttrLinearForwardingTable, 768), ports), &error));
  EXPECT_NE(error.find("out of range"), std::string::npos);
  // The other attribute, each way.
  EXPECT_FALSE(DecodeLftBlock(
      SwitchInfoAnswer(SmpGet(kAttrSwitchInfo, 0), 1, 1), &error));
  EXPECT_FALSE(DecodeSwitchInfo(
      LftAnswer(SmpGet(kAttrLinearForwardingTable, 0), ports), &error));
  // A request, not an answer.
  EXPECT_FALSE(DecodeLftBlock(SmpGet(kAttrLinearForwardingTable, 0), &error));
  // Error status.
  Mad bad = LftAnswer(SmpGet(kAttrLinearForwardingTable, 0), ports);
  mad_set_field(bad.data(), 0, IB_MAD_STATUS_F, 0x1c);
  EXPECT_FALSE(DecodeLftBlock(bad, &error));
  EXPECT_NE(error.find("0x001c"), std::string::npos) << error;
  // Truncated, and garbage of every length: never a crash.
  const Mad ok = LftAnswer(SmpGet(kAttrLinearForwardingTable, 0), ports);
  EXPECT_FALSE(DecodeLftBlock(Bytes(ok.data(), 100), &error));
  std::mt19937 rng(29);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> junk(rng() % 300);
    for (auto& c : junk) c = static_cast<std::uint8_t>(rng());
    if (junk.size() > 24 && i % 2) {
      // Mostly plausible headers, so the field decoding is reached too.
      std::copy(ok.begin(), ok.begin() + 24, junk.begin());
    }
    (void)DecodeLftBlock(junk, &error);
    (void)DecodeSwitchInfo(junk, &error);
  }
}

// --- the tracer ------------------------------------------------------------

// Two leaves under one spine (and a third leaf under the spine with no
// hosts), three CAs:
//   hca0 (lid 1) - leaf0[1], hca2 (lid 3) - leaf0[2], hca1 (lid 2) - leaf1[1]
//   leaf0[3] - spine[1], leaf1[3] - spine[2]
// Switch LIDs: leaf0 10, leaf1 11, spine 12. hca0 is the local node.
struct Net {
  Topology topo;
  std::map<std::uint64_t, std::array<std::uint8_t, 64>> lft;  // block 0
  std::map<std::uint64_t, std::uint32_t> top;
};

constexpr std::uint64_t kHca0 = 0x100, kHca1 = 0x101, kHca2 = 0x102;
constexpr std::uint64_t kLeaf0 = 0x200, kLeaf1 = 0x201, kSpine = 0x202;

void Link(Topology& t, std::uint64_t a, int pa, std::uint64_t b, int pb) {
  FabricNode& na = t.nodes[t.by_guid.at(a)];
  FabricNode& nb = t.nodes[t.by_guid.at(b)];
  na.ports[pa].remote_guid = b;
  na.ports[pa].remote_port = pb;
  nb.ports[pb].remote_guid = a;
  nb.ports[pb].remote_port = pa;
}

void AddNode(Topology& t, std::uint64_t guid, int type, int ports,
             std::uint16_t lid, std::string name, DrPath path,
             int reached_port) {
  FabricNode n;
  n.guid = guid;
  n.port_guid = type == 2 ? guid : guid + 0x1000;
  n.type = type;
  n.num_ports = ports;
  n.description = std::move(name);
  n.lid = lid;
  n.path = std::move(path);
  n.reached_port = reached_port;
  if (type == 2) {
    for (int p = 0; p <= ports; ++p) {
      n.ports[p].num = p;
      n.ports[p].state = 4;
    }
    n.ports[0].lid = lid;
  } else {
    n.ports[reached_port].num = reached_port;
    n.ports[reached_port].state = 4;
    n.ports[reached_port].lid = lid;
  }
  t.by_guid[guid] = t.nodes.size();
  t.nodes.push_back(n);
}

Net MakeNet() {
  Net net;
  Topology& t = net.topo;
  AddNode(t, kHca0, 1, 1, 1, "hca0", {}, 1);
  AddNode(t, kLeaf0, 2, 3, 10, "leaf0", {1}, 1);
  AddNode(t, kHca2, 1, 1, 3, "hca2", {1, 2}, 1);
  AddNode(t, kSpine, 2, 2, 12, "spine", {1, 3}, 1);
  AddNode(t, kLeaf1, 2, 3, 11, "leaf1", {1, 3, 2}, 3);
  AddNode(t, kHca1, 1, 1, 2, "hca1", {1, 3, 2, 1}, 1);
  Link(t, kHca0, 1, kLeaf0, 1);
  Link(t, kHca2, 1, kLeaf0, 2);
  Link(t, kHca1, 1, kLeaf1, 1);
  Link(t, kLeaf0, 3, kSpine, 1);
  Link(t, kLeaf1, 3, kSpine, 2);
  // The LFTs an SM would write: LIDs 1, 3 on leaf0; 2 on leaf1.
  auto table = [](std::map<int, int> entries, int up) {
    std::array<std::uint8_t, 64> a;
    a.fill(kLftNoRoute);
    for (int lid : {1, 2, 3, 10, 11, 12}) a[lid] = up;
    for (auto [lid, port] : entries) a[lid] = port;
    return a;
  };
  net.lft[kLeaf0] = table({{1, 1}, {3, 2}, {10, 0}}, 3);
  net.lft[kLeaf1] = table({{2, 1}, {11, 0}}, 3);
  net.lft[kSpine] =
      table({{1, 1}, {3, 1}, {10, 1}, {2, 2}, {11, 2}, {12, 0}}, kLftNoRoute);
  for (auto g : {kLeaf0, kLeaf1, kSpine}) net.top[g] = 12;
  return net;
}

// Answers SwitchInfo and LFT Gets (directed route or LID-routed) from a
// Net; counts the MADs per (switch, attribute, modifier).
class LftTransport final : public MadTransport {
 public:
  explicit LftTransport(Net* net) : net_(net) {}

  std::map<std::tuple<std::uint64_t, int, std::uint32_t>, int> asked;
  std::set<std::uint64_t> silent;  // switches that never answer
  int total = 0;

 protected:
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds) override {
    ++total;
    std::uint8_t* b = const_cast<std::uint8_t*>(mad.data());
    const bool dr =
        mad_get_field(b, 0, IB_MAD_MGMTCLASS_F) == IB_SMI_DIRECT_CLASS;
    // The initial path: byte 0 unused, then one port per hop.
    std::uint8_t initial[64] = {};
    mad_decode_field(b, IB_DRSMP_PATH_F, initial);
    const int hops = static_cast<int>(mad_get_field(b, 0, IB_DRSMP_HOPCNT_F));
    const FabricNode* node = nullptr;
    for (const FabricNode& n : net_->topo.nodes) {
      if (dr) {
        if (n.path == DrPath(initial + 1, initial + 1 + hops)) node = &n;
      } else if (n.lid == dlid) {
        node = &n;
      }
    }
    if (!node || node->type != 2) return true;
    const int attr = static_cast<int>(mad_get_field(b, 0, IB_MAD_ATTRID_F));
    const std::uint32_t mod = mad_get_field(b, 0, IB_MAD_ATTRMOD_F);
    ++asked[{node->guid, attr, mod}];
    if (silent.count(node->guid)) return true;
    if (attr == kAttrSwitchInfo) {
      answers_.push_back(
          SwitchInfoAnswer(mad, 48 * 1024, net_->top[node->guid]));
    } else if (attr == kAttrLinearForwardingTable) {
      std::array<std::uint8_t, 64> none;
      none.fill(kLftNoRoute);
      answers_.push_back(
          LftAnswer(mad, mod == 0 ? net_->lft[node->guid] : none));
    }
    return true;
  }
  void Poll(std::chrono::microseconds, std::vector<Answer>* out) override {
    for (const Mad& m : answers_) out->push_back(Answer::Of(m));
    answers_.clear();
  }

 private:
  Net* net_;
  std::vector<Mad> answers_;
};

MadOptions Fast() {
  MadOptions o;
  o.timeout = std::chrono::milliseconds(1);
  o.retries = 0;
  return o;
}

// (node GUID, out port, in port) per hop: what the ibsim test compares.
std::vector<std::tuple<std::uint64_t, int, int>> Hops(const Route& r) {
  std::vector<std::tuple<std::uint64_t, int, int>> out;
  for (const RouteHop& h : r.hops)
    out.emplace_back(h.node_guid, h.out_port, h.port);
  return out;
}

TEST(MadRoutes, TracesHostToHostThroughTheSpineAsIbtracertPrintsIt) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast());
  tracer.SetTopology(&net.topo);
  const TraceResult r = tracer.Trace(1, 2);
  ASSERT_TRUE(r.ok()) << r.error;
  using H = std::tuple<std::uint64_t, int, int>;
  EXPECT_EQ(Hops(r.route), (std::vector<H>{{kHca0, 0, 1},
                                           {kLeaf0, 1, 1},
                                           {kSpine, 3, 1},
                                           {kLeaf1, 2, 3},
                                           {kHca1, 1, 1}}));
  EXPECT_EQ(FormatIbtracert(r.route),
            "From ca {0x0000000000000100} portnum 1 lid 1-1 \"hca0\"\n"
            "[1] -> switch port {0x0000000000000200}[1] lid 10-10 \"leaf0\"\n"
            "[3] -> switch port {0x0000000000000202}[1] lid 12-12 \"spine\"\n"
            "[2] -> switch port {0x0000000000000201}[3] lid 11-11 \"leaf1\"\n"
            "[1] -> ca port {0x0000000000001101}[1] lid 2-2 \"hca1\"\n"
            "To ca {0x0000000000000101} portnum 1 lid 2-2 \"hca1\"\n");
  // One SwitchInfo and one block per switch on the path, directed route.
  EXPECT_EQ(t.total, 6);
  EXPECT_EQ((t.asked[{kSpine, kAttrLinearForwardingTable, 0}]), 1);
}

TEST(MadRoutes, EndsAtSwitchesAndAtTheSourceItself) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast());
  tracer.SetTopology(&net.topo);
  // To a switch's LID: the route ends on arriving, its own entry unread.
  TraceResult r = tracer.Trace(2, 10);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.route.hops.back().node_guid, kLeaf0);
  EXPECT_EQ(r.route.hops.back().port, 3);
  EXPECT_EQ(t.asked.count({kLeaf0, kAttrLinearForwardingTable, 0}), 0u);
  // From a switch: "From switch ... portnum 0".
  r = tracer.Trace(12, 3);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(FormatIbtracert(r.route).substr(0, 61),
            "From switch {0x0000000000000202} portnum 0 lid 12-12 \"spine\"\n");
  EXPECT_EQ(r.route.hops.size(), 3u);
  // To itself: From and To, no MAD.
  const int before = t.total;
  r = tracer.Trace(3, 3);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.route.hops.size(), 1u);
  EXPECT_EQ(t.total, before);
}

TEST(MadRoutes, CachesTablesPerGenerationAndReadsEachBlockOnce) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast());
  tracer.SetTopology(&net.topo);
  std::vector<RoutePair> all;
  for (std::uint16_t s : {1, 2, 3}) {
    for (std::uint16_t d : {1, 2, 3, 10, 11, 12}) all.push_back({s, d});
  }
  for (const TraceResult& r : tracer.TraceAll(all)) {
    EXPECT_TRUE(r.ok()) << r.error;
  }
  for (const auto& [key, n] : t.asked) EXPECT_EQ(n, 1);
  EXPECT_EQ(tracer.stats().lft_block_reads, 3u);
  EXPECT_EQ(tracer.stats().switch_info_reads, 3u);
  // Cached: the same routes again cost nothing, also with an equal
  // topology from a re-discovery.
  const int before = t.total;
  Topology again = net.topo;
  tracer.SetTopology(&again);
  EXPECT_TRUE(tracer.Trace(1, 2).ok());
  EXPECT_EQ(t.total, before);
  // A change (hca2's cable goes down) is a new generation: read again.
  const std::uint64_t gen = tracer.generation();
  again.nodes[again.by_guid.at(kLeaf0)].ports[2].state = 1;
  tracer.SetTopology(&again);
  EXPECT_NE(tracer.generation(), gen);
  EXPECT_EQ(tracer.cached_blocks(), 0u);
  EXPECT_TRUE(tracer.Trace(1, 2).ok());
  EXPECT_GT(t.total, before);
  // Invalidate (a heavy sweep) drops them too.
  const int after = t.total;
  tracer.Invalidate();
  EXPECT_TRUE(tracer.Trace(1, 2).ok());
  EXPECT_GT(t.total, after);
}

TEST(MadRoutes, LidRoutedReadsGoToTheSwitchLids) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast(), LftAccess::kLidRouted);
  tracer.SetTopology(&net.topo);
  const TraceResult r = tracer.Trace(3, 2);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.route.hops.size(), 5u);
  EXPECT_EQ(tracer.stats().lft_block_reads, 3u);
}

TEST(MadRoutes, BadTablesLoopsAndSilenceAreErrorsNotCrashes) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast());
  tracer.SetTopology(&net.topo);
  // Unknown LIDs, no topology.
  EXPECT_NE(tracer.Trace(1, 99).error.find("destination LID 99"),
            std::string::npos);
  EXPECT_NE(tracer.Trace(99, 1).error.find("source LID 99"), std::string::npos);
  // An unrouted entry (255).
  net.lft[kSpine][2] = kLftNoRoute;
  TraceResult r = tracer.Trace(1, 2);
  EXPECT_NE(r.error.find("lid entry 2 is 255"), std::string::npos) << r.error;
  EXPECT_EQ(r.route.hops.size(), 3u);  // got as far as the spine
  // A loop between leaf1 and the spine.
  tracer.Invalidate();
  net.lft[kSpine][2] = 2;
  net.lft[kLeaf1][2] = 3;
  r = tracer.Trace(1, 2);
  EXPECT_NE(r.error.find("no route found after"), std::string::npos) << r.error;
  // Port 0 for a LID that is not the switch's own, and an entry past the
  // switch's ports.
  tracer.Invalidate();
  net.lft[kLeaf1][2] = 0;
  EXPECT_NE(tracer.Trace(1, 2).error.find("is 0"), std::string::npos);
  tracer.Invalidate();
  net.lft[kLeaf1][2] = 9;
  EXPECT_NE(tracer.Trace(1, 2).error.find("is 9"), std::string::npos);
  net.lft[kLeaf1][2] = 1;
  // A route into a CA that is not the destination.
  tracer.Invalidate();
  net.lft[kLeaf0][2] = 2;  // LID 2 sent to hca2
  r = tracer.Trace(1, 2);
  EXPECT_NE(r.error.find("reached CA"), std::string::npos) << r.error;
  net.lft[kLeaf0][2] = 3;
  // An out port that is down.
  tracer.Invalidate();
  Topology down = net.topo;
  down.nodes[down.by_guid.at(kSpine)].ports[2].state = 1;
  tracer.SetTopology(&down);
  EXPECT_NE(tracer.Trace(1, 2).error.find("Bad out port state"),
            std::string::npos);
  tracer.SetTopology(&net.topo);
  // A silent switch: the routes through it fail and name it; it is not
  // cached as failed, so it is asked again once it answers.
  tracer.Invalidate();
  t.silent.insert(kSpine);
  r = tracer.Trace(1, 2);
  EXPECT_NE(r.error.find("\"spine\""), std::string::npos) << r.error;
  EXPECT_GT(tracer.stats().failed_reads, 0u);
  EXPECT_TRUE(tracer.Trace(1, 3).ok());  // does not cross the spine
  t.silent.clear();
  EXPECT_TRUE(tracer.Trace(1, 2).ok());
  // Without a topology.
  tracer.SetTopology(nullptr);
  EXPECT_EQ(tracer.Trace(1, 2).error, "no topology");
}

TEST(MadRoutes, LidsOutOfAPortAreExactlyItsLftEntries) {
  Net net = MakeNet();
  LftTransport t(&net);
  RouteTracer tracer(t, Fast());
  tracer.SetTopology(&net.topo);
  std::string error;
  // leaf0's uplink: every LID not on leaf0 (2, 11, 12); 255s and the
  // switch's own port-0 entry are not listed.
  EXPECT_EQ(tracer.LidsOutOf(kLeaf0, 3, &error),
            (std::vector<std::uint16_t>{2, 11, 12}))
      << error;
  EXPECT_EQ(tracer.LidsOutOf(kLeaf0, 2, &error),
            (std::vector<std::uint16_t>{3}));
  EXPECT_EQ(tracer.LidsOutOf(kSpine, 1, &error),
            (std::vector<std::uint16_t>{1, 3, 10}));
  // Blocks past LinearFDBTop are not read; each block once, then cached.
  net.top[kLeaf1] = 100;
  EXPECT_EQ(tracer.LidsOutOf(kLeaf1, 1, &error),
            (std::vector<std::uint16_t>{2}));
  EXPECT_EQ((t.asked[{kLeaf1, kAttrLinearForwardingTable, 1}]), 1);
  EXPECT_EQ(t.asked.count({kLeaf1, kAttrLinearForwardingTable, 2}), 0u);
  const int before = t.total;
  EXPECT_EQ(tracer.LidsOutOf(kLeaf1, 3, &error),
            (std::vector<std::uint16_t>{1, 3, 10, 12}));
  EXPECT_EQ(t.total, before);
  // Not a switch, no such port, a switch that does not answer: an error,
  // never a partial list.
  EXPECT_TRUE(tracer.LidsOutOf(kHca0, 1, &error).empty());
  EXPECT_NE(error.find("no switch"), std::string::npos) << error;
  EXPECT_TRUE(tracer.LidsOutOf(kSpine, 3, &error).empty());
  EXPECT_NE(error.find("ports 1..2"), std::string::npos) << error;
  tracer.Invalidate();
  t.silent.insert(kSpine);
  EXPECT_TRUE(tracer.LidsOutOf(kSpine, 1, &error).empty());
  EXPECT_NE(error.find("cannot read the forwarding table of \"spine\""),
            std::string::npos)
      << error;
}

TEST(MadRoutes, GenerationIgnoresDiscoveryOrder) {
  Net net = MakeNet();
  Topology reversed;
  for (auto it = net.topo.nodes.rbegin(); it != net.topo.nodes.rend(); ++it) {
    reversed.by_guid[it->guid] = reversed.nodes.size();
    reversed.nodes.push_back(*it);
  }
  EXPECT_EQ(TopologyGeneration(reversed), TopologyGeneration(net.topo));
  reversed.nodes[0].ports[1].remote_port = 7;
  EXPECT_NE(TopologyGeneration(reversed), TopologyGeneration(net.topo));
}

}  // namespace
}  // namespace fabric::mad
