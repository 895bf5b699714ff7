// The probe Transport over verbs UD (probe/rdma_transport.h) on the fake
// seam: no RDMA means Start fails with the reason (so `auto` keeps to UDP),
// the address exchange makes a peer reachable, a probe and its answer carry
// hardware and software stamps, the responder answers whoever asked, and
// labels name the sending port. Plus the real factory on this machine.
#include "probe/rdma_transport.h"

#include <gtest/gtest.h>

#include "tests/support/fake_verbs.h"

namespace fabric::probe {
namespace {

using rdma::testing::FakeVerbs;
using Bytes = std::vector<std::uint8_t>;

Endpoint Ep(const char* ip, unsigned short port) {
  return Endpoint(boost::asio::ip::make_address(ip), port);
}

Bytes Ipv4Grh(std::array<std::uint8_t, 4> src) {
  Bytes grh(40, 0);
  grh[20] = 0x45;
  std::copy(src.begin(), src.end(), grh.begin() + 32);
  return grh;
}

struct Seen {
  std::vector<std::pair<std::uint64_t, Timestamp>> sent;
  std::vector<std::pair<Bytes, Source>> received;
  std::vector<Timestamp> rx;
};

Transport::Handlers Record(Seen* seen, RdmaTransport** self = nullptr,
                           Bytes answer = {}) {
  Transport::Handlers h;
  h.on_sent = [seen](std::uint64_t id, Timestamp t) {
    seen->sent.emplace_back(id, t);
  };
  h.on_receive = [seen, self, answer](const Received& r) {
    seen->received.emplace_back(Bytes(r.bytes.begin(), r.bytes.end()), r.from);
    seen->rx.push_back(r.rx);
    if (self != nullptr && *self != nullptr) {
      EXPECT_TRUE((*self)->Reply(r.from, answer));
    }
  };
  return h;
}

class RdmaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = std::make_unique<FakeVerbs>();
    fake->devices["mlx5_0"] = FakeVerbs::RoceDevice({10, 0, 0, 1}, true);
    fake->devices["rxe0"] = FakeVerbs::RoceDevice({10, 0, 0, 2}, false);
    verbs = fake.get();
    // Both transports share one fake fabric; each opens every device but
    // sends from the one its listen address names.
    auto shared = std::shared_ptr<FakeVerbs>(std::move(fake));
    holder = shared;
    a = std::make_unique<RdmaTransport>(
        io, Borrow(shared),
        RdmaTransport::SendingPort{"10.0.0.1:10916", "", 1});
    b = std::make_unique<RdmaTransport>(
        io, Borrow(shared),
        RdmaTransport::SendingPort{"10.0.0.2:10916", "", 1});
  }
  // A VerbsOps that forwards to the shared fake (each transport owns one).
  static std::unique_ptr<rdma::VerbsOps> Borrow(
      std::shared_ptr<FakeVerbs> fake);
  rdma::Handle SenderQp(const RdmaTransport& t) {
    return verbs->QpHandle(t.LocalAddress()->qpn);
  }

  boost::asio::io_context io;
  FakeVerbs* verbs = nullptr;
  std::shared_ptr<FakeVerbs> holder;
  std::unique_ptr<RdmaTransport> a, b;
};

