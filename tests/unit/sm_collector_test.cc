// The sm collector on the in-house simulator's SM scenarios (sm-hung,
// sm-failover) through the simulator's MadTransport, with an injected
// local-port list and clock; its settings through ParseConfig.
#include <gtest/gtest.h>

#include <memory>

#include "collectors/fabric.h"
#include "collectors/registry.h"
#include "collectors/sm.h"
#include "config/config.h"
#include "simulator/mad.h"
#include "simulator/model.h"
#include "sources/mad/codec.h"
#include "sources/mad/sm_directory.h"
#include "tests/support/fake_mad_transport.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

using fabric::testing::Collected;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct SmRig {
  explicit SmRig(sim::Scenario scenario, sim::Duration start)
      : cluster([&] {
          sim::SimConfig c;
          c.hosts = 2;
          c.timeline = sim::SingleScenario(scenario);
          c.timeline.events[0].start = start;
          return c;
        }()) {
    env.mad = [this](const std::string&, int) {
      return sim::MakeSimMadTransport(cluster);
    };
    env.clock = [this] {
      return std::chrono::duration<double>(cluster.now()).count();
    };
    SmSettings s;
    s.mad.timeout = milliseconds(20);
    s.mad.retries = 0;
    s.stall_after = seconds(2);
    config.settings = std::make_shared<SettingsOf<SmSettings>>(s);
    collector = MakeSmCollector(env, config, [this](std::string*) {
      mad::LocalPort p;
      p.ca = "mlx5_0";
      p.port = 1;
      p.state = 4;
      p.link_layer = "InfiniBand";
      p.lid = cluster.FindPort(0, "mlx5_0")->lid;
      p.sm_lid = cluster.master_sm().lid;  // what the port's PortInfo says
      return std::vector<mad::LocalPort>{p};
    });
  }
  void Advance(sim::Duration d) {
    const auto end = cluster.now() + d;
    while (cluster.now() < end) cluster.Step();
  }
  Collected Collect() {
    MetricSink sink;
    Collected c;
    c.ok = collector->Collect(sink);
    c.families = sink.Take();
    return c;
  }
  // The fabric collector's view from host 0's mlx5_0 (directed routes start
  // there, as `--simulate` wires it): sets env.mad, returns the port list.
  mad::LocalPortLister FabricFromHost0() {
    const sim::Port* local = cluster.FindPort(0, "mlx5_0");
    const int index = static_cast<int>(local - cluster.ports().data());
    env.mad = [this, index](const std::string&, int) {
      return sim::MakeSimMadTransport(cluster, {.local_port = index});
    };
    return [this, local](std::string*) {
      mad::LocalPort p;
      p.ca = "mlx5_0";
      p.port = 1;
      p.state = 4;
      p.link_layer = "InfiniBand";
      p.lid = local->lid;
      p.sm_lid = cluster.master_sm().lid;
      return std::vector<mad::LocalPort>{p};
    };
  }
  std::string Guid(int sm) const {
    return mad::GuidString(cluster.sms()[sm].guid);
  }

  sim::Cluster cluster;
  CollectorEnv env;
  CollectorConfig config;
  std::unique_ptr<Collector> collector;
};

TEST(SmCollector, HungMasterShowsAsStalled) {
  SmRig rig(sim::Scenario::kSmHung, seconds(1));
  rig.Advance(milliseconds(500));
  Collected c = rig.Collect();
  ASSERT_TRUE(c.ok);
  const std::string g = rig.Guid(0);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", g}}), 3);
  EXPECT_EQ(c.Value("fabric_sm_priority", {{"sm_guid", g}}),
            rig.cluster.sms()[0].priority);
  EXPECT_EQ(c.Value("fabric_sm_activity_total", {{"sm_guid", g}}),
            rig.cluster.sms()[0].act_count);
  EXPECT_EQ(c.Value("fabric_sm_info", {{"sm_guid", g}, {"sm_lid", "1"}}), 1);
  EXPECT_EQ(c.Value("fabric_sm_activity_stalled", {{"sm_guid", g}}), 0);

  // Hung from t=1 s: ActCount frozen; stalled once it sat still >= 2 s.
  rig.Advance(milliseconds(1000));  // t=1.5: last move seen now
  EXPECT_EQ(rig.Collect().Value("fabric_sm_activity_stalled", {{"sm_guid", g}}),
            0);
  rig.Advance(milliseconds(1000));  // t=2.5
  c = rig.Collect();
  EXPECT_EQ(c.Value("fabric_sm_activity_stalled", {{"sm_guid", g}}), 0);
  rig.Advance(milliseconds(1500));  // t=4.0: 2.5 s without a move
  c = rig.Collect();
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_activity_stalled", {{"sm_guid", g}}), 1);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", g}}), 3);
  EXPECT_EQ(c.Value("fabric_sm_master_changes_total", {}), 0);
}

