// The RDMA RC bulk transport of fabricmon-bench (benchtool/rdma_rc.h) over
// the fake verbs seam: the endpoint codec on good and malformed bytes, two
// ranks on two threads connecting and exchanging data through RDMA writes
// with immediate (credits first, chunked writes, several steps), a length
// mismatch, a peer that never connects or dies mid-run (the error names
// it), Abort, bad ops, and that Close releases every verbs object.
#include "benchtool/rdma_rc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "probe/rdma_ports.h"
#include "tests/support/fake_verbs.h"

namespace fabric::bench {
namespace {

using rdma::testing::FakeVerbs;

RcEndpoint SampleEndpoint() {
  RcEndpoint e;
  e.gid = rdma::Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  e.lid = 0;
  e.mtu_bytes = 1024;
  e.roce = true;
  e.region_addr = 0x7f0000001000;
  e.region_bytes = 1 << 20;
  e.region_rkey = 0x1234;
  e.credit_addr = 0x7f0000900000;
  e.credit_rkey = 0x5678;
  e.qps = {{0, 0}, {0x101, 0xabcdef}, {0x102, 7}};
  return e;
}

TEST(RcEndpointCodec, RoundTrip) {
  const RcEndpoint e = SampleEndpoint();
  Endpoint bytes = EncodeRcEndpoint(e);
  EXPECT_EQ(bytes.size(), 72u + 8 * 3);
  EXPECT_LE(bytes.size(), kMaxEndpointBytes);
  std::string error;
  auto d = DecodeRcEndpoint(bytes, &error);
  ASSERT_TRUE(d) << error;
  EXPECT_EQ(d->gid, e.gid);
  EXPECT_EQ(d->mtu_bytes, 1024);
  EXPECT_TRUE(d->roce);
  EXPECT_EQ(d->region_addr, e.region_addr);
  EXPECT_EQ(d->region_bytes, e.region_bytes);
  EXPECT_EQ(d->region_rkey, e.region_rkey);
  EXPECT_EQ(d->credit_addr, e.credit_addr);
  EXPECT_EQ(d->credit_rkey, e.credit_rkey);
  ASSERT_EQ(d->qps.size(), 3u);
  EXPECT_EQ(d->qps[1].qpn, 0x101u);
  EXPECT_EQ(d->qps[1].psn, 0xabcdefu);
  // Little-endian on the wire whatever the host: the region key's low byte
  // comes first.
  EXPECT_EQ(bytes[44], 0x34);
}

TEST(RcEndpointCodec, RefusesMalformedBytes) {
  Endpoint good = EncodeRcEndpoint(SampleEndpoint());
  std::string error;
  EXPECT_FALSE(DecodeRcEndpoint(std::span(good).first(40), &error));
  EXPECT_NE(error.find("shorter"), std::string::npos) << error;
  Endpoint bad = good;
  bad[3] = '2';
  EXPECT_FALSE(DecodeRcEndpoint(bad, &error));
  EXPECT_NE(error.find("magic"), std::string::npos) << error;
  bad = good;
  bad.push_back(0);  // one byte more than its rank count says
  EXPECT_FALSE(DecodeRcEndpoint(bad, &error));
  bad = good;
  bad[60] = 200;  // claims 200 ranks
  EXPECT_FALSE(DecodeRcEndpoint(bad, &error));
  bad = good;
  bad[72 + 8 + 3] = 0x01;  // QPN with bit 24 set
  EXPECT_FALSE(DecodeRcEndpoint(bad, &error));
  EXPECT_NE(error.find("24 bits"), std::string::npos) << error;
  bad = good;
  bad[8] = 0;
  bad[9] = 0;  // MTU 0
  EXPECT_FALSE(DecodeRcEndpoint(bad, &error));
  for (std::size_t n = 0; n < good.size(); ++n) {
    DecodeRcEndpoint(std::span(good).first(n), &error);  // never reads past
  }
}

// Two ranks on one fake fabric; each rank's waits carry the RC writes on
// the wire (the fake's role as HCAs and switch).
class RcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    verbs.devices["mlx5_0"] = FakeVerbs::RoceDevice({10, 0, 0, 1}, true);
    verbs.devices["mlx5_1"] = FakeVerbs::RoceDevice({10, 0, 0, 2}, true);
    std::string error;
    ports = rdma::ListRdmaPorts(verbs, &error);
    ASSERT_EQ(ports.size(), 2u) << error;
  }
  RcOptions Options() {
    RcOptions o;
    o.recv_depth = 8;
    o.send_depth = 4;
    o.wait = [this](int, std::chrono::milliseconds) { Pump(); };
    return o;
  }
  void Pump() {
    verbs.CarryAllWrites();
    std::this_thread::yield();
  }
  SessionInfo Session(int rank) {
    SessionInfo s;
    s.session_id = 42;
    s.rank = rank;
    s.peers = {"hostA:10916", "hostB:10916"};
    s.io_timeout = std::chrono::milliseconds(20000);
    return s;
  }
  std::unique_ptr<RdmaRcTransport> Make(int rank, RcOptions options) {
    return std::make_unique<RdmaRcTransport>(verbs, ports[rank], options);
  }
  // Prepares both ranks and returns their endpoints.
  std::vector<Endpoint> PrepareBoth(RdmaRcTransport& a, RdmaRcTransport& b,
                                    std::size_t region) {
    TransportError error;
    auto ea = a.Prepare(Session(0), region, &error);
    EXPECT_TRUE(ea) << error.what;
    auto eb = b.Prepare(Session(1), region, &error);
    EXPECT_TRUE(eb) << error.what;
    return {ea.value_or(Endpoint{}), eb.value_or(Endpoint{})};
  }
  static std::string What(const TransportStatus& s) {
    return s ? s->what : "ok";
  }

