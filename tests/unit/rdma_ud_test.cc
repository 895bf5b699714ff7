// The UD probe transport (probe/rdma_ud.h) and the local port list
// (probe/rdma_ports.h) over the fake verbs seam: which ports qualify and
// with which GID, the QP's state transitions, posting and completion
// handling with and without HCA timestamps, a probe and its answer between
// two ports, unknown senders and peers, a device that vanishes.
#include "probe/rdma_ud.h"

#include <gtest/gtest.h>

#include "probe/rdma_ports.h"
#include "tests/support/fake_verbs.h"

namespace fabric::rdma {
namespace {

using testing::FakeDevice;
using testing::FakeVerbs;
using Bytes = std::vector<std::uint8_t>;

// The 40-byte area in front of a RoCEv2/IPv4 receive: 20 bytes the HCA
// leaves alone, then the IPv4 header with the sender's address.
Bytes Ipv4Grh(std::array<std::uint8_t, 4> src) {
  Bytes grh(40, 0);
  grh[20] = 0x45;  // version 4, IHL 5
  std::copy(src.begin(), src.end(), grh.begin() + 20 + 12);
  return grh;
}

Gid Mapped(std::array<std::uint8_t, 4> ip) {
  return Gid{0, 0, 0,    0,    0,     0,     0,     0,
             0, 0, 0xff, 0xff, ip[0], ip[1], ip[2], ip[3]};
}

struct Clock {
  std::int64_t now = 1000000000;
  std::function<std::int64_t()> Fn() {
    return [this] { return now; };
  }
};

class UdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    verbs.devices["mlx5_0"] = FakeVerbs::RoceDevice({10, 0, 0, 1}, true);
    verbs.devices["rxe0"] = FakeVerbs::RoceDevice({10, 0, 0, 2}, false);
    verbs.devices["mlx5_0"].clock_cycles = 5000;
  }
  RdmaPort PortOf(const std::string& device) {
    std::string error;
    for (auto& p : ListRdmaPorts(verbs, &error)) {
      if (p.device == device) return p;
    }
    ADD_FAILURE() << "no port on " << device << ": " << error;
    return {};
  }
  std::unique_ptr<UdPort> OpenPort(const std::string& device,
                                   UdOptions options = {}) {
    options.now_ns = clock.Fn();
    if (options.recv_ring == 256) options.recv_ring = 8;
    if (options.send_slots == 128) options.send_slots = 4;
    std::string error;
    auto port = UdPort::Open(verbs, PortOf(device), options, &error);
    EXPECT_TRUE(port) << error;
    return port;
  }
  Handle QpOf(const UdPort& port) { return verbs.QpHandle(port.local().qpn); }

  FakeVerbs verbs;
  Clock clock;
};

TEST(RdmaPorts, NoDevicesMeansNoPortsAndNoError) {
  FakeVerbs verbs;
  std::string error;
  EXPECT_TRUE(ListRdmaPorts(verbs, &error).empty());
  EXPECT_EQ(error, "");
}

TEST(RdmaPorts, PickGidPrefersRoutableRoceV2) {
  GidEntry v1{0, Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8},
              GidType::kRoceV1};
  GidEntry v2_ll{1, v1.gid, GidType::kRoceV2};
  GidEntry v2_ip{2, Mapped({192, 168, 1, 5}), GidType::kRoceV2};
  GidEntry zero{3, Gid{}, GidType::kRoceV2};
  std::vector<GidEntry> all{v1, v2_ll, v2_ip, zero};
  EXPECT_EQ(PickGid(all, LinkLayer::kEthernet)->index, 2);
  std::vector<GidEntry> no_ip{v1, v2_ll, zero};
  EXPECT_EQ(PickGid(no_ip, LinkLayer::kEthernet)->index, 1);
  std::vector<GidEntry> only_v1{zero, v1};
  EXPECT_EQ(PickGid(only_v1, LinkLayer::kEthernet)->index, 0);
  std::vector<GidEntry> only_zero{zero};
  EXPECT_FALSE(PickGid(only_zero, LinkLayer::kEthernet));
  GidEntry ib0{0, v1.gid, GidType::kIb};
  GidEntry ib1{1, Mapped({1, 2, 3, 4}), GidType::kIb};
  std::vector<GidEntry> ib{ib0, ib1};
  EXPECT_EQ(PickGid(ib, LinkLayer::kInfiniBand)->index, 0);
}