TEST(SmCollector, FailoverCountsAMasterChange) {
  SmRig rig(sim::Scenario::kSmFailover, seconds(2));
  rig.Advance(seconds(1));
  Collected c = rig.Collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", rig.Guid(0)}}), 3);
  EXPECT_EQ(c.Value("fabric_sm_master_changes_total", {}), 0);
  rig.Advance(seconds(4));  // master died at 2 s, standby took over at 4 s
  c = rig.Collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", rig.Guid(1)}}), 3);
  EXPECT_EQ(
      c.Value("fabric_sm_info", {{"sm_guid", rig.Guid(1)}, {"sm_lid", "2"}}),
      1);
  EXPECT_EQ(c.Value("fabric_sm_master_changes_total", {}), 1);
  EXPECT_FALSE(c.Value("fabric_sm_state", {{"sm_guid", rig.Guid(0)}}));
}

// With the SM LIDs a fabric discovery found, every SM is asked and
// fabric_sm_masters counts the MASTERs: 1, then 0 (not absent) while the
// dead master's standby has not taken over, then 1 again.
TEST(SmCollector, CountsMastersAmongEverySmDiscoveryFound) {
  SmRig rig(sim::Scenario::kSmFailover, seconds(2));
  rig.Advance(seconds(1));
  Collected c = rig.Collect();
  EXPECT_FALSE(c.Value("fabric_sm_masters", {}));  // no fabric collector
  mad::PublishSmLids({1, 2});
  c = rig.Collect();
  EXPECT_EQ(c.Value("fabric_sm_masters", {}), 1);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", rig.Guid(1)}}), 2);
  // Two SMs answered, yet the unlabelled counter is one series, not two.
  EXPECT_EQ(c.Find("fabric_sm_master_changes_total", {}).size(), 1u);
  rig.Advance(seconds(2));  // t=3 s: master dead, standby not yet master
  c = rig.Collect();
  EXPECT_EQ(c.Value("fabric_sm_masters", {}), 0);
  EXPECT_FALSE(c.ok);       // the local port's master does not answer
  rig.Advance(seconds(2));  // t=5 s: standby took over
  c = rig.Collect();
  EXPECT_EQ(c.Value("fabric_sm_masters", {}), 1);
  EXPECT_TRUE(c.ok);
  mad::ClearSmLids();
}

// The fabric collector on the simulator's MAD view (directed route from
// host 0's mlx5_0, as `--simulate` wires it): discovery walks the model's
// leaf/spine fabric and finds both SMs (IsSM on the switches' port 0), the
// sweep sees the congestion-hotspot's oversubscribed leaf egress port wait,
// and the sm collector then asks every SM: one master, one standby.
TEST(SmCollector, FabricAndSmCollectorsSweepTheSimulatedFabric) {
  SmRig rig(sim::Scenario::kCongestionHotspot, seconds(0));
  auto ports = rig.FabricFromHost0();
  CollectorConfig config;
  FabricSettings s;
  s.mad.timeout = milliseconds(20);
  s.mad.retries = 0;
  config.settings = std::make_shared<SettingsOf<FabricSettings>>(s);
  auto fabric = MakeFabricCollector(rig.env, config, ports);
  rig.Advance(seconds(2));
  MetricSink sink;
  Collected before;
  before.ok = fabric->Collect(sink);
  before.families = sink.Take();
  ASSERT_TRUE(before.ok);
  // 2 hosts: ib-spine and the 8 rail leaves.
  EXPECT_EQ(before.Find("fabric_switch_info", {}).size(), 9u);
  EXPECT_EQ(before.Value("fabric_sweep_unreachable_nodes", {}), 0);
  // ib-leaf0 port 2 faces host 1: the hotspot's oversubscribed egress.
  const std::map<std::string, std::string> hot = {{"switch", "ib-leaf0"},
                                                  {"port", "2"}};
  const auto wait0 =
      before.Value("fabric_switch_port_transmit_wait_total", hot);
  ASSERT_TRUE(wait0);
  rig.Advance(seconds(2));
  Collected after;
  after.ok = fabric->Collect(sink);
  after.families = sink.Take();
  EXPECT_GT(*after.Value("fabric_switch_port_transmit_wait_total", hot),
            *wait0);
  // Discovery published the SM LIDs: the sm collector sees both SMs.
  const Collected sm = rig.Collect();
  EXPECT_EQ(sm.Value("fabric_sm_masters", {}), 1);
  EXPECT_EQ(sm.Value("fabric_sm_state", {{"sm_guid", rig.Guid(0)}}), 3);
  EXPECT_EQ(sm.Value("fabric_sm_state", {{"sm_guid", rig.Guid(1)}}), 2);
  mad::ClearSmLids();
}

