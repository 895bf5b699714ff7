// Integration: the real SIOCETHTOOL reader and the real DCB netlink reader
// against kernel interfaces. The test creates its own network namespace with
// a veth pair (ip netns / ip link), reads both ends from a thread that
// entered the namespace with setns(2), reads lo and any virtio interface of
// the host namespace, and deletes the namespace. No traffic is sent.
// Needs root (CAP_SYS_ADMIN for netns); skips with the reason otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "collectors/roce.h"
#include "sources/dcb_netlink.h"
#include "sources/ethtool_ioctl.h"
#include "tests/support/ci.h"
#include "tests/support/shell.h"

namespace fabric {
namespace {

using testing::Sh;

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class EthtoolNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root to create a netns");
    if (!Sh("ip -V")) MISSING_DEPENDENCY("iproute2 `ip` not installed");
    ns_ = "fmethtool" + std::to_string(::getpid());
    if (!Sh("ip netns add " + ns_)) {
      ns_.clear();
      MISSING_DEPENDENCY("ip netns add failed (no netns support here?)");
    }
    ASSERT_TRUE(Sh("ip -n " + ns_ + " link add va type veth peer name vb"));
    ASSERT_TRUE(Sh("ip -n " + ns_ + " link set va up"));
    ASSERT_TRUE(Sh("ip -n " + ns_ + " link set vb up"));
  }
  void TearDown() override {
    if (!ns_.empty()) {
      EXPECT_TRUE(Sh("ip netns del " + ns_));
    }
  }

  // Runs `fn` on a thread that has entered the test namespace.
  template <typename Fn>
  void InNetns(Fn fn) {
    bool entered = false;
    testing::InNetns(ns_, fn, &entered);
    ASSERT_TRUE(entered) << "setns failed";
  }

  std::string ns_;
};

TEST_F(EthtoolNetnsTest, ReadsBothVethEndsInsideTheNamespace) {
  InNetns([] {
    IoctlEthtoolSource source;
    for (const char* end : {"va", "vb"}) {
      EthtoolResult r = source.Stats(end);
      ASSERT_TRUE(r.ok()) << end << ": " << r.error().message();
      EXPECT_EQ(r->driver, "veth");
      ASSERT_FALSE(r->names.empty()) << end;
      EXPECT_EQ(r->names.size(), r->values.size());
      EXPECT_TRUE(Has(r->names, "peer_ifindex")) << end;
      EXPECT_EQ(r->hw_address.size(), 17u) << r->hw_address;
      // veth has no mlx5 counters: an empty RoCE view, no error.
      EXPECT_EQ(ParseEthtoolStats(r->names, r->values).recognized, 0u);
    }
    // Values are real: veth reports its peer's ifindex as a statistic.
    EthtoolResult va = source.Stats("va");
    ASSERT_TRUE(va.ok());
    auto it = std::find(va->names.begin(), va->names.end(), "peer_ifindex");
    ASSERT_NE(it, va->names.end());
    EXPECT_EQ(va->values[it - va->names.begin()], ::if_nametoindex("vb"));
    // Steady state: the string table is cached, so a collection is
    // GDRVINFO + GSSET_INFO + GSTATS + SIOCGIFHWADDR.
    std::uint64_t before = source.ioctl_count();
    ASSERT_TRUE(source.Stats("va").ok());
    EXPECT_EQ(source.ioctl_count() - before, 4u);
    // lo of the namespace: no driver statistics, which is not an error.
    EthtoolResult lo = source.Stats("lo");
    EXPECT_TRUE(lo.ok()) << lo.error().message();
    EXPECT_TRUE(lo->names.empty());
    EXPECT_EQ(lo->hw_address, "");  // not Ethernet
    // The host's interfaces are not visible from in here.
    EthtoolResult missing = source.Stats("nosuchdev0");
    EXPECT_EQ(missing.error(), std::errc::no_such_device);
    EthtoolResult bad = source.Stats("much_too_long_ifname");
    EXPECT_FALSE(bad.ok());
  });
}

TEST_F(EthtoolNetnsTest, DcbOnVethIsUnsupportedAndTheMetricIsAbsent) {
  InNetns([] {
    auto dcb = MakeRealDcbSource();
    DcbResult r = dcb->Ieee("va");
    EXPECT_EQ(r.error(), std::errc::operation_not_supported)
        << r.error().message();
    DcbResult gone = dcb->Ieee("nosuchdev0");
    EXPECT_FALSE(gone.ok());

    // The whole collector with the real sources on the veth end.
    CollectorEnv env;
    env.sysfs = MakeRealSysfs("/nonexistent-sysfs-root");
    RoceOptions options;
    options.netdevs = std::vector<RoceNetdev>{{"", "", "va"}};
    auto c = MakeRoceCollector(env, options, MakeRealEthtoolSource(),
                               MakeRealDcbSource());
    MetricSink sink;
    EXPECT_TRUE(c->Collect(sink));
    EXPECT_EQ(sink.skipped(), 0u);
    auto fams = sink.Take();
    // The netdev and its link speed (veth: 10 Gb/s, no link modes, so no
    // capable speed to compare it with).
    ASSERT_EQ(fams.size(), 2u);
    EXPECT_EQ(fams[0].name, "fabric_roce_link_speed_bytes_per_second");
    EXPECT_EQ(fams[0].metric.at(0).gauge.value, 10e9 / 8);
    EXPECT_EQ(fams[1].name, "fabric_roce_netdev_info");
    bool veth = false;
    for (const auto& l : fams[1].metric.at(0).label) {
      veth |= l.name == "driver" && l.value == "veth";
    }
    EXPECT_TRUE(veth);
  });
}

// ETHTOOL_GLINKSETTINGS on the veth (the nwords handshake, the kernel's
// link mode names): veth reports 10000 Mb/s and no link modes; a netdev
// that does not exist is ENODEV.
TEST_F(EthtoolNetnsTest, LinkSettingsOfTheVeth) {
  InNetns([] {
    IoctlEthtoolSource source;
    EthtoolLinkResult r = source.Link("va");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->speed_mbps, 10000u);
    EXPECT_TRUE(r->supported.empty());
    EXPECT_TRUE(r->partner.empty());
    EXPECT_FALSE(CapableMbps(*r));
    EXPECT_EQ(source.Link("nosuchdev0").error(), std::errc::no_such_device);
  });
}

TEST(EthtoolHostTest, LoopbackAndVirtioInTheHostNamespace) {
  IoctlEthtoolSource source;
  EthtoolResult lo = source.Stats("lo");
  ASSERT_TRUE(lo.ok()) << lo.error().message();
  EXPECT_TRUE(lo->names.empty());
  int virtio = 0;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/sys/class/net", ec)) {
    auto driver = std::filesystem::read_symlink(e.path() / "device/driver", ec);
    if (ec || driver.filename() != "virtio_net") continue;
    const std::string name = e.path().filename();
    EthtoolResult r = source.Stats(name);
    ASSERT_TRUE(r.ok()) << name << ": " << r.error().message();
    EXPECT_EQ(r->driver, "virtio_net");
    EXPECT_EQ(r->names.size(), r->values.size());
    EXPECT_FALSE(r->names.empty()) << name;
    ++virtio;
  }
  if (virtio == 0) {
    GTEST_SKIP() << "lo checked; no virtio_net interface on this host";
  }
}

}  // namespace
}  // namespace fabric
