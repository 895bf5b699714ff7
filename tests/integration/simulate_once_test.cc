// `fabricmon --simulate=SCENARIO --once`: the daemon binary on its built-in
// simulated host reads the simulated NIC's ethtool statistics (the dumps
// the simulator writes to <tree>/ethtool/, config ethtool_dir set by
// --simulate), so the PFC metrics exist: pfc-storm shows the storm's pause
// frames and storm events, steady shows the same series at zero.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "simulator/timeline.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

const std::string kTx =
    "{device=\"mlx5_bond_0\",direction=\"tx\",netdev=\"bond0\",port=\"1\","
    "priority=\"3\"}";
const std::string kStormError =
    "{device=\"mlx5_bond_0\",level=\"error\",netdev=\"bond0\",port=\"1\"}";
const std::string kStormWarning =
    "{device=\"mlx5_bond_0\",level=\"warning\",netdev=\"bond0\",port=\"1\"}";

std::map<std::string, double> SimulateOnce(const std::string& scenario) {
  const auto r = testing::RunCommand(testing::Binary("fabricmon") +
                                     " --simulate=" + scenario +
                                     " --once --config /dev/null 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << scenario;
  return testing::ParseSamples(r.out);
}

double At(const std::map<std::string, double>& samples,
          const std::string& series) {
  auto it = samples.find(series);
  if (it == samples.end()) {
    ADD_FAILURE() << "no series " << series;
    return -1;
  }
  return it->second;
}

class SimulateOnceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(testing::Binary("fabricmon").c_str(), X_OK) != 0) {
      MISSING_DEPENDENCY("fabricmon is not built");
    }
  }
};

TEST_F(SimulateOnceTest, PfcStormShowsPauseFramesAndStormEvents) {
  const auto s = SimulateOnce("pfc-storm");
  // The storm ran 8 s of the 60 s of simulated history: one pause frame per
  // 100 us sent on priority 3 while it lasted, then the NIC gave up.
  EXPECT_GT(At(s, "fabric_pfc_pause_frames_total" + kTx), 10000);
  EXPECT_GT(At(s, "fabric_pfc_pause_duration_seconds_total" + kTx), 1);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormWarning), 1);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormError), 1);
  EXPECT_EQ(At(s, "fabric_collector_success{collector=\"roce\"}"), 1);
  EXPECT_EQ(At(s, "fabric_collector_skipped_inputs{collector=\"roce\"}"), 0);
  EXPECT_EQ(At(s, "fabric_collector_success{collector=\"congestion\"}"), 1);
  EXPECT_EQ(At(s,
               "fabric_roce_netdev_info{device=\"mlx5_bond_0\","
               "driver=\"\",netdev=\"bond0\",port=\"1\"}"),
            1);
}

TEST_F(SimulateOnceTest, SteadyHasTheSameSeriesAtZero) {
  const auto s = SimulateOnce("steady");
  EXPECT_EQ(At(s, "fabric_pfc_pause_frames_total" + kTx), 0);
  EXPECT_EQ(At(s, "fabric_pfc_pause_storm_events_total" + kStormError), 0);
  // Traffic on the RoCE priority is there, so the dumps are live data.
  EXPECT_GT(At(s,
               "fabric_roce_priority_bytes_total{device=\"mlx5_bond_0\","
               "direction=\"tx\",netdev=\"bond0\",port=\"1\",priority=\"3\"}"),
            0);
}

// The simulated host runs the simulator's default Slurm job (simulator/
// slurm.h), which the jobs collector reads from the private tree: its
// cgroup, and its task's environment below the tree's proc/.
TEST_F(SimulateOnceTest, SteadyRunsTheDefaultSlurmJob) {
  const auto s = SimulateOnce("steady");
  EXPECT_EQ(At(s,
               "fabric_node_job_info{job_id=\"4711\",job_name=\"llama-70b\","
               "nodelist=\"host0\",scheduler=\"slurm\",user=\"alice\"}"),
            1);
}

// The value of the one series of `samples` matching `pattern`, and its
// text; fails when there is not exactly one.
std::pair<std::string, double> One(const std::map<std::string, double>& samples,
                                   const std::string& pattern) {
  std::vector<std::pair<std::string, double>> found;
  for (const auto& kv : samples) {
    if (std::regex_match(kv.first, std::regex(pattern))) found.push_back(kv);
  }
  if (found.size() != 1) {
    ADD_FAILURE() << found.size() << " series match " << pattern;
    return {"", -1};
  }
  return found[0];
}

std::string GuidOf(const std::string& series) {
  std::smatch m;
  std::regex_search(series, m, std::regex("sm_guid=\"([^\"]+)\""));
  return m[1];
}