TEST(RdmaPorts, ListsActivePortsWithGidAndClock) {
  FakeVerbs verbs;
  verbs.devices["mlx5_0"] = FakeVerbs::RoceDevice({10, 0, 0, 1}, true);
  verbs.devices["rxe0"] = FakeVerbs::RoceDevice({10, 0, 0, 2}, false);
  FakeDevice two = FakeVerbs::IbDevice(7, true);
  two.attr.phys_port_cnt = 2;
  two.ports[2] = two.ports[1];
  two.ports[2].attr.state = 1;  // DOWN
  verbs.devices["mlx5_1"] = two;
  verbs.devices["mlx5_9"] = FakeVerbs::IbDevice(9, true);
  verbs.devices["mlx5_9"].open_fails = true;
  std::string error;
  auto ports = ListRdmaPorts(verbs, &error);
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].gid.index, 1);
  EXPECT_EQ(ports[0].gid.gid, Mapped({10, 0, 0, 1}));
  EXPECT_EQ(ports[0].clock, ClockKind::kHardware);
  EXPECT_EQ(ports[0].mtu_bytes, 1024);
  EXPECT_EQ(ports[1].device, "mlx5_1");
  EXPECT_EQ(ports[1].port, 1);
  EXPECT_EQ(ports[1].lid, 7);
  EXPECT_EQ(ports[2].device, "rxe0");
  EXPECT_EQ(ports[2].clock, ClockKind::kSoftware);
  // The device that cannot be opened is named; the others still count.
  EXPECT_NE(error.find("mlx5_9: open"), std::string::npos) << error;
  EXPECT_TRUE(verbs.contexts.empty()) << "every device closed again";
}

TEST(RdmaPorts, GrhSourceGid) {
  EXPECT_EQ(GrhSourceGid(Ipv4Grh({10, 1, 2, 3})), Mapped({10, 1, 2, 3}));
  Bytes v6(40, 0);
  v6[0] = 0x60;
  for (int i = 0; i < 16; ++i) v6[8 + i] = static_cast<std::uint8_t>(i + 1);
  auto gid = GrhSourceGid(v6);
  ASSERT_TRUE(gid);
  EXPECT_EQ((*gid)[0], 1);
  EXPECT_EQ((*gid)[15], 16);
  EXPECT_FALSE(GrhSourceGid(Bytes(40, 0)));     // neither header
  EXPECT_FALSE(GrhSourceGid(Bytes(20, 0x60)));  // too short
}

TEST_F(UdTest, OpenWalksTheQpToRtsAndPostsTheRing) {
  auto port = OpenPort("mlx5_0");
  ASSERT_TRUE(port);
  const auto& qp = verbs.qps.at(QpOf(*port));
  EXPECT_EQ(qp.type, QpType::kUd);
  ASSERT_EQ(qp.transitions.size(), 3u);
  EXPECT_EQ(qp.transitions[0].to, QpState::kInit);
  EXPECT_EQ(qp.transitions[0].port, 1);
  EXPECT_EQ(qp.transitions[0].qkey, UdOptions{}.qkey);
  EXPECT_EQ(qp.transitions[1].to, QpState::kRtr);
  EXPECT_EQ(qp.transitions[2].to, QpState::kRts);
  EXPECT_EQ(qp.recvs.size(), 8u);
  for (const auto& r : qp.recvs) EXPECT_EQ(r.len, 40u + 256u);
  EXPECT_TRUE(verbs.cqs.at(qp.recv_cq).timestamps);
  EXPECT_TRUE(verbs.cqs.at(qp.recv_cq).armed);
  EXPECT_EQ(port->clock(), ClockKind::kHardware);
  EXPECT_EQ(port->local().gid, Mapped({10, 0, 0, 1}));
  EXPECT_EQ(port->local().qpn, qp.qpn);
  EXPECT_GT(port->fd(), 0);
}

