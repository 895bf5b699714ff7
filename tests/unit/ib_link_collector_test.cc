// The ib_link collector (the node's own IB ports over MADs) on the in-house
// simulator's fabric through its MadTransport: PortInfo width/speed of the
// port and of the switch port at the other end of its cable, PESC in the
// RS-FEC layout the port's PortInfoExtended picks; a PMA that drops 0x1F
// (as ibsim's does) is probed once per LID and counted, not asked again;
// `pesc: false` sends no PESC-related MAD. Settings through the registry's
// parser.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <memory>

#include "collectors/ib_link.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "simulator/mad.h"
#include "simulator/model.h"
#include "sources/mad/codec.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

using fabric::testing::Collected;
using std::chrono::milliseconds;

// The simulator's transport with PMA attributes dropped (counted), as a PMA
// without them leaves them unanswered.
class Dropping : public MadTransport {
 public:
  Dropping(std::unique_ptr<MadTransport> inner, std::uint16_t attr, int* sent)
      : inner_(std::move(inner)), attr_(attr), sent_(sent) {}
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds timeout) override {
    const unsigned attr = mad_get_field(const_cast<std::uint8_t*>(mad.data()),
                                        0, IB_MAD_ATTRID_F);
    const bool perf = mad[1] == kMadClassPerf;
    if (perf && attr == mad::kAttrClassPortInfo) ++sent_[0];
    if (perf && attr == mad::kAttrPortExtendedSpeedsCounters) ++sent_[1];
    if (perf && attr == attr_) return true;  // sent; nobody answers
    return static_cast<MadTransport&>(*inner_).Post(dlid, mad, timeout);
  }
  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override {
    static_cast<MadTransport&>(*inner_).Poll(wait, answers);
  }

 private:
  std::unique_ptr<MadTransport> inner_;
  std::uint16_t attr_;
  int* sent_;  // [0] ClassPortInfo, [1] PESC
};

struct IbLinkRig {
  // `drop`: a PerfMgt attribute the PMA leaves unanswered (0: none).
  explicit IbLinkRig(std::uint16_t drop = 0, bool pesc = true)
      : cluster([] {
          sim::SimConfig c;
          c.hosts = 2;
          return c;
        }()) {
    local = cluster.FindPort(0, "mlx5_0");
    const int index = static_cast<int>(local - cluster.ports().data());
    env.mad = [this, index, drop](const std::string&, int) {
      return std::make_unique<Dropping>(
          sim::MakeSimMadTransport(cluster, {.local_port = index}), drop, sent);
    };
    IbLinkSettings s;
    s.mad.timeout = milliseconds(20);
    s.mad.retries = 0;
    s.pesc = pesc;
    config.settings = std::make_shared<SettingsOf<IbLinkSettings>>(s);
    collector = MakeIbLinkCollector(env, config, [this](std::string*) {
      mad::LocalPort p;
      p.ca = "mlx5_0";
      p.port = 1;
      p.state = 4;
      p.phys_state = 5;
      p.link_layer = "InfiniBand";
      p.lid = local->lid;
      return std::vector<mad::LocalPort>{p};
    });
  }
  Collected Collect() {
    MetricSink sink;
    Collected c;
    c.ok = collector->Collect(sink);
    c.skipped = sink.skipped();
    c.reasons = sink.skip_reasons();
    c.families = sink.Take();
    return c;
  }

  sim::Cluster cluster;
  const sim::Port* local = nullptr;
  CollectorEnv env;
  CollectorConfig config;
  std::unique_ptr<Collector> collector;
  int sent[2] = {0, 0};
};

const std::map<std::string, std::string> kPort = {{"device", "mlx5_0"},
                                                  {"port", "1"}};