  FakeVerbs verbs;
  std::vector<rdma::RdmaPort> ports;
};

TEST_F(RcTest, TwoRanksConnectAndExchangeData) {
  RcOptions options = Options();
  options.max_write = 256;  // 1000 bytes go as four writes
  auto a = Make(0, options);
  auto b = Make(1, options);
  auto endpoints = PrepareBoth(*a, *b, 8192);
  EXPECT_EQ(a->Name(), "rdma");
  ASSERT_EQ(a->Region().size(), 8192u);
  const int one[] = {1}, zero[] = {0};

  auto rank1 = std::async(std::launch::async, [&] {
    if (auto e = b->Connect(endpoints, zero, zero)) return e;
    for (int step = 0; step < 3; ++step) {
      auto region = b->Region();
      for (int i = 0; i < 500; ++i) region[i] = std::byte(step * 7 + i % 13);
      Op send{0, 0, 500};
      Op recv{0, 4096, 1000};
      if (auto e = b->Exchange({&send, 1}, {&recv, 1})) return e;
      for (int i = 0; i < 1000; ++i) {
        if (region[4096 + i] != std::byte((step + i) % 251)) {
          return TransportStatus(TransportError{0, "", "rank 1 got bad data"});
        }
      }
    }
    return TransportStatus();
  });
  TransportStatus status = a->Connect(endpoints, one, one);
  for (int step = 0; !status && step < 3; ++step) {
    auto region = a->Region();
    for (int i = 0; i < 1000; ++i) region[i] = std::byte((step + i) % 251);
    Op send{1, 0, 1000};
    Op recv{1, 2000, 500};
    status = a->Exchange({&send, 1}, {&recv, 1});
    for (int i = 0; !status && i < 500; ++i) {
      ASSERT_EQ(region[2000 + i], std::byte(step * 7 + i % 13))
          << "step " << step << " byte " << i;
    }
  }
  EXPECT_EQ(What(status), "ok");
  EXPECT_EQ(What(rank1.get()), "ok");
  EXPECT_EQ(verbs.remote_access_errors, 0);

  // Each QP went RESET -> INIT (remote write on) -> RTR -> RTS, towards
  // the other rank's QP, with a GRH (RoCE).
  for (auto& [h, qp] : verbs.qps) {
    ASSERT_EQ(qp.transitions.size(), 3u);
    EXPECT_TRUE(qp.transitions[0].remote_write);
    EXPECT_TRUE(qp.transitions[1].path.global);
    EXPECT_EQ(qp.transitions[1].path_mtu_bytes, 1024);
    EXPECT_NE(verbs.QpByNumber(qp.transitions[1].dest_qpn), nullptr);
    EXPECT_EQ(qp.transitions[2].to, rdma::QpState::kRts);
  }
  a->Close();
  b->Close();
  a->Close();  // idempotent
  EXPECT_TRUE(verbs.qps.empty());
  EXPECT_TRUE(verbs.mrs.empty());
  EXPECT_TRUE(verbs.cqs.empty());
  EXPECT_TRUE(verbs.pds.empty());
  EXPECT_TRUE(verbs.contexts.empty());
}