TEST_F(UdTest, CloseReleasesEverything) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  ASSERT_TRUE(port->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  port.reset();
  EXPECT_TRUE(verbs.qps.empty());
  EXPECT_TRUE(verbs.cqs.empty());
  EXPECT_TRUE(verbs.ahs.empty());
  EXPECT_TRUE(verbs.mrs.empty());
  EXPECT_TRUE(verbs.pds.empty());
  EXPECT_TRUE(verbs.channels.empty());
  EXPECT_TRUE(verbs.contexts.empty());
}

TEST_F(UdTest, DeviceRefusingTimestampedCqFallsBackToSoftware) {
  verbs.devices["mlx5_0"].cq_timestamps = false;
  auto port = OpenPort("mlx5_0");
  ASSERT_TRUE(port);
  EXPECT_EQ(port->clock(), ClockKind::kSoftware);
  EXPECT_EQ(port->port().clock, ClockKind::kSoftware);
}

TEST_F(UdTest, PayloadLargerThanMtuIsRefusedAtOpen) {
  UdOptions options;
  options.max_payload = 2048;  // the fake RoCE port's MTU is 1024
  options.now_ns = clock.Fn();
  std::string error;
  EXPECT_FALSE(UdPort::Open(verbs, PortOf("mlx5_0"), options, &error));
  EXPECT_NE(error.find("mlx5_0 port 1"), std::string::npos) << error;
  EXPECT_NE(error.find("MTU"), std::string::npos) << error;
  EXPECT_TRUE(verbs.contexts.empty());
}

TEST_F(UdTest, SendToUnknownPeerPostsNothing) {
  auto port = OpenPort("mlx5_0");
  Bytes probe{1, 2, 3};
  EXPECT_EQ(port->Send("nobody", probe, 1),
            std::errc::no_such_device_or_address);
  EXPECT_TRUE(verbs.qps.at(QpOf(*port)).sends.empty());
}

TEST_F(UdTest, SetPeerRefusesUnusableAddresses) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  EXPECT_FALSE(port->SetPeer("p", {Mapped({10, 0, 0, 2}), 0, 0, 1}, &error));
  EXPECT_NE(error.find("QPN"), std::string::npos);
  EXPECT_FALSE(port->SetPeer("p", {Gid{}, 5, 0x200, 1}, &error));
  EXPECT_NE(error.find("GID"), std::string::npos);
  verbs.create_ah_failures = 1;
  EXPECT_FALSE(
      port->SetPeer("p", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  EXPECT_NE(error.find("address handle"), std::string::npos);
  EXPECT_FALSE(port->HasPeer("p"));
}

TEST_F(UdTest, SendUsesGrhOnRoceAndStampsWithTheHcaClock) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  UdAddress peer{Mapped({10, 0, 0, 2}), 0, 0x345, 0x46424d31};
  ASSERT_TRUE(port->SetPeer("10.0.0.2:10916", peer, &error)) << error;
  Bytes probe{0xde, 0xad, 0xbe, 0xef};
  ASSERT_FALSE(port->Send("10.0.0.2:10916", probe, 77));
  auto& qp = verbs.qps.at(QpOf(*port));
  ASSERT_EQ(qp.sends.size(), 1u);
  const auto& s = qp.sends[0];
  EXPECT_EQ(s.bytes, probe);
  EXPECT_EQ(s.ud_send.remote_qpn, 0x345u);
  EXPECT_EQ(s.ud_send.qkey, 0x46424d31u);
  const AddressVector& av = verbs.ahs.at(s.ud_send.ah);
  EXPECT_TRUE(av.global);
  EXPECT_EQ(av.dgid, peer.gid);
  EXPECT_EQ(av.sgid_index, 1);  // the RoCEv2 IPv4 entry

  // The anchor was read at open: cycle 5000 <-> host 1 s. At 1 GHz the
  // completion at cycle 7500 happened 2500 ns later.
  verbs.CompleteSends(QpOf(*port), 7500);
  clock.now += 999;  // polled later: the software clock must not be used
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kSent);
  EXPECT_EQ(events[0].cookie, 77u);
  EXPECT_EQ(events[0].stamp.kind, ClockKind::kHardware);
  EXPECT_EQ(events[0].stamp.ns, 1000000000 + 2500);
}

