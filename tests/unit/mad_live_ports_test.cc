// sources/mad/live_ports.h on an injected libibumad view and a fake local port
// that answers its own PortInfo (zero-hop directed-route SMP) with the
// state the test sets: a port libibumad still shows INIT (umad2sim's frozen
// copy) is used once its PortInfo says ACTIVE; an uncabled or Ethernet port
// is never opened; a port that cannot be opened is reported as such.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <memory>

#include "sources/mad/codec.h"
#include "sources/mad/live_ports.h"
#include "tests/support/fake_mad_transport.h"

namespace fabric::mad {
namespace {

using testing::FakeMadTransport;
using testing::FakePortState;

LocalPort View(const std::string& ca, int port, int state, int phys,
               const std::string& link_layer = "IB") {
  LocalPort p;
  p.ca = ca;
  p.port = port;
  p.state = state;
  p.phys_state = phys;
  p.link_layer = link_layer;
  return p;
}

MadOptions Fast() {
  MadOptions o;
  o.timeout = std::chrono::milliseconds(5);
  o.retries = 0;
  return o;
}

struct Rig {
  std::map<std::pair<std::string, int>, std::shared_ptr<FakePortState>> ports;
  std::vector<std::string> opened;
  PortOpener opener() {
    return [this](const std::string& ca,
                  int port) -> std::unique_ptr<MadTransport> {
      opened.push_back(ca + "/" + std::to_string(port));
      auto it = ports.find({ca, port});
      if (it == ports.end()) return nullptr;  // e.g. no permission
      return std::make_unique<FakeMadTransport>(it->second);
    };
  }
};

TEST(LivePorts, APortTheSmBringsUpLaterIsUsedThoughTheViewStaysInit) {
  Rig rig;
  auto s = std::make_shared<FakePortState>();
  rig.ports[{"ibsim0", 1}] = s;
  // libibumad's copy, as umad2sim froze it before the SM ran.
  const std::vector<LocalPort> view = {View("ibsim0", 1, 2, 5)};

  LivePorts live = FindLivePorts(view, "", 0, rig.opener(), Fast());
  EXPECT_TRUE(live.active.empty());
  ASSERT_EQ(live.waiting.size(), 1u);
  EXPECT_EQ(live.waiting[0], "ibsim0 port 1 (state 2)");
  EXPECT_TRUE(live.unopenable.empty());

  // The SM swept: ACTIVE, LID 3, SM at LID 1. Same (frozen) view.
  *s = {.state = 4, .phys_state = 5, .lid = 3, .sm_lid = 1};
  live = FindLivePorts(view, "", 0, rig.opener(), Fast());
  ASSERT_EQ(live.active.size(), 1u);
  EXPECT_EQ(live.active[0].port.state, 4);
  EXPECT_EQ(live.active[0].port.lid, 3);
  EXPECT_EQ(live.active[0].port.sm_lid, 1);
  ASSERT_TRUE(live.active[0].transport);
  EXPECT_TRUE(live.waiting.empty());

  // A failover moves the SM LID; the port goes down later.
  s->sm_lid = 7;
  live = FindLivePorts(view, "", 0, rig.opener(), Fast());
  ASSERT_EQ(live.active.size(), 1u);
  EXPECT_EQ(live.active[0].port.sm_lid, 7);
  LocalPort held = live.active[0].port;
  s->state = 1;
  s->phys_state = 2;
  ASSERT_TRUE(RefreshFromPortInfo(*live.active[0].transport, Fast(), &held));
  EXPECT_EQ(held.state, 1);
  EXPECT_TRUE(
      FindLivePorts({View("ibsim0", 1, 1, 2)}, "", 0, rig.opener(), Fast())
          .active.empty());
}

TEST(LivePorts, UncabledAndEthernetPortsAreNeverOpened) {
  Rig rig;
  const std::vector<LocalPort> view = {
      View("mlx5_0", 1, 1, 2),              // DOWN, Polling: no cable
      View("mlx5_0", 2, 1, 3),              // Disabled
      View("mlx5_1", 1, 4, 5, "Ethernet"),  // RoCE
  };
  const LivePorts live = FindLivePorts(view, "", 0, rig.opener(), Fast());
  EXPECT_TRUE(live.active.empty());
  EXPECT_TRUE(live.waiting.empty());
  EXPECT_TRUE(live.unopenable.empty());
  EXPECT_TRUE(rig.opened.empty());
}

TEST(LivePorts, AnUnopenablePortIsReported) {
  Rig rig;  // no port opens
  const LivePorts live = FindLivePorts({View("mlx5_0", 1, 4, 5, "InfiniBand")},
                                       "", 0, rig.opener(), Fast());
  EXPECT_TRUE(live.active.empty());
  ASSERT_EQ(live.unopenable.size(), 1u);
  EXPECT_EQ(live.unopenable[0], "mlx5_0 port 1");
}

TEST(LivePorts, SilentPortFallsBackToTheView) {
  Rig rig;
  auto s = std::make_shared<FakePortState>();
  s->answers = false;
  rig.ports[{"mlx5_0", 1}] = s;
  LocalPort v = View("mlx5_0", 1, 4, 5, "InfiniBand");
  v.lid = 9;
  v.sm_lid = 2;
  const LivePorts live = FindLivePorts({v}, "", 0, rig.opener(), Fast());
  ASSERT_EQ(live.active.size(), 1u);
  EXPECT_EQ(live.active[0].port.sm_lid, 2);
  EXPECT_EQ(live.active[0].port.lid, 9);
  EXPECT_EQ(s->portinfo_asks, 1);
}

TEST(LivePorts, CaAndPortSelectOne) {
  Rig rig;
  for (auto key : {std::pair<std::string, int>{"mlx5_0", 1},
                   {"mlx5_0", 2},
                   {"mlx5_1", 1}}) {
    rig.ports[key] = std::make_shared<FakePortState>(FakePortState{
        .state = 4, .lid = static_cast<std::uint16_t>(key.second)});
  }
  const std::vector<LocalPort> view = {View("mlx5_0", 1, 4, 5),
                                       View("mlx5_0", 2, 4, 5),
                                       View("mlx5_1", 1, 4, 5)};
  LivePorts live = FindLivePorts(view, "", 0, rig.opener(), Fast());
  EXPECT_EQ(live.active.size(), 3u);
  live = FindLivePorts(view, "mlx5_0", 2, rig.opener(), Fast());
  ASSERT_EQ(live.active.size(), 1u);
  EXPECT_EQ(live.active[0].port.ca, "mlx5_0");
  EXPECT_EQ(live.active[0].port.port, 2);
  live = FindLivePorts(view, "mlx5_1", 0, rig.opener(), Fast());
  ASSERT_EQ(live.active.size(), 1u);
  EXPECT_EQ(live.active[0].port.ca, "mlx5_1");
}

}  // namespace
}  // namespace fabric::mad
