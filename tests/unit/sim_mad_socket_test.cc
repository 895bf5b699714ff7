// fabricmon-sim's MAD view across a process boundary (simulator/mad_socket.h)
// and the daemon's end of it (`--sim.mad-socket`, daemon/simulate.h): the
// answers through the socket are the in-process ones, what the model does
// not answer times out, garbage is ignored, and a daemon reading one host's
// tree sees that host's ports and the SM failover the model plays.
#include <gtest/gtest.h>
#include <iba/ib_types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "collectors/sm.h"
#include "daemon/simulate.h"
#include "simulator/mad.h"
#include "simulator/mad_socket.h"
#include "simulator/runner.h"
#include "sources/mad/codec.h"
#include "sources/sysfs.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;
using fabric::testing::Collected;
using std::chrono::milliseconds;
using std::chrono::seconds;

Mad SmInfoRequest() { return mad::SmpGet(mad::kAttrSmInfo, 0); }

MadResult Get(MadTransport& mad, std::uint16_t dlid, const Mad& request) {
  MadOptions options;
  options.timeout = milliseconds(200);
  options.retries = 0;
  return mad.Send({.dlid = dlid, .mad = request}, options);
}

// The response without its transaction id (the engine sets a new one per
// try), to compare with the in-process answer.
Mad WithoutTid(Mad m) {
  std::memset(m.data() + 8, 0, 8);
  return m;
}

// A 2-host fabric, sm-failover from t = 5 s, rendered into a temp dir and
// answering on <dir>/mad.sock; stepped by hand (Warmup), not in real time.
class SimMadSocket : public ::testing::Test {
 protected:
  SimMadSocket()
      : dir_(tmp_.path()),
        runner_(
            [] {
              SimConfig c;
              c.hosts = 2;
              c.timeline = SingleScenario(Scenario::kSmFailover);
              c.timeline.events[0].start = seconds(5);
              return c;
            }(),
            dir_),
        server_(runner_) {}
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(runner_.RenderNow(&error)) << error;
    ASSERT_TRUE(server_.Start(socket(), &error)) << error;
  }
  void TearDown() override { server_.Stop(); }
  std::string socket() const { return (dir_ / "mad.sock").string(); }
  std::uint64_t Guid(int host, const char* device) {
    std::uint64_t guid = 0;
    runner_.WithCluster(
        [&](const Cluster& c) { guid = c.FindPort(host, device)->guid; });
    return guid;
  }

  testing::TempDir tmp_{"fabricmon-sim-mad-socket"};
  fs::path dir_;
  LiveRunner runner_;
  MadSocketServer server_;
};

TEST_F(SimMadSocket, AnswersAsTheModelDoes) {
  std::string error;
  auto mad = ConnectMadSocket(socket(), Guid(0, "mlx5_0"), &error);
  ASSERT_NE(mad, nullptr) << error;
  const Mad request = SmInfoRequest();
  const MadResult r = Get(*mad, 1, request);
  ASSERT_TRUE(r.ok()) << r.error().message();
  runner_.WithCluster([&](const Cluster& c) {
    const MadResult local = AnswerMad(c, 1, request);
    ASSERT_TRUE(local.ok());
    EXPECT_EQ(WithoutTid(*r), WithoutTid(*local));
  });
  // Nobody has LID 999: no answer, the engine times out.
  EXPECT_EQ(Get(*mad, 999, request).error(), std::errc::timed_out);

  // t = 8 s: the master (LID 1) is dead, the standby (LID 2) took over.
  runner_.Warmup(seconds(8));
  EXPECT_EQ(Get(*mad, 1, request).error(), std::errc::timed_out);
  const MadResult standby = Get(*mad, 2, request);
  ASSERT_TRUE(standby.ok());
  ib_sm_info_t info;
  std::memcpy(&info, reinterpret_cast<const ib_smp_t*>(standby->data())->data,
              sizeof(info));
  EXPECT_EQ(ib_sminfo_get_state(&info), IB_SMINFO_STATE_MASTER);
  EXPECT_EQ(server_.ignored(), 0u);
}

TEST_F(SimMadSocket, IgnoresGarbageAndStopsCleanly) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket().c_str());
  const char garbage[] = "SET PortInfo please";
  ASSERT_EQ(::sendto(fd, garbage, sizeof(garbage), 0,
                     reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
            static_cast<ssize_t>(sizeof(garbage)));
  ::close(fd);
  std::string error;
  auto mad = ConnectMadSocket(socket(), Guid(0, "mlx5_0"), &error);
  ASSERT_NE(mad, nullptr) << error;
  EXPECT_TRUE(Get(*mad, 1, SmInfoRequest()).ok());
  EXPECT_EQ(server_.ignored(), 1u);

  server_.Stop();
  EXPECT_FALSE(fs::exists(socket()));
  EXPECT_EQ(ConnectMadSocket(socket(), 0, &error), nullptr);
  EXPECT_NE(error.find("mad.sock"), std::string::npos);
}

// The daemon's end: with --sim.mad-socket and --sysfs.root on host 1's
// tree, the MAD collectors' local ports are host 1's (from the tree) and
// the sm collector follows the model's failover through the socket.
TEST_F(SimMadSocket, DaemonOnAHostTreeSeesTheFailover) {
  AttachSimulatedMad(socket());
  CollectorEnv env;
  env.sysfs = MakeRealSysfs((dir_ / "host1").string());
  ASSERT_TRUE(UseSimulatedMad(&env));
  std::string error;
  const auto ports = env.local_ports(&error);
  ASSERT_EQ(ports.size(), 8u) << error;  // the IB HCAs, not the BlueField
  EXPECT_EQ(ports[0].ca, "mlx5_0");
  EXPECT_EQ(ports[0].port_guid, Guid(1, "mlx5_0"));
  runner_.WithCluster([&](const Cluster& c) {
    EXPECT_EQ(ports[0].lid, c.FindPort(1, "mlx5_0")->lid);
  });
  EXPECT_EQ(ports[0].sm_lid, 1);
  EXPECT_TRUE(ports[0].usable());

  CollectorConfig config;
  SmSettings s;
  s.mad.timeout = milliseconds(200);
  s.mad.retries = 0;
  config.settings = std::make_shared<SettingsOf<SmSettings>>(s);
  auto sm = MakeSmCollector(env, config);
  auto collect = [&] {
    MetricSink sink;
    Collected c;
    c.ok = sm->Collect(sink);
    c.families = sink.Take();
    return c;
  };
  std::string master, standby;
  runner_.WithCluster([&](const Cluster& c) {
    master = mad::GuidString(c.sms()[0].guid);
    standby = mad::GuidString(c.sms()[1].guid);
  });
  Collected c = collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_state", {{"sm_guid", master}}), 3);
  EXPECT_EQ(c.Value("fabric_sm_master_changes_total", {}), 0);

  runner_.Warmup(seconds(8));  // the standby is master
  ASSERT_TRUE(runner_.RenderNow(&error)) << error;
  c = collect();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_sm_info", {{"sm_guid", standby}, {"sm_lid", "2"}}),
            1);
  EXPECT_EQ(c.Value("fabric_sm_master_changes_total", {}), 1);
}

}  // namespace
}  // namespace fabric::sim