// Forwards every call; lets two transports own "their" VerbsOps while both
// use one FakeVerbs.
class Forward : public rdma::VerbsOps {
 public:
  explicit Forward(std::shared_ptr<FakeVerbs> f) : f_(std::move(f)) {}
  std::vector<std::string> DeviceNames(std::error_code* e) override {
    return f_->DeviceNames(e);
  }
  rdma::Handle Open(const std::string& n, std::error_code* e) override {
    return f_->Open(n, e);
  }
  void Close(rdma::Handle c) override { f_->Close(c); }
  std::error_code QueryDevice(rdma::Handle c, rdma::DeviceAttr* a) override {
    return f_->QueryDevice(c, a);
  }
  std::error_code QueryPort(rdma::Handle c, int p, rdma::PortAttr* a) override {
    return f_->QueryPort(c, p, a);
  }
  std::error_code QueryGid(rdma::Handle c, int p, int i,
                           rdma::GidEntry* g) override {
    return f_->QueryGid(c, p, i, g);
  }
  std::error_code ReadHcaClock(rdma::Handle c, std::uint64_t* x) override {
    return f_->ReadHcaClock(c, x);
  }
  rdma::Handle AllocPd(rdma::Handle c, std::error_code* e) override {
    return f_->AllocPd(c, e);
  }
  void DeallocPd(rdma::Handle p) override { f_->DeallocPd(p); }
  rdma::MrKeys RegMr(rdma::Handle p, void* a, std::size_t l, bool w,
                     std::error_code* e) override {
    return f_->RegMr(p, a, l, w, e);
  }
  void DeregMr(rdma::Handle m) override { f_->DeregMr(m); }
  rdma::Handle CreateChannel(rdma::Handle c, int* fd,
                             std::error_code* e) override {
    return f_->CreateChannel(c, fd, e);
  }
  void DestroyChannel(rdma::Handle c) override { f_->DestroyChannel(c); }
  rdma::Handle CreateCq(rdma::Handle c, int d, bool t, rdma::Handle ch,
                        std::error_code* e) override {
    return f_->CreateCq(c, d, t, ch, e);
  }
  void DestroyCq(rdma::Handle c) override { f_->DestroyCq(c); }
  std::error_code ArmCq(rdma::Handle c) override { return f_->ArmCq(c); }
  rdma::Handle TakeCqEvent(rdma::Handle c) override {
    return f_->TakeCqEvent(c);
  }
  int Poll(rdma::Handle c, int m, std::vector<rdma::Completion>* o) override {
    return f_->Poll(c, m, o);
  }
  rdma::Handle CreateQp(rdma::Handle p, rdma::QpType t, rdma::Handle s,
                        rdma::Handle r, const rdma::QpCaps& c, std::uint32_t* q,
                        std::error_code* e) override {
    return f_->CreateQp(p, t, s, r, c, q, e);
  }
  void DestroyQp(rdma::Handle q) override { f_->DestroyQp(q); }
  std::error_code ModifyQp(rdma::Handle q, rdma::QpType t,
                           const rdma::QpTransition& x) override {
    return f_->ModifyQp(q, t, x);
  }
  rdma::Handle CreateAh(rdma::Handle p, const rdma::AddressVector& a,
                        std::error_code* e) override {
    return f_->CreateAh(p, a, e);
  }
  rdma::Handle CreateAhFromCompletion(rdma::Handle c, rdma::Handle p, int port,
                                      const rdma::Completion& w,
                                      std::span<const std::uint8_t> g,
                                      std::error_code* e) override {
    return f_->CreateAhFromCompletion(c, p, port, w, g, e);
  }
  void DestroyAh(rdma::Handle a) override { f_->DestroyAh(a); }
  std::error_code PostRecv(rdma::Handle q, std::uint64_t w, std::uint64_t a,
                           std::uint32_t l, std::uint32_t k) override {
    return f_->PostRecv(q, w, a, l, k);
  }
  std::error_code PostUdSend(rdma::Handle q, const rdma::UdSend& s) override {
    return f_->PostUdSend(q, s);
  }
  std::error_code PostWriteImm(rdma::Handle q,
                               const rdma::RcWriteImm& w) override {
    return f_->PostWriteImm(q, w);
  }

 private:
  std::shared_ptr<FakeVerbs> f_;
};

std::unique_ptr<rdma::VerbsOps> RdmaTransportTest::Borrow(
    std::shared_ptr<FakeVerbs> fake) {
  return std::make_unique<Forward>(std::move(fake));
}