TEST_F(UdTest, SoftRoceStampsWithTheHostClockAtPoll) {
  auto port = OpenPort("rxe0");
  EXPECT_EQ(port->clock(), ClockKind::kSoftware);
  EXPECT_FALSE(verbs.cqs.at(verbs.qps.at(QpOf(*port)).send_cq).timestamps);
  std::string error;
  ASSERT_TRUE(port->SetPeer("a", {Mapped({10, 0, 0, 1}), 0, 0x345, 1}, &error));
  ASSERT_FALSE(port->Send("a", Bytes{1}, 5));
  verbs.CompleteSends(QpOf(*port), std::nullopt);
  clock.now = 2000000123;
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].stamp.kind, ClockKind::kSoftware);
  EXPECT_EQ(events[0].stamp.ns, 2000000123);
}

TEST_F(UdTest, ReceiveFromKnownAndUnknownSendersAndReply) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  ASSERT_TRUE(
      port->SetPeer("known", {Mapped({10, 0, 0, 2}), 0, 0x345, 1}, &error));
  const Handle qp = QpOf(*port);
  ASSERT_TRUE(
      verbs.DeliverUd(qp, {9, 8, 7}, 0x345, 0, Ipv4Grh({10, 0, 0, 2}), 6000));
  ASSERT_TRUE(verbs.DeliverUd(qp, {6}, 0x999, 0, Ipv4Grh({10, 0, 0, 9}), 6100));
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kReceived);
  EXPECT_EQ(events[0].peer, "known");
  EXPECT_EQ(events[0].payload, (Bytes{9, 8, 7}));
  EXPECT_EQ(events[0].source_qpn, 0x345u);
  EXPECT_EQ(events[0].stamp.ns, 1000000000 + 1000);
  EXPECT_EQ(events[1].peer, "");  // a prober we do not probe ourselves
  EXPECT_EQ(events[1].source_gid, Mapped({10, 0, 0, 9}));
  // The ring stays full: both buffers were posted again.
  EXPECT_EQ(verbs.qps.at(qp).recvs.size(), 8u);

  // The responder answers the unknown sender twice: one address handle.
  ASSERT_FALSE(port->Reply(events[1], Bytes{1, 1}, 501));
  ASSERT_FALSE(port->Reply(events[1], Bytes{2, 2}, 502));
  EXPECT_EQ(verbs.ahs_from_completion, 1);
  auto& sends = verbs.qps.at(qp).sends;
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].ud_send.remote_qpn, 0x999u);
  EXPECT_EQ(sends[0].ud_send.qkey, UdOptions{}.qkey);
  EXPECT_EQ(sends[1].bytes, (Bytes{2, 2}));
}

TEST_F(UdTest, ShortReceiveIsDroppedNotDelivered) {
  auto port = OpenPort("mlx5_0");
  auto& qp = verbs.qps.at(QpOf(*port));
  auto r = qp.recvs.front();
  qp.recvs.pop_front();
  Completion c;
  c.wr_id = r.wr_id;
  c.opcode = WcOpcode::kRecv;
  c.byte_len = 12;  // less than the GRH area
  verbs.cqs.at(qp.recv_cq).queue.push_back(c);
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kDropped);
  EXPECT_EQ(qp.recvs.size(), 8u);
  EXPECT_TRUE(port->failure().empty());
}

