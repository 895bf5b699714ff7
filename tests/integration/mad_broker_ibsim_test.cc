// The MAD broker (sources/mad/broker.h) on a real ibsim fabric with a real
// OpenSM:
//  - a compromised daemon: forged and raw requests written to the broker's
//    socket (a SubnSet(PortInfo) that would disable a port, a PMA Set that
//    would clear counters, raw MAD bytes, attributes off the list,
//    oversized and truncated messages) are refused and counted by reason,
//    and ibsim's state (smpquery, perfquery) shows none of them arrived;
//  - a daemon that cannot open umad at all (no umad2sim in its process:
//    the simulated equivalent of the unit without DeviceAllow) exports SM
//    state through a broker that systemd-socket-activate starts per
//    connection (as fabricmon-mad-broker.socket does, Accept=yes); a
//    killed broker is replaced on the next collection, and a dead daemon
//    takes its broker with it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <infiniband/mad.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sources/mad/broker_client.h"
#include "sources/mad/codec.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;
namespace broker = mad::broker;
using ::testing::HasSubstr;
using ::testing::Not;

// Pids of running fabricmon-mad-broker processes whose parent is `parent`
// (other tests may run brokers of their own at the same time).
std::vector<pid_t> BrokerPids(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so from the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    if (line.find("(fabricmon-mad-b") == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class MadBrokerIbsim : public ::testing::Test {
 protected:
  MadBrokerIbsim() : fabric_(FatTreeNetfile(1, 3)) {}
  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    fabric_.StartOpenSm({.sim_host = "hca0", .priority = 10});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  }

  // A broker attached to ibsim as `host`, spawned the way the daemon does
  // (broker::Connection), through a script that adds umad2sim.
  std::unique_ptr<broker::Connection> SpawnBroker(const std::string& host) {
    const std::string script = fabric_.dir() + "/broker-" + host + ".sh";
    std::ofstream(script) << "#!/bin/sh\nexec " << fabric_.ShellPrefix(host)
                          << Binary("fabricmon-mad-broker") << " \"$@\" 2>>"
                          << fabric_.dir() << "/broker.log\n";
    fs::permissions(script, fs::perms::owner_all);
    broker::Endpoint endpoint;
    endpoint.program = script;
    std::string error;
    auto c = broker::Connection::Open(endpoint, &error);
    EXPECT_TRUE(c) << error;
    return c;
  }

  std::string Smpquery(const std::string& what, int lid, int port = -1) {
    std::vector<std::string> argv = {"smpquery", what, std::to_string(lid)};
    if (port >= 0) argv.push_back(std::to_string(port));
    return fabric_.Run(argv, "hca2").out;
  }

  IbsimFabric fabric_;
};

// The typed request for a MAD the codec built (tid set).
broker::Request Typed(Mad mad, std::uint32_t tid, std::uint16_t dlid) {
  mad_set_field64(mad.data(), 0, IB_MAD_TRID_F, tid);
  broker::Request r = broker::MakeRequest(broker::Kind::kMad, tid);
  r.mad = broker::CallFromMad(dlid, mad, std::chrono::milliseconds(500));
  return r;
}

TEST_F(MadBrokerIbsim, ACompromisedDaemonCannotChangeTheFabric) {
  // The switch's LID and the port hca1 hangs off (ibnetdiscover's view).
  const std::string nodes = fabric_.Run({"ibswitches"}, "hca2").out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(nodes, m, std::regex(R"(lid (\d+))"))) << nodes;
  const int sw = std::stoi(m[1]);
  const std::string portinfo_before = Smpquery("portinfo", sw, 2);
  ASSERT_THAT(portinfo_before, HasSubstr("LinkUp"));
  const std::string counters_before =
      fabric_.Run({"perfquery", std::to_string(sw), "2"}, "hca2").out;

  auto c = SpawnBroker("hca1");
  ASSERT_TRUE(c);
  auto call = [&](const broker::Request& r) {
    auto reply = c->Call(r, std::chrono::seconds(10));
    EXPECT_TRUE(reply) << "no reply";
    return reply.value_or(broker::Reply{});
  };
  auto raw = [&](const std::vector<std::uint8_t>& bytes) {
    EXPECT_GE(::send(c->fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL), 0);
    auto reply = c->Receive(std::chrono::seconds(10));
    EXPECT_TRUE(reply) << "no reply";
    return reply ? reply->refusal : broker::Refusal::kNone;
  };
  ASSERT_EQ(call(broker::MakeRequest(broker::Kind::kOpen, 1)).status,
            broker::Status::kOk);
  // A legitimate Get goes through: the path is live.
  const auto ok = call(Typed(mad::SmpGet(mad::kAttrNodeInfo, 0), 0x100, sw));
  ASSERT_EQ(ok.status, broker::Status::kOk) << ok.error;

  // SubnSet(PortInfo) with PortState=Down for the switch port: as a typed
  // request, and as the raw MAD a tool would write.
  Mad set = mad::SmpGet(mad::kAttrPortInfo, 2);
  mad_set_field(set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  mad_set_field(set.data() + IB_SMP_DATA_OFFS, 0, IB_PORT_STATE_F, 1);
  mad_set_field(set.data() + IB_SMP_DATA_OFFS, 0, IB_PORT_PHYS_STATE_F, 3);
  EXPECT_EQ(call(Typed(set, 0x101, sw)).refusal, broker::Refusal::kMethod);
  EXPECT_EQ(raw(std::vector<std::uint8_t>(set.begin(), set.end())),
            broker::Refusal::kMalformed);
  // A Set disguised as a Get: the raw Set MAD with the method byte turned
  // to Get, prefixed with a valid request header, still has no place for
  // its payload.
  Mad disguised = set;
  mad_set_field(disguised.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_GET);
  auto header = broker::EncodeRequest(Typed(disguised, 0x102, sw));
  header.insert(header.end(), disguised.begin(), disguised.end());
  EXPECT_EQ(raw(header), broker::Refusal::kMalformed);
  // The same directed route, Set.
  Mad dr_set = mad::DrSmpGet(mad::kAttrPortInfo, 2, {1});
  mad_set_field(dr_set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  EXPECT_EQ(call(Typed(dr_set, 0x103, kPermissiveLid)).refusal,
            broker::Refusal::kMethod);
  // PortCounters Set: what `perfquery -R` sends to clear counters.
  Mad clear = mad::PerfGet(mad::kAttrPortCounters, 2);
  mad_set_field(clear.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  EXPECT_EQ(call(Typed(clear, 0x104, sw)).refusal, broker::Refusal::kMethod);
  // Attributes off the list: P_KeyTable, SLtoVLMappingTable, a vendor one.
  for (std::uint16_t attr : {0x16, 0x17, 0xff90}) {
    EXPECT_EQ(call(Typed(mad::SmpGet(attr, 0), 0x105 + attr, sw)).refusal,
              broker::Refusal::kAttribute)
        << attr;
  }
  EXPECT_EQ(raw(std::vector<std::uint8_t>(broker::kMaxMessage + 1, 0x03)),
            broker::Refusal::kMalformed);
  EXPECT_EQ(raw({broker::kVersion, 3, 0, 0, 7}), broker::Refusal::kMalformed);

  const auto stats = call(broker::MakeRequest(broker::Kind::kStats, 2));
  ASSERT_EQ(stats.refused.size(),
            static_cast<std::size_t>(broker::Refusal::kCount));
  auto count = [&](broker::Refusal r) {
    return stats.refused[static_cast<std::size_t>(r)];
  };
  EXPECT_EQ(count(broker::Refusal::kMethod), 3u);
  EXPECT_EQ(count(broker::Refusal::kAttribute), 3u);
  EXPECT_EQ(count(broker::Refusal::kMalformed), 4u);
  // The broker's journal names them too.
  c.reset();
  EXPECT_THAT(ReadAll(fabric_.dir() + "/broker.log"),
              HasSubstr("refused method request"));

  // ibsim's own state: the port is still up, its counters not cleared.
  EXPECT_EQ(Smpquery("portinfo", sw, 2), portinfo_before);
  const std::string counters_after =
      fabric_.Run({"perfquery", std::to_string(sw), "2"}, "hca2").out;
  std::smatch before, after;
  const std::regex xmit(R"(PortXmitData:\.*(\d+))");
  ASSERT_TRUE(std::regex_search(counters_before, before, xmit));
  ASSERT_TRUE(std::regex_search(counters_after, after, xmit));
  EXPECT_GE(std::stoull(after[1]), std::stoull(before[1]));
}

// Issue 40 item 8: an empty datagram is counted and the broker serves on;
// a directed route deeper than any real fabric (63 hops bouncing through
// the switch) is refused, never sent; a real discovery route still works.
TEST_F(MadBrokerIbsim, EmptyDatagramsAndBouncingRoutesAreRefusedNotFatal) {
  auto c = SpawnBroker("hca1");
  ASSERT_TRUE(c);
  auto call = [&](const broker::Request& r) {
    auto reply = c->Call(r, std::chrono::seconds(10));
    EXPECT_TRUE(reply) << "no reply: the broker ended the session";
    return reply.value_or(broker::Reply{});
  };
  ASSERT_EQ(call(broker::MakeRequest(broker::Kind::kOpen, 1)).status,
            broker::Status::kOk);
  ASSERT_EQ(::send(c->fd(), "", 0, MSG_NOSIGNAL), 0);
  const auto stats = call(broker::MakeRequest(broker::Kind::kStats, 2));
  ASSERT_EQ(stats.refused.size(),
            static_cast<std::size_t>(broker::Refusal::kCount));
  EXPECT_EQ(
      stats.refused[static_cast<std::size_t>(broker::Refusal::kMalformed)], 1u);
  mad::DrPath bounce(63, 1);  // out of hca1, then port 1 of the switch ...
  EXPECT_EQ(call(Typed(mad::DrSmpGet(mad::kAttrNodeInfo, 0, bounce), 0x200,
                       kPermissiveLid))
                .refusal,
            broker::Refusal::kDestination);
  const auto ok = call(
      Typed(mad::DrSmpGet(mad::kAttrNodeInfo, 0, {1}), 0x201, kPermissiveLid));
  EXPECT_EQ(ok.status, broker::Status::kOk) << ok.error;
  c.reset();
  EXPECT_THAT(ReadAll(fabric_.dir() + "/broker.log"),
              HasSubstr("empty message"));
}

TEST_F(MadBrokerIbsim, ADaemonWithoutUmadExportsSmStateThroughTheBroker) {
  if (::access("/usr/bin/systemd-socket-activate", X_OK) != 0) {
    MISSING_DEPENDENCY("systemd-socket-activate (Debian package systemd)");
  }
  const std::string sock = fabric_.dir() + "/broker.sock";
  // As fabricmon-mad-broker.socket: one broker per connection (Accept=yes),
  // the connection as fd 3; only the broker gets umad2sim.
  const pid_t activator = fabric_.StartClient(
      {"systemd-socket-activate", "--seqpacket", "--accept", "-l", sock, "-E",
       "LD_PRELOAD", "-E", "IBSIM_SOCKNAME", "-E", "SIM_HOST",
       Binary("fabricmon-mad-broker")},
      "hca1", fabric_.dir() + "/activator.log");
  ASSERT_GT(activator, 0);
  ASSERT_TRUE(
      WaitFor([&] { return fs::exists(sock); }, std::chrono::seconds(30)));
  const int port = FreeLoopbackPort();
  const std::string config = fabric_.dir() + "/fabricmon.yaml";
  std::ofstream(config) << SmFabricConfig(port, "10m") << "mad_broker: " << sock
                        << "\n";
  // `env -u` drops what StartClient adds: the daemon has no umad at all.
  const pid_t daemon = fabric_.StartClient(
      {"env", "-u", "LD_PRELOAD", "-u", "SIM_HOST", "-u", "IBSIM_SOCKNAME",
       Binary("fabricmon"), "--config", config},
      "hca1", fabric_.dir() + "/fabricmon.log");
  ASSERT_GT(daemon, 0);
  auto sm_ok = [](const std::map<std::string, double>& s) {
    auto it = s.find("fabric_collector_success{collector=\"sm\"}");
    return it != s.end() && it->second == 1 &&
           s.count("fabric_sm_masters") +
               s.count("fabric_sm_master_changes_total");
  };
  auto s = ScrapeUntil(port, sm_ok, std::chrono::seconds(90));
  ASSERT_TRUE(s) << ReadAll(fabric_.dir() + "/fabricmon.log");
  EXPECT_EQ(s->at("fabric_collector_success{collector=\"fabric\"}"), 1);
  EXPECT_EQ(s->at("fabric_mad_broker_refused_total{reason=\"method\"}"), 0);
  // The daemon process never loaded umad2sim: it could not open umad.
  const fs::path proc = "/proc/" + std::to_string(daemon);
  EXPECT_THAT(ReadAll(proc / "maps"), Not(HasSubstr("umad2sim")));
  EXPECT_THAT(ReadAll(proc / "environ"), Not(HasSubstr("LD_PRELOAD")));

  // A broker killed mid-run: the collectors fail with the reason logged,
  // then the next connection starts a new broker.
  for (pid_t b : BrokerPids(activator)) ::kill(b, SIGKILL);
  auto lost = ScrapeUntil(
      port,
      [](const std::map<std::string, double>& s) {
        auto it = s.find("fabric_mad_broker_connections_lost_total");
        return it != s.end() && it->second >= 1;
      },
      std::chrono::seconds(60));
  ASSERT_TRUE(lost);
  ASSERT_TRUE(ScrapeUntil(port, sm_ok, std::chrono::seconds(60)))
      << ReadAll(fabric_.dir() + "/fabricmon.log");
  EXPECT_FALSE(BrokerPids(activator).empty());

  // A reload that changes the MAD collectors' settings rebuilds them: new
  // connections, the old ones closed (their brokers exit), SM state again.
  std::ofstream(config) << SmFabricConfig(port, "5m") << "mad_broker: " << sock
                        << "\n";
  ::kill(daemon, SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadAll(fabric_.dir() + "/fabricmon.log").find("reload done") !=
               std::string::npos;
      },
      std::chrono::seconds(60)))
      << ReadAll(fabric_.dir() + "/fabricmon.log");
  ASSERT_TRUE(ScrapeUntil(port, sm_ok, std::chrono::seconds(60)));
  // One broker per connection in use (the port list's and the port's),
  // not one more per reload.
  EXPECT_TRUE(WaitFor([&] { return BrokerPids(activator).size() <= 2; },
                      std::chrono::seconds(30)))
      << BrokerPids(activator).size();

  // The daemon dies: its brokers see the connection close and exit.
  ::kill(daemon, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return BrokerPids(activator).empty(); },
                      std::chrono::seconds(30)));
}

}  // namespace
}  // namespace fabric::testing