TEST_F(RdmaTransportTest, NoRdmaDevicesMeansStartFailsWithTheReason) {
  verbs->devices.clear();
  Seen seen;
  std::string error;
  EXPECT_FALSE(a->Start(Record(&seen), &error));
  EXPECT_NE(error.find("no active RDMA port"), std::string::npos) << error;
  EXPECT_FALSE(a->Healthy());
  EXPECT_FALSE(a->LocalAddress());
  EXPECT_FALSE(a->Send(Ep("10.0.0.2", 10916), Bytes(96, 1), 1));
}

TEST_F(RdmaTransportTest, ProbeAndAnswerThroughTheAddressExchange) {
  Seen at_a, at_b;
  RdmaTransport* responder = b.get();
  std::string error;
  ASSERT_TRUE(a->Start(Record(&at_a), &error)) << error;
  ASSERT_TRUE(b->Start(Record(&at_b, &responder, Bytes(96, 0xbb)), &error))
      << error;
  EXPECT_TRUE(a->Healthy());
  EXPECT_EQ(a->Name(), "rdma");

  // Each sends from the port its listen address names.
  auto la = a->LocalAddress(), lb = b->LocalAddress();
  ASSERT_TRUE(la && lb);
  EXPECT_EQ(la->gid[15], 1);
  EXPECT_EQ(lb->gid[15], 2);
  EXPECT_EQ(la->port, 1);
  EXPECT_EQ(a->PeerLabels(), (std::vector<std::pair<std::string, std::string>>{
                                 {"device", "mlx5_0"}, {"port", "1"}}));
  EXPECT_EQ(a->ClockName(), "hardware");
  EXPECT_EQ(b->ClockName(), "software");  // soft-RoCE

  const Endpoint b_ep = Ep("10.0.0.2", 10916);
  EXPECT_FALSE(a->CanReach(b_ep));  // before the address exchange
  EXPECT_FALSE(a->Send(b_ep, Bytes(96, 0xaa), 1));
  a->SetPeerAddress(b_ep, *lb);
  ASSERT_TRUE(a->CanReach(b_ep));
  auto t1 = a->Send(b_ep, Bytes(96, 0xaa), 7);
  ASSERT_TRUE(t1);
  EXPECT_GT(t1->software_ns, 0);

  const rdma::Handle qa = SenderQp(*a), qb = SenderQp(*b);
  verbs->CompleteSends(qa, 123456);
  a->PollNow();
  ASSERT_EQ(at_a.sent.size(), 1u);
  EXPECT_EQ(at_a.sent[0].first, 7u);
  EXPECT_NE(at_a.sent[0].second.hardware_ns, 0);  // T2 from the NIC

  ASSERT_TRUE(verbs->DeliverUd(qb, verbs->qps.at(qa).sends[0].bytes, la->qpn, 0,
                               Ipv4Grh({10, 0, 0, 1}), std::nullopt));
  b->PollNow();  // the handler answers
  ASSERT_EQ(at_b.received.size(), 1u);
  EXPECT_EQ(at_b.received[0].first, Bytes(96, 0xaa));
  const Source& from = at_b.received[0].second;
  EXPECT_EQ(from.key, "0000:0000:0000:0000:0000:ffff:0a00:0001");
  EXPECT_EQ(from.rdma.qpn, la->qpn);
  EXPECT_EQ(at_b.rx[0].hardware_ns, 0);  // soft-RoCE: software only
  EXPECT_NE(at_b.rx[0].software_ns, 0);
  ASSERT_EQ(verbs->qps.at(qb).sends.size(), 1u);
  EXPECT_EQ(verbs->qps.at(qb).sends[0].ud_send.remote_qpn, la->qpn);

  verbs->CompleteSends(qb, std::nullopt);
  b->PollNow();
  EXPECT_TRUE(at_b.sent.empty());  // a reply's completion is not reported
  ASSERT_TRUE(verbs->DeliverUd(qa, verbs->qps.at(qb).sends[0].bytes, lb->qpn, 0,
                               Ipv4Grh({10, 0, 0, 2}), 124000));
  a->PollNow();
  ASSERT_EQ(at_a.received.size(), 1u);
  EXPECT_EQ(at_a.received[0].first, Bytes(96, 0xbb));
  EXPECT_EQ(at_a.received[0].second.udp, b_ep);  // the peer, by its address
  EXPECT_EQ(at_a.rx[0].hardware_ns - at_a.sent[0].second.hardware_ns,
            124000 - 123456);  // T5 - T2 on a 1 GHz clock

  // A reply to a source never heard from is refused, not sent anywhere.
  Source stranger = from;
  stranger.rdma.qpn = 0x777;
  EXPECT_FALSE(b->Reply(stranger, Bytes(96, 0)));
  a->Stop();
  b->Stop();
  EXPECT_TRUE(verbs->qps.empty());
  EXPECT_TRUE(verbs->contexts.empty());
}