TEST_F(RcTest, ZeroLengthOpsComplete) {
  auto a = Make(0, Options());
  auto b = Make(1, Options());
  auto endpoints = PrepareBoth(*a, *b, 64);
  const int one[] = {1}, zero[] = {0};
  auto rank1 = std::async(std::launch::async, [&] {
    if (auto e = b->Connect(endpoints, {}, zero)) return e;
    Op recv{0, 64, 0};  // empty, at the very end of the region
    return b->Exchange({}, {&recv, 1});
  });
  TransportStatus status = a->Connect(endpoints, one, {});
  Op send{1, 0, 0};
  if (!status) status = a->Exchange({&send, 1}, {});
  EXPECT_EQ(What(status), "ok");
  EXPECT_EQ(What(rank1.get()), "ok");
}

TEST_F(RcTest, LengthMismatchNamesThePeerAndAbortStopsTheOther) {
  auto a = Make(0, Options());
  auto b = Make(1, Options());
  auto endpoints = PrepareBoth(*a, *b, 4096);
  const int one[] = {1}, zero[] = {0};
  auto rank1 = std::async(std::launch::async, [&] {
    if (auto e = b->Connect(endpoints, zero, zero)) return e;
    Op recv{0, 0, 200};
    return b->Exchange({}, {&recv, 1});
  });
  TransportStatus status = a->Connect(endpoints, one, one);
  ASSERT_EQ(What(status), "ok");
  Op send{1, 0, 100};
  status = a->Exchange({&send, 1}, {});
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rank, 1);
  EXPECT_EQ(status->peer, "hostB:10916");
  EXPECT_NE(status->what.find("expects 200"), std::string::npos)
      << status->what;
  b->Abort();  // the coordinator tells the other ranks to stop
  TransportStatus other = rank1.get();
  ASSERT_TRUE(other);
  EXPECT_NE(other->what.find("aborted"), std::string::npos) << other->what;
  // A failed transport accepts only Close().
  EXPECT_TRUE(a->Exchange({&send, 1}, {}));
}

TEST_F(RcTest, PeerThatNeverConnectsIsNamed) {
  auto a = Make(0, Options());
  auto b = Make(1, Options());
  auto endpoints = PrepareBoth(*a, *b, 4096);
  SessionInfo s = Session(0);
  s.io_timeout = std::chrono::milliseconds(200);
  TransportError error;
  auto ea = a->Prepare(s, 4096, &error);  // again, with a short timeout
  ASSERT_TRUE(ea);
  endpoints[0] = *ea;
  const int one[] = {1};
  TransportStatus status = a->Connect(endpoints, one, one);  // b never does
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rank, 1);
  EXPECT_EQ(status->peer, "hostB:10916");
  EXPECT_NE(status->what.find("no progress"), std::string::npos)
      << status->what;
}