// collectors.fabric.pesc: false takes PortExtendedSpeedsCounters out of the
// sweep altogether: the simulator's switches answer 0x1F, so with it on
// their FEC counters are exported; off, none, and no PMA is reported as
// lacking PESC (none was asked).
TEST(SmCollector, FabricPescSwitchTurnsFecCountersOff) {
  for (const bool pesc : {true, false}) {
    SmRig rig(sim::Scenario::kCongestionHotspot, seconds(0));
    auto ports = rig.FabricFromHost0();
    int fec_series = 0;
    std::string error;
    auto config =
        ParseConfig(std::string("collectors:\n  fabric:\n    enabled: true\n"
                                "    mad_timeout: 20ms\n    mad_retries: 0\n"
                                "    pesc: ") +
                        (pesc ? "true" : "false") + "\n",
                    AllCollectorKeys(), &error);
    ASSERT_TRUE(config) << error;
    EXPECT_EQ(SettingsAs<FabricSettings>(config->Collector("fabric")).pesc,
              pesc);
    auto fabric =
        MakeFabricCollector(rig.env, config->Collector("fabric"), ports);
    rig.Advance(seconds(2));
    MetricSink sink;
    Collected c;
    c.ok = fabric->Collect(sink);
    c.families = sink.Take();
    ASSERT_TRUE(c.ok);
    // A sweep happened either way.
    EXPECT_EQ(c.Find("fabric_switch_info", {}).size(), 9u) << pesc;
    for (const auto& f : c.families) {
      if (f.name.rfind("fabric_switch_port_fec_", 0) == 0) {
        fec_series += static_cast<int>(f.metric.size());
      }
    }
    if (pesc) {
      EXPECT_GT(fec_series, 0);
      EXPECT_EQ(c.Value("fabric_sweep_pesc_unsupported_switches", {}), 0);
    } else {
      EXPECT_EQ(fec_series, 0);
      EXPECT_FALSE(c.Value("fabric_sweep_pesc_unsupported_switches", {}));
    }
    mad::ClearSmLids();
  }
}

// A daemon started before the SM: libibumad's view of its port says INIT
// for good (umad2sim freezes it at the first libibumad call), so the
// port's own PortInfo decides, at every collection: nothing (and success)
// while INIT, the master once ACTIVE, nothing again once it went down.
TEST(SmCollector, FollowsThePortsOwnPortInfoNotAStaleView) {
  SmRig rig(sim::Scenario::kSmHung, seconds(60));
  rig.Advance(milliseconds(500));
  // The local port's SMA; every LID-routed MAD goes to the cluster.
  auto port = std::make_shared<testing::FakePortState>();
  rig.env.mad = [&](const std::string&, int) {
    return std::make_unique<testing::FakeMadTransport>(
        port, [&](std::uint16_t dlid, const Mad& mad) {
          return sim::AnswerMad(rig.cluster, dlid, mad);
        });
  };
  rig.collector = MakeSmCollector(rig.env, rig.config, [](std::string*) {
    mad::LocalPort p;
    p.ca = "mlx5_0";
    p.port = 1;
    p.state = 2;       // INIT in the frozen view
    p.phys_state = 5;  // LinkUp
    p.link_layer = "InfiniBand";
    return std::vector<mad::LocalPort>{p};  // no LID, no SM LID
  });
  Collected c = rig.Collect();
  EXPECT_TRUE(c.ok);
  EXPECT_TRUE(c.families.empty());

  *port = {.state = 4, .lid = 5, .sm_lid = rig.cluster.master_sm().lid};
  c = rig.Collect();
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", rig.Guid(0)}}), 3);
  EXPECT_EQ(
      c.Value("fabric_sm_info", {{"sm_guid", rig.Guid(0)}, {"sm_lid", "1"}}),
      1);

  port->state = 1;  // DOWN
  c = rig.Collect();
  EXPECT_TRUE(c.ok);
  EXPECT_TRUE(c.families.empty());
}