// The SMs and the switches come from the simulator's MAD view. steady: the
// local ports' master is the spine's SM; the fabric collector swept the
// spine and the rail leaves. After sm-failover (at the start of the
// simulated history) the master is the standby on ib-leaf0 (LID 2) and the
// dead old master is gone. (--once runs the sm collector before the fabric
// collector, so it asks only the local ports' master; the running daemon
// asks every SM discovery found: SmCollector unit tests.)
TEST_F(SimulateOnceTest, SmSeriesShowTheMasterAndTheFailover) {
  const auto steady = SimulateOnce("steady");
  EXPECT_EQ(At(steady, "fabric_collector_success{collector=\"sm\"}"), 1);
  EXPECT_EQ(At(steady, "fabric_collector_success{collector=\"fabric\"}"), 1);
  const auto spine = One(
      steady, "fabric_sm_info\\{node=\"ib-spine\",sm_guid=.*,sm_lid=\"1\"\\}");
  const std::string spine_state =
      "fabric_sm_state{sm_guid=\"" + GuidOf(spine.first) + "\"}";
  EXPECT_EQ(At(steady, spine_state), 3);
  EXPECT_EQ(At(steady, "fabric_sweep_unreachable_nodes"), 0);
  One(steady, "fabric_switch_info\\{.*switch=\"ib-spine\".*");
  One(steady, "fabric_switch_info\\{.*switch=\"ib-leaf7\".*");

  const auto failover = SimulateOnce("sm-failover");
  const auto leaf =
      One(failover,
          "fabric_sm_info\\{node=\"ib-leaf0\",sm_guid=.*,sm_lid=\"2\"\\}");
  EXPECT_EQ(
      At(failover, "fabric_sm_state{sm_guid=\"" + GuidOf(leaf.first) + "\"}"),
      3);
  EXPECT_EQ(failover.count(spine_state), 0u);
}

// sm-hung: the master still answers, its ActCount frozen since the start of
// the simulated history, where steady's has moved on.
TEST_F(SimulateOnceTest, SmHungFreezesTheMastersActivity) {
  const auto steady = SimulateOnce("steady");
  const auto hung = SimulateOnce("sm-hung");
  const auto master = One(steady, "fabric_sm_info\\{node=\"ib-spine\".*");
  const std::string series =
      "fabric_sm_activity_total{sm_guid=\"" + GuidOf(master.first) + "\"}";
  EXPECT_LT(At(hung, series), At(steady, series));
  EXPECT_EQ(
      At(hung, "fabric_sm_state{sm_guid=\"" + GuidOf(master.first) + "\"}"), 3);
}

// A daemon on the simulated host, started with `config` (a listen address
// is added) on `scenario`; killed (by pid) when it goes out of scope.
class SimulatedDaemon {
 public:
  SimulatedDaemon(const std::string& scenario, const std::string& config,
                  const std::string& dir)
      : port_(testing::FreeLoopbackPort()) {
    const std::string path = dir + "/fabricmon.yaml";
    std::ofstream(path) << "listen_address: \"127.0.0.1:" << port_ << "\"\n"
                        << config;
    pid_ = fork();
    if (pid_ == 0) {
      const std::string bin = testing::Binary("fabricmon");
      const std::string sim = "--simulate=" + scenario;
      const std::string log = dir + "/fabricmon.log";
      freopen(log.c_str(), "w", stderr);
      execl(bin.c_str(), bin.c_str(), sim.c_str(), "--config", path.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~SimulatedDaemon() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
};

// Live: a failover 10 s into the daemon's run (70 s of simulated time, after
// the 60 s of history) is counted, and the standby is master from then on.
TEST_F(SimulateOnceTest, LiveFailoverIsCountedAndHungMasterStalls) {
  testing::TempDir tmp("fabricmon-simulate-once");
  const std::string dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  std::ofstream(dir + "/failover.yaml")
      << "events:\n  - scenario: steady\n  - scenario: sm-failover\n"
         "    start: 70s\n";
  const std::string config =
      "collectors:\n"
      "  congestion: {enabled: false}\n"
      "  sm: {interval: 1s, stall_after: 3s}\n";
  {
    SimulatedDaemon daemon(dir + "/failover.yaml", config, dir);
    const auto s = testing::ScrapeUntil(
        daemon.port(),
        [](const auto& x) {
          auto it = x.find("fabric_sm_master_changes_total");
          return it != x.end() && it->second == 1;
        },
        std::chrono::seconds(120));
    ASSERT_TRUE(s) << "no failover counted";
    One(*s, "fabric_sm_info\\{node=\"ib-leaf0\",sm_guid=.*,sm_lid=\"2\"\\}");
  }
  {
    SimulatedDaemon daemon("sm-hung", config, dir);
    const auto s = testing::ScrapeUntil(
        daemon.port(),
        [](const auto& x) {
          for (const auto& [series, v] : x) {
            if (series.rfind("fabric_sm_activity_stalled{", 0) == 0 && v == 1) {
              return true;
            }
          }
          return false;
        },
        std::chrono::seconds(120));
    EXPECT_TRUE(s) << "the hung master never showed as stalled";
  }
}

// Every scenario and every shipped timeline: one exposition each, in which
// no series appears twice (SimulateOnce parses through ParseSamples, which
// checks that: tests/support/exposition.h) and the collectors all report.
TEST_F(SimulateOnceTest, EveryScenarioWritesEachSeriesOnce) {
  std::vector<std::string> runs = sim::ScenarioNames();
  for (const auto& entry : std::filesystem::directory_iterator(
           testing::SourceDir() + "/scenarios")) {
    if (entry.path().extension() == ".yaml") runs.push_back(entry.path());
  }
  for (const auto& scenario : runs) {
    SCOPED_TRACE(scenario);
    const auto s = SimulateOnce(scenario);
    EXPECT_EQ(At(s, "fabric_collector_success{collector=\"ib_port\"}"), 1);
  }
}

}  // namespace
}  // namespace fabric
