// Issue 39 item 7: the sm collector asks each SM once per collection, not
// once per local port. Eight ACTIVE ports (fake umad ports behind
// FakeMadTransport) that all name SM LID 1: one subnet (one SM GUID) costs
// one SMInfo per collection after the first, eight subnets whose SMs all
// sit at LID 1 still cost eight (each a different GUID, all exported);
// NodeDescription is asked once per SM, not every time.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <map>
#include <memory>

#include "collectors/sm.h"
#include "sources/mad/codec.h"
#include "tests/support/fake_mad_transport.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

using std::chrono::milliseconds;

struct Rig {
  // `subnets`: 1 (every port reaches SM 0x100) or 8 (port i reaches 0x100+i).
  explicit Rig(int subnets) {
    env.clock = [this] { return now; };
    env.mad = [this, subnets](const std::string&, int port) {
      auto state = std::make_shared<testing::FakePortState>();
      state->state = 4;
      state->lid = static_cast<std::uint16_t>(10 + port);
      state->sm_lid = 1;
      const std::uint64_t guid = 0x100 + (subnets == 1 ? 0 : port);
      return std::make_unique<testing::FakeMadTransport>(
          state, [this, guid](std::uint16_t, const Mad& mad) -> MadResult {
            Mad r = mad;
            auto* b = r.data();
            mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
            const unsigned attr = mad_get_field(b, 0, IB_MAD_ATTRID_F);
            if (attr == mad::kAttrSmInfo) {
              ++sminfo;
              mad_set_field64(b + 64, 0, IB_SMINFO_GUID_F, guid);
              mad_set_field(b + 64, 0, IB_SMINFO_STATE_F, 3);
              mad_set_field(b + 64, 0, IB_SMINFO_ACT_F, act++);
            } else {
              ++descriptions;
              std::snprintf(reinterpret_cast<char*>(b + 64), 64, "sm%llx",
                            static_cast<unsigned long long>(guid));
            }
            return r;
          });
    };
    SmSettings s;
    s.mad.timeout = milliseconds(20);
    s.mad.retries = 0;
    config.settings = std::make_shared<SettingsOf<SmSettings>>(s);
    collector = MakeSmCollector(env, config, [](std::string*) {
      std::vector<mad::LocalPort> ports;
      for (int i = 1; i <= 8; ++i) {
        mad::LocalPort p;
        p.ca = "mlx5_" + std::to_string(i - 1);
        p.port = i;  // distinct per rail: the fake's GUID follows it
        p.state = 4;
        p.link_layer = "InfiniBand";
        p.lid = static_cast<std::uint16_t>(10 + i);
        p.sm_lid = 1;
        ports.push_back(p);
      }
      return ports;
    });
  }
  testing::Collected Collect() {
    MetricSink sink;
    testing::Collected c;
    c.ok = collector->Collect(sink);
    c.families = sink.Take();
    now += 60;
    return c;
  }
  double now = 1000;
  std::uint32_t act = 1;
  int sminfo = 0;
  int descriptions = 0;
  CollectorEnv env;
  CollectorConfig config;
  std::unique_ptr<Collector> collector;
};

TEST(SmCollectorDedup, EightRailsOfOneSubnetAskTheMasterOnce) {
  Rig rig(1);
  auto c = rig.Collect();
  EXPECT_TRUE(c.ok);
  // First collection: every port asks once (it does not know its SM yet)
  // but the SM's name is asked once.
  EXPECT_EQ(rig.sminfo, 8);
  EXPECT_EQ(rig.descriptions, 1);
  for (int i = 0; i < 5; ++i) {
    rig.sminfo = rig.descriptions = 0;
    c = rig.Collect();
    EXPECT_TRUE(c.ok);
    EXPECT_EQ(rig.sminfo, 1) << "collection " << i;
    EXPECT_EQ(rig.descriptions, 0);
  }
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", mad::GuidString(0x100)}}),
            3);
}

TEST(SmCollectorDedup, EightSubnetsWithTheSameSmLidAskEverySm) {
  Rig rig(8);
  rig.Collect();
  for (int i = 0; i < 3; ++i) {
    rig.sminfo = rig.descriptions = 0;
    const auto c = rig.Collect();
    EXPECT_EQ(rig.sminfo, 8);
    EXPECT_EQ(rig.descriptions, 0);
    for (int p = 1; p <= 8; ++p) {
      EXPECT_EQ(
          c.Value("fabric_sm_state", {{"sm_guid", mad::GuidString(0x100 + p)}}),
          3)
          << p;
    }
  }
}

}  // namespace
}  // namespace fabric