TEST_F(RcTest, PeerDyingMidRunIsNamed) {
  // Once the ranks are connected, every look at the clock moves it one
  // second on, so the 20 s io_timeout passes after a few idle waits instead
  // of 20 real seconds.
  std::atomic<bool> fast{false};
  RcOptions options = Options();
  options.now = [&fast, n = std::make_shared<int>(0)] {
    auto real = std::chrono::steady_clock::now();
    return fast ? real + std::chrono::seconds(++*n) : real;
  };
  auto a = Make(0, options);
  auto b = Make(1, Options());
  auto endpoints = PrepareBoth(*a, *b, 4096);
  const int one[] = {1}, zero[] = {0};
  auto rank1 = std::async(std::launch::async,
                          [&] { return b->Connect(endpoints, zero, zero); });
  ASSERT_EQ(What(a->Connect(endpoints, one, one)), "ok");
  ASSERT_EQ(What(rank1.get()), "ok");
  // Rank 1's host goes away: the credit it should grant never comes and our
  // own credit to it is never acknowledged.
  verbs.devices["mlx5_1"].gone = true;
  fast = true;
  Op send{1, 0, 100};
  Op recv{1, 100, 100};
  TransportStatus status = a->Exchange({&send, 1}, {&recv, 1});
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rank, 1);
  EXPECT_EQ(status->peer, "hostB:10916");
  EXPECT_NE(status->what.find("no progress"), std::string::npos)
      << status->what;
}

TEST_F(RcTest, BadOpsAreErrorsNotUndefinedBehaviour) {
  auto a = Make(0, Options());
  Op op{1, 0, 10};
  EXPECT_TRUE(a->Exchange({&op, 1}, {}));  // before Prepare
  TransportError error;
  ASSERT_TRUE(a->Prepare(Session(0), 1000, &error));
  EXPECT_NE(What(a->Exchange({&op, 1}, {})).find("not a connected peer"),
            std::string::npos);
  Op self{0, 0, 10};
  EXPECT_TRUE(a->Exchange({&self, 1}, {}));
  Op beyond{1, 995, 10};
  EXPECT_TRUE(a->Exchange({}, {&beyond, 1}));
  Op wrap{1, ~std::size_t{0}, 2};
  EXPECT_TRUE(a->Exchange({}, {&wrap, 1}));
  std::vector<Endpoint> short_list(1);
  const int one[] = {1};
  EXPECT_TRUE(a->Connect(short_list, one, one));
  std::vector<Endpoint> garbage(2, Endpoint(10, 0));
  TransportStatus status = a->Connect(garbage, one, one);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rank, 1);
  EXPECT_NE(status->what.find("bad endpoint"), std::string::npos);
  const int self_rank[] = {0};
  EXPECT_TRUE(a->Connect(garbage, self_rank, {}));
  // Nothing was posted for any of it.
  for (auto& [h, qp] : verbs.qps) EXPECT_TRUE(qp.sends.empty());
}

TEST_F(RcTest, PrepareOnAVanishedDeviceNamesIt) {
  verbs.devices["mlx5_0"].gone = true;
  auto a = Make(0, Options());
  TransportError error;
  EXPECT_FALSE(a->Prepare(Session(0), 4096, &error));
  EXPECT_NE(error.what.find("mlx5_0 port 1: open"), std::string::npos)
      << error.what;
  EXPECT_TRUE(verbs.contexts.empty());
}

TEST_F(RcTest, PortForTheBindAddress) {
  // ports[0] is 10.0.0.1 (mlx5_0), ports[1] is 10.0.0.2 (mlx5_1).
  EXPECT_EQ(rdma::PickPortForAddress(ports, "10.0.0.2:10916")->device,
            "mlx5_1");
  EXPECT_EQ(rdma::PickPortForAddress(ports, "10.0.0.2")->device, "mlx5_1");
  EXPECT_EQ(rdma::PickPortForAddress(ports, "10.0.0.9:1")->device, "mlx5_0");
  EXPECT_EQ(rdma::PickPortForAddress(ports, ":10916")->device, "mlx5_0");
  EXPECT_EQ(rdma::PickPortForAddress(ports, "[::1]:10916")->device, "mlx5_0");
  EXPECT_FALSE(rdma::PickPortForAddress({}, "10.0.0.2"));
}

}  // namespace
}  // namespace fabric::bench