TEST_F(UdTest, ProbeAndAnswerBetweenTwoPortsGiveTheRtt) {
  verbs.devices["mlx5_1"] = FakeVerbs::RoceDevice({10, 0, 0, 3}, true);
  auto prober = OpenPort("mlx5_0");
  auto responder = OpenPort("mlx5_1");
  std::string error;
  ASSERT_TRUE(prober->SetPeer("r", responder->local(), &error)) << error;
  const Handle pq = QpOf(*prober), rq = QpOf(*responder);

  ASSERT_FALSE(prober->Send("r", Bytes{'p'}, 1));
  verbs.CompleteSends(pq, 10000);  // T2
  ASSERT_TRUE(verbs.DeliverUd(rq, verbs.qps.at(pq).sends[0].bytes,
                              prober->local().qpn, 0, Ipv4Grh({10, 0, 0, 1}),
                              90000));  // T3 (the responder's own clock)
  std::vector<UdEvent> at_responder;
  responder->Poll(&at_responder);
  ASSERT_EQ(at_responder.size(), 1u);
  const std::int64_t t3 = at_responder[0].stamp.ns;
  ASSERT_FALSE(responder->Reply(at_responder[0], Bytes{'a'}, 2));
  verbs.CompleteSends(rq, 90400);  // T4
  ASSERT_TRUE(verbs.DeliverUd(pq, verbs.qps.at(rq).sends[0].bytes,
                              responder->local().qpn, 0, Ipv4Grh({10, 0, 0, 3}),
                              13000));  // T5
  at_responder.clear();
  responder->Poll(&at_responder);
  std::vector<UdEvent> at_prober;
  prober->Poll(&at_prober);
  ASSERT_EQ(at_prober.size(), 2u);
  EXPECT_EQ(at_prober[0].kind, UdEvent::Kind::kSent);
  EXPECT_EQ(at_prober[1].kind, UdEvent::Kind::kReceived);
  EXPECT_EQ(at_prober[1].peer, "r");
  EXPECT_EQ(at_prober[1].payload, Bytes{'a'});
  ASSERT_EQ(at_responder.size(), 1u);
  const std::int64_t rtt = at_prober[1].stamp.ns - at_prober[0].stamp.ns;
  const std::int64_t responder_delay = at_responder[0].stamp.ns - t3;
  EXPECT_EQ(rtt, 3000);
  EXPECT_EQ(responder_delay, 400);
  EXPECT_EQ(rtt - responder_delay, 2600);  // R-Pingmesh's network RTT
}

TEST_F(UdTest, InfiniBandRoutesByLidAndMatchesSendersByLid) {
  verbs.devices["mlx5_ib"] = FakeVerbs::IbDevice(3, true);
  auto port = OpenPort("mlx5_ib");
  std::string error;
  UdAddress same_subnet{FakeVerbs::IbDevice(4, true).ports[1].gids[0]->gid, 4,
                        0x400, 1};
  ASSERT_TRUE(port->SetPeer("ib4", same_subnet, &error)) << error;
  UdAddress routed = same_subnet;
  routed.gid[0] = 0xfd;  // another subnet prefix
  routed.lid = 1;        // the router's LID
  routed.qpn = 0x401;
  ASSERT_TRUE(port->SetPeer("far", routed, &error)) << error;
  EXPECT_FALSE(port->SetPeer("nolid", {routed.gid, 0, 0x402, 1}, &error));
  ASSERT_FALSE(port->Send("ib4", Bytes{1}, 1));
  ASSERT_FALSE(port->Send("far", Bytes{1}, 2));
  auto& sends = verbs.qps.at(QpOf(*port)).sends;
  const AddressVector& local = verbs.ahs.at(sends[0].ud_send.ah);
  EXPECT_FALSE(local.global);
  EXPECT_EQ(local.dlid, 4);
  const AddressVector& far = verbs.ahs.at(sends[1].ud_send.ah);
  EXPECT_TRUE(far.global);
  EXPECT_EQ(far.dgid, routed.gid);

  ASSERT_TRUE(verbs.DeliverUd(QpOf(*port), {5}, 0x400, 4, {}, 100));
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kReceived);
  EXPECT_EQ(events[0].peer, "ib4");
  EXPECT_FALSE(events[0].source_gid);
}