TEST(SmCollector, NoPortIsQuietSuccessUnopenablePortFails) {
  CollectorEnv env;
  env.mad = [](const std::string&, int) -> std::unique_ptr<MadTransport> {
    return nullptr;  // e.g. no permission on /dev/infiniband/umad0
  };
  CollectorConfig config;
  auto none = MakeSmCollector(
      env, config, [](std::string*) { return std::vector<mad::LocalPort>{}; });
  MetricSink sink;
  EXPECT_TRUE(none->Collect(sink));
  EXPECT_TRUE(sink.Take().empty());
  auto denied = MakeSmCollector(env, config, [](std::string*) {
    mad::LocalPort p;
    p.ca = "mlx5_0";
    p.port = 1;
    p.state = 4;
    p.link_layer = "InfiniBand";
    p.sm_lid = 1;
    return std::vector<mad::LocalPort>{p};
  });
  EXPECT_FALSE(denied->Collect(sink));
  EXPECT_TRUE(sink.Take().empty());
  // An Ethernet (RoCE) port is not an IB port: quiet success.
  auto roce = MakeSmCollector(env, config, [](std::string*) {
    mad::LocalPort p;
    p.state = 4;
    p.link_layer = "Ethernet";
    return std::vector<mad::LocalPort>{p};
  });
  EXPECT_TRUE(roce->Collect(sink));
}

// The fabric collector with no ACTIVE port to sweep from: success and no
// samples when there is no IB port or none is ACTIVE yet; a failure when a
// port cannot be opened or the configured ca / ca_port names none.
TEST(SmCollector, FabricCollectorWithoutAnActivePort) {
  CollectorEnv env;
  env.mad = [](const std::string&, int) -> std::unique_ptr<MadTransport> {
    return nullptr;  // e.g. no permission on /dev/infiniband/umad0
  };
  auto port = [](int state, int phys) {
    mad::LocalPort p;
    p.ca = "mlx5_0";
    p.port = 1;
    p.state = state;
    p.phys_state = phys;
    p.link_layer = "InfiniBand";
    return std::vector<mad::LocalPort>{p};
  };
  auto run = [&](const std::string& ca, std::vector<mad::LocalPort> view) {
    CollectorConfig config;
    FabricSettings s;
    s.ca = ca;
    config.settings = std::make_shared<SettingsOf<FabricSettings>>(s);
    auto c =
        MakeFabricCollector(env, config, [view](std::string*) { return view; });
    MetricSink sink;
    const bool ok = c->Collect(sink);
    EXPECT_TRUE(sink.Take().empty());
    return ok;
  };
  EXPECT_TRUE(run("", {}));                 // no IB port
  EXPECT_TRUE(run("", port(1, 2)));         // no cable: never opened
  EXPECT_FALSE(run("", port(4, 5)));        // ACTIVE, cannot be opened
  EXPECT_FALSE(run("", port(2, 5)));        // INIT, cannot be opened either
  EXPECT_FALSE(run("mlx5_9", port(1, 2)));  // names no local port
  EXPECT_TRUE(run("mlx5_0", port(1, 2)));
}