TEST(IbLinkCollector, ReadsOwnAndRemoteSpeedsAndRsFecPesc) {
  IbLinkRig rig;
  const Collected c = rig.Collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u) << (c.reasons.empty() ? "" : c.reasons[0]);
  // The simulated NDR port: 4x at 100 Gb/s per lane, and so can its switch
  // port.
  const double ndr = 100e9 / 8;
  EXPECT_EQ(c.Value("fabric_port_lane_rate_bytes_per_second", kPort), ndr);
  EXPECT_EQ(c.Value("fabric_port_lane_rate_capable_bytes_per_second", kPort),
            ndr);
  EXPECT_EQ(c.Value("fabric_port_link_width_capable_lanes", kPort), 4);
  EXPECT_EQ(
      c.Value("fabric_port_remote_lane_rate_capable_bytes_per_second", kPort),
      ndr);
  EXPECT_EQ(c.Value("fabric_port_remote_link_width_capable_lanes", kPort), 4);
  // ib_port exports these from sysfs; a second source would duplicate them.
  EXPECT_EQ(c.Family("fabric_port_link_width_lanes"), nullptr);
  EXPECT_EQ(c.Family("fabric_port_rate_bytes_per_second"), nullptr);
  // RS-FEC layout (the port reports PortInfoExtended, RS-FEC active).
  EXPECT_EQ(c.Value("fabric_port_fec_corrected_symbols_total", kPort),
            static_cast<double>(rig.local->fec_corrected_bits));
  EXPECT_TRUE(c.Value("fabric_port_fec_uncorrectable_blocks_total", kPort));
  EXPECT_EQ(
      c.Find("fabric_port_fec_lane_corrected_symbols_total", kPort).size(),
      4u);  // the active width's lanes
  EXPECT_EQ(c.Family("fabric_port_phy_lane_errors_total"), nullptr);
  EXPECT_EQ(c.Value("fabric_ib_link_pesc_unsupported_ports", {}), 0);
  // Supported: ClassPortInfo once, PESC each collection.
  rig.Collect();
  EXPECT_EQ(rig.sent[0], 1);
  EXPECT_EQ(rig.sent[1], 2);
}

TEST(IbLinkCollector, PmaWithoutPescIsProbedOnceAndCounted) {
  IbLinkRig rig(mad::kAttrPortExtendedSpeedsCounters);
  for (int i = 0; i < 3; ++i) {
    const Collected c = rig.Collect();
    ASSERT_TRUE(c.ok);
    EXPECT_EQ(c.skipped, 0u) << "not logged per port";
    EXPECT_EQ(c.Value("fabric_ib_link_pesc_unsupported_ports", {}), 1);
    EXPECT_EQ(c.Family("fabric_port_fec_corrected_symbols_total"), nullptr);
    EXPECT_EQ(c.Family("fabric_port_sync_header_errors_total"), nullptr);
    // Speeds still read.
    EXPECT_TRUE(c.Value("fabric_port_lane_rate_bytes_per_second", kPort));
  }
  EXPECT_EQ(rig.sent[1], 1);
}

TEST(IbLinkCollector, PmaWithoutClassPortInfoIsUnsupported) {
  IbLinkRig rig(mad::kAttrClassPortInfo);
  const Collected c = rig.Collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_ib_link_pesc_unsupported_ports", {}), 1);
  EXPECT_EQ(rig.sent[1], 0);
}

TEST(IbLinkCollector, PescOffSendsNoPescMad) {
  IbLinkRig rig(0, false);
  const Collected c = rig.Collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(rig.sent[0] + rig.sent[1], 0);
  EXPECT_EQ(c.Family("fabric_ib_link_pesc_unsupported_ports"), nullptr);
  EXPECT_TRUE(c.Value("fabric_port_lane_rate_bytes_per_second", kPort));
}

TEST(IbLinkCollector, NoPortIsQuietSuccess) {
  IbLinkRig rig;
  auto collector = MakeIbLinkCollector(rig.env, rig.config, [](std::string*) {
    return std::vector<mad::LocalPort>{};
  });
  MetricSink sink;
  EXPECT_TRUE(collector->Collect(sink));
  EXPECT_TRUE(sink.Take().empty());
}

TEST(IbLinkCollector, SettingsParse) {
  std::string error;
  const auto c = ParseConfig(
      "collectors:\n  ib_link: {interval: 15s, mad_timeout: 50ms, "
      "mad_retries: 1, pesc: false}\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(c) << error;
  const auto& s = SettingsAs<IbLinkSettings>(c->Collector("ib_link"));
  EXPECT_EQ(s.mad.timeout, milliseconds(50));
  EXPECT_EQ(s.mad.retries, 1);
  EXPECT_FALSE(s.pesc);
  EXPECT_FALSE(ParseConfig("collectors:\n  ib_link: {pesc: maybe}\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("pesc"), std::string::npos) << error;
}

}  // namespace
}  // namespace fabric