TEST_F(UdTest, AllSlotsInFlightAndOversizedPayload) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  ASSERT_TRUE(port->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(port->Send("b", Bytes{1}, i));
  EXPECT_EQ(port->Send("b", Bytes{1}, 9), std::errc::no_buffer_space);
  EXPECT_EQ(port->Send("b", Bytes(257, 0), 9), std::errc::message_size);
  verbs.CompleteSends(QpOf(*port), 6000);
  std::vector<UdEvent> events;
  port->Poll(&events);
  EXPECT_EQ(events.size(), 4u);
  EXPECT_FALSE(port->Send("b", Bytes{1}, 10));  // slots came back
}

TEST_F(UdTest, VanishedDeviceFailsThePortAndEverySendInFlight) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  ASSERT_TRUE(port->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  ASSERT_FALSE(port->Send("b", Bytes{1}, 41));
  verbs.devices["mlx5_0"].gone = true;
  EXPECT_EQ(port->Send("b", Bytes{1}, 42), std::errc::no_such_device);
  EXPECT_NE(port->failure().find("mlx5_0 port 1"), std::string::npos)
      << port->failure();
  std::vector<UdEvent> events;
  port->Poll(&events);  // must not crash on a dead device
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kSendFailed);
  EXPECT_EQ(events[0].cookie, 41u);
  EXPECT_EQ(port->Send("b", Bytes{1}, 43), std::errc::no_such_device);
  std::string list_error;
  for (const auto& p : ListRdmaPorts(verbs, &list_error)) {
    EXPECT_NE(p.device, "mlx5_0");
  }
}

TEST_F(UdTest, FailedSendCompletionPutsThePortInError) {
  auto port = OpenPort("mlx5_0");
  std::string error;
  ASSERT_TRUE(port->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  ASSERT_FALSE(port->Send("b", Bytes{1}, 7));
  verbs.CompleteSends(QpOf(*port), 6000, /*status=*/12);
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, UdEvent::Kind::kSendFailed);
  EXPECT_FALSE(port->failure().empty());
}

TEST_F(UdTest, ClockAnchorIsRefreshedAndLazyWithoutRtValues) {
  UdOptions options;
  options.reanchor_ns = 1000;
  auto port = OpenPort("mlx5_0", options);
  std::string error;
  ASSERT_TRUE(port->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  // 10 us later the HCA clock reads 20000: the new anchor (cycle 20000 <->
  // host 1.00001 s) replaces the first (5000 <-> 1 s).
  clock.now += 10000;
  verbs.SetClock("mlx5_0", 20000);
  ASSERT_FALSE(port->Send("b", Bytes{1}, 1));
  verbs.CompleteSends(QpOf(*port), 20100);
  std::vector<UdEvent> events;
  port->Poll(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].stamp.ns, 1000010000 + 100);

  // A provider without ibv_query_rt_values_ex: the first completion is
  // pinned to the host clock at poll time, later ones keep exact spacing.
  verbs.devices["mlx5_2"] = FakeVerbs::RoceDevice({10, 0, 0, 4}, true);
  verbs.devices["mlx5_2"].rt_clock = false;
  auto lazy = OpenPort("mlx5_2");
  ASSERT_TRUE(lazy->SetPeer("b", {Mapped({10, 0, 0, 2}), 0, 0x200, 1}, &error));
  ASSERT_FALSE(lazy->Send("b", Bytes{1}, 1));
  verbs.CompleteSends(QpOf(*lazy), 777000);
  events.clear();
  lazy->Poll(&events);
  ASSERT_FALSE(lazy->Send("b", Bytes{1}, 2));
  verbs.CompleteSends(QpOf(*lazy), 777250);
  clock.now += 5000000;
  lazy->Poll(&events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].stamp.kind, ClockKind::kHardware);
  EXPECT_EQ(events[0].stamp.ns, clock.now - 5000000);
  EXPECT_EQ(events[1].stamp.ns - events[0].stamp.ns, 250);
}

}  // namespace
}  // namespace fabric::rdma