TEST(SmCollector, Settings) {
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const CollectorConfig sm = config->Collector("sm");
  EXPECT_TRUE(sm.enabled);
  EXPECT_EQ(sm.interval, seconds(60));
  EXPECT_EQ(SettingsAs<SmSettings>(sm), SmSettings{});
  EXPECT_FALSE(config->Collector("fabric").enabled);

  config = ParseConfig(
      "collectors:\n  sm:\n    mad_timeout: 250ms\n    mad_retries: 5\n"
      "    stall_after: 2m\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const SmSettings& s = SettingsAs<SmSettings>(config->Collector("sm"));
  EXPECT_EQ(s.mad.timeout, milliseconds(250));
  EXPECT_EQ(s.mad.retries, 5);
  EXPECT_EQ(s.stall_after, std::chrono::minutes(2));

  EXPECT_FALSE(ParseConfig("collectors:\n  sm:\n    mad_retries: many\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.sm.mad_retries (line 3)"), std::string::npos)
      << error;
  EXPECT_FALSE(ParseConfig("collectors:\n  fabric:\n    shard: 4/3\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.fabric.shard (line 3)"), std::string::npos)
      << error;
  // The shard is parsed once, here, into the value the sweep uses.
  config = ParseConfig("collectors:\n  fabric:\n    shard: 2/4\n",
                       AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(SettingsAs<FabricSettings>(config->Collector("fabric")).shard,
            (mad::Shard{.index = 2, .count = 4}));
  config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(SettingsAs<FabricSettings>(config->Collector("fabric")).shard,
            mad::Shard{});  // 1/1
  EXPECT_TRUE(SettingsAs<FabricSettings>(config->Collector("fabric")).pesc);
  EXPECT_FALSE(ParseConfig("collectors:\n  fabric:\n    pesc: sometimes\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.fabric.pesc (line 3): \"sometimes\" is not "
                       "a boolean"),
            std::string::npos)
      << error;
}

// mad_timeout / mad_retries are read by one reader (collectors/mad_settings.h)
// for sm and fabric alike: same values, same whole-number check, errors that
// name the collector's key.
TEST(SmCollector, MadKeysMeanTheSameUnderSmAndFabric) {
  std::string error;
  auto config = ParseConfig(
      "collectors:\n"
      "  sm: {mad_timeout: 40ms, mad_retries: 0}\n"
      "  fabric: {mad_timeout: 40ms, mad_retries: 0, max_outstanding: 8}\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const MadSettings want{milliseconds(40), 0};
  EXPECT_EQ(SettingsAs<SmSettings>(config->Collector("sm")).mad, want);
  const auto& fabric = SettingsAs<FabricSettings>(config->Collector("fabric"));
  EXPECT_EQ(fabric.mad, want);
  EXPECT_EQ(fabric.max_outstanding, 8);
  EXPECT_EQ(fabric.mad.Apply({}).timeout, milliseconds(40));
  EXPECT_EQ(fabric.mad.Apply({}).retries, 0);
  for (const std::string name : {"sm", "fabric"}) {
    for (const std::string bad : {"1.5", "-1", "21", "2e1", "+2"}) {
      EXPECT_FALSE(ParseConfig(
          "collectors:\n  " + name + ":\n    mad_retries: " + bad + "\n",
          AllCollectorKeys(), &error))
          << name << " " << bad;
      EXPECT_NE(error.find("collectors." + name + ".mad_retries (line 3): \"" +
                           bad + "\" is not a retry count"),
                std::string::npos)
          << error;
    }
  }
  EXPECT_FALSE(ParseConfig("collectors:\n  fabric:\n    max_outstanding: 0\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.fabric.max_outstanding (line 3)"),
            std::string::npos)
      << error;
}

// A MAD timeout is kept in whole milliseconds: below 1 ms it would be 0, a
// retry as fast as answers fail. discovery_interval has the interval floor.
TEST(SmCollector, MadTimeoutAndDiscoveryIntervalHaveFloors) {
  std::string error;
  for (const std::string name : {"sm", "fabric"}) {
    EXPECT_FALSE(
        ParseConfig("collectors:\n  " + name + ":\n    mad_timeout: 999us\n",
                    AllCollectorKeys(), &error));
    EXPECT_NE(error.find("collectors." + name +
                         ".mad_timeout (line 3): \"999us\" is below the "
                         "minimum of 1ms"),
              std::string::npos)
        << error;
    EXPECT_TRUE(
        ParseConfig("collectors:\n  " + name + ":\n    mad_timeout: 1ms\n",
                    AllCollectorKeys(), &error))
        << error;
  }
  EXPECT_FALSE(
      ParseConfig("collectors:\n  fabric:\n    discovery_interval: 1us\n",
                  AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.fabric.discovery_interval (line 3): "
                       "\"1us\" is below the minimum of 10ms"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace fabric