TEST_F(RdmaTransportTest, VanishedDeviceMakesItUnhealthy) {
  Seen seen;
  std::string error;
  ASSERT_TRUE(a->Start(Record(&seen), &error)) << error;
  a->SetPeerAddress(Ep("10.0.0.2", 10916), *a->LocalAddress());
  verbs->devices["mlx5_0"].gone = true;
  EXPECT_FALSE(a->Send(Ep("10.0.0.2", 10916), Bytes(96, 1), 1));
  a->PollNow();
  EXPECT_FALSE(a->Healthy());
  EXPECT_FALSE(a->CanReach(Ep("10.0.0.2", 10916)));
  EXPECT_NE(a->LastError().find("mlx5_0"), std::string::npos) << a->LastError();
}

// A `device` rail sends from its own port whatever its address says (on
// IB an IPoIB address is no GID: the address would pick the first port),
// and a port that is not active is an error naming the active ones.
TEST_F(RdmaTransportTest, DeviceRailSendsFromItsOwnPort) {
  RdmaTransport pinned(io, Borrow(holder),
                       RdmaTransport::SendingPort{"10.0.0.1:10916", "rxe0", 1});
  Seen seen;
  std::string error;
  ASSERT_TRUE(pinned.Start(Record(&seen), &error)) << error;
  const auto labels = pinned.PeerLabels();
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].second, "rxe0");
  EXPECT_EQ(labels[1].second, "1");
  // The address alone picks mlx5_0 (its GID is 10.0.0.1).
  ASSERT_TRUE(a->Start(Record(&seen), &error)) << error;
  EXPECT_EQ(a->PeerLabels()[0].second, "mlx5_0");
  EXPECT_NE(pinned.LocalAddress()->gid, a->LocalAddress()->gid);

  RdmaTransport missing(
      io, Borrow(holder),
      RdmaTransport::SendingPort{"10.0.0.1:10916", "mlx5_9", 1});
  EXPECT_FALSE(missing.Start(Record(&seen), &error));
  EXPECT_NE(error.find("mlx5_9 port 1 is not an active RDMA port"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("mlx5_0 port 1"), std::string::npos) << error;
}

TEST(RdmaTransportReal, FactoryOnThisHost) {
  // The real libibverbs on the build machine: it has no RDMA device, so
  // there is no transport and the reason says so. (On an RDMA host this
  // test is skipped: the factory is exercised by
  // scripts/validate-rdma-probes.sh.)
  boost::asio::io_context io;
  std::string error;
  auto t = MakeRdmaTransport(io, {"127.0.0.1:10916", "", 1}, &error);
  if (t) GTEST_SKIP() << "this host has RDMA ports";
  EXPECT_TRUE(error.find("no active RDMA port") != std::string::npos ||
              error.find("built without rdma-core") != std::string::npos)
      << error;
}

}  // namespace
}  // namespace fabric::probe
