// Slurm jobs on the simulated hosts (simulator/slurm.h): the timeline's
// `slurm:` section, the default jobs, Slurm's compressed node lists, and
// the rendered cgroup (v2 and v1) and proc trees read by the daemon's real
// jobs source and collector (sources/slurm_jobs.h, collectors/jobs.h): the
// right jobs on the right hosts, a job that starts late or ends appears and
// disappears.
#include <gtest/gtest.h>

#include <filesystem>

#include "collectors/registry.h"
#include "config/config.h"
#include "simulator/model.h"
#include "simulator/render.h"
#include "simulator/slurm.h"
#include "sources/slurm_jobs.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr const char* kTwoJobs = R"(
slurm:
  jobs:
    - id: 100
      name: train-a
      user: carol
      uid: 2001
      hosts: [0, 1]
    - id: 200
      name: eval-b
      user: dave
      hosts: [2]
      start: 10s
      duration: 20s
events:
  - scenario: steady
)";

Timeline Parse(const std::string& yaml) {
  std::string error;
  auto t = ParseTimeline(yaml, &error);
  EXPECT_TRUE(t) << error;
  return t.value_or(Timeline{});
}

std::string ParseError(const std::string& slurm) {
  std::string error;
  EXPECT_FALSE(ParseTimeline(slurm + "events:\n  - scenario: steady\n", &error))
      << slurm;
  return error;
}

TEST(SimSlurmTest, TimelineDeclaresJobs) {
  const Timeline t = Parse(kTwoJobs);
  ASSERT_TRUE(t.slurm_declared);
  EXPECT_FALSE(t.cgroup_v1);
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].id, "100");
  EXPECT_EQ(t.jobs[0].user, "carol");
  EXPECT_EQ(t.jobs[0].uid, 2001u);
  EXPECT_EQ(t.jobs[0].hosts, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.jobs[1].uid, 1001u);  // 1000 + its place
  EXPECT_FALSE(t.jobs[1].RunningAt(seconds(9)));
  EXPECT_TRUE(t.jobs[1].RunningAt(seconds(10)));
  EXPECT_FALSE(t.jobs[1].RunningAt(seconds(30)));
  EXPECT_TRUE(Parse("slurm:\n  cgroup: v1\nevents: []\n").cgroup_v1);
  // `slurm:` without jobs: none (not the default).
  EXPECT_TRUE(ClusterJobs(Parse("slurm: {jobs: []}\nevents: []\n"), 4).empty());
}

TEST(SimSlurmTest, BadJobsNameTheKeyAndLine) {
  const std::string job = "slurm:\n  jobs:\n    - ";
  EXPECT_NE(ParseError("slurm: 3\n").find("slurm: must be a mapping"),
            std::string::npos);
  EXPECT_NE(
      ParseError("slurm:\n  cgroup: v3\n").find("cgroup must be v1 or v2"),
      std::string::npos);
  EXPECT_NE(ParseError(job + "{id: x1, name: a, user: u, hosts: [0]}\n")
                .find("'id' of digits (line 3)"),
            std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, user: u, hosts: [0]}\n").find("'name'"),
            std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, name: a, user: 'u=v', hosts: [0]}\n")
                .find("'user'"),
            std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, name: a, user: u, hosts: []}\n")
                .find("'hosts'"),
            std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, name: a, user: u, hosts: [x]}\n")
                .find("'hosts'"),
            std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, name: a, user: u, uid: -4, hosts: [0]}\n")
                .find("bad uid"),
            std::string::npos);
  EXPECT_NE(
      ParseError(job + "{id: 1, name: a, user: u, hosts: [0], start: soon}\n")
          .find("bad duration in 'start'"),
      std::string::npos);
  EXPECT_NE(ParseError(job + "{id: 1, name: a, user: u, hosts: [0]}\n    - " +
                       "{id: 1, name: b, user: u, hosts: [1]}\n")
                .find("job 1 twice"),
            std::string::npos);
}

TEST(SimSlurmTest, DefaultJobsSplitTheHosts) {
  const Timeline none;  // no `slurm:`
  auto jobs = ClusterJobs(none, 4);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "4711");
  EXPECT_EQ(jobs[0].hosts, (std::vector<int>{0, 1}));
  EXPECT_EQ(jobs[1].id, "4712");
  EXPECT_EQ(jobs[1].hosts, (std::vector<int>{2, 3}));
  jobs = ClusterJobs(none, 1);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].hosts, (std::vector<int>{0}));
  EXPECT_EQ(ClusterJobs(none, 3)[1].hosts, (std::vector<int>{2}));
}

TEST(SimSlurmTest, NodeListsAreCompressedAsSlurmPrintsThem) {
  EXPECT_EQ(SlurmNodeList({3}), "host3");
  EXPECT_EQ(SlurmNodeList({0, 1}), "host[0-1]");
  EXPECT_EQ(SlurmNodeList({0, 1, 2, 5, 7, 8}), "host[0-2,5,7-8]");
  EXPECT_GE(SimJobPid(0, 0), 1 << 22);  // above PID_MAX_LIMIT
}

// A live render of `yaml` on 3 hosts, read by the real source per host.
class RenderedJobsTest : public ::testing::Test {
 protected:
  void Start(const std::string& yaml) {
    SimConfig config;
    config.hosts = 3;
    config.timeline = Parse(yaml);
    cluster_ = std::make_unique<Cluster>(config);
    for (int h = 0; h < 3; ++h) {
      renderers_.emplace_back(
          fs::path(tmp_.path()) / ("host" + std::to_string(h)), h);
    }
    Render();
  }
  void Render() {
    for (auto& r : renderers_) {
      std::string error;
      ASSERT_TRUE(r.Render(*cluster_, &error)) << error;
    }
  }
  void StepTo(Duration t) {
    while (cluster_->now() < t) cluster_->Step();
    Render();
  }
  fs::path Root(int h) const { return renderers_[h].root(); }
  std::vector<SlurmJob> Jobs(int h) const {
    auto sysfs = MakeRealSysfs(Root(h).string());
    return ReadSlurmJobs(*sysfs, "fs/cgroup", ReadTextFile,
                         (Root(h) / "proc").string());
  }
  static std::vector<std::string> Ids(const std::vector<SlurmJob>& jobs) {
    std::vector<std::string> ids;
    for (const auto& j : jobs) ids.push_back(j.id);
    return ids;
  }

  testing::TempDir tmp_{"simslurm"};
  std::unique_ptr<Cluster> cluster_;
  std::vector<SysfsRenderer> renderers_;
};

TEST_F(RenderedJobsTest, V2TreeReadByTheRealSourceAndJobsEnd) {
  Start(kTwoJobs);
  EXPECT_TRUE(
      fs::exists(Root(0) /
                 "fs/cgroup/system.slice/slurmstepd.scope/job_100/step_batch/"
                 "user/task_0/cgroup.procs"));
  auto jobs = Jobs(1);
  ASSERT_EQ(Ids(jobs), std::vector<std::string>{"100"});
  EXPECT_EQ(jobs[0].uid, 2001u);  // from proc/<pid>/status
  EXPECT_EQ(jobs[0].user, "carol");
  EXPECT_EQ(jobs[0].name, "train-a");
  EXPECT_EQ(jobs[0].nodelist, "host[0-1]");
  EXPECT_TRUE(Jobs(2).empty());  // job 200 starts at 10 s

  StepTo(seconds(10));
  jobs = Jobs(2);
  ASSERT_EQ(Ids(jobs), std::vector<std::string>{"200"});
  EXPECT_EQ(jobs[0].nodelist, "host2");
  EXPECT_EQ(jobs[0].user, "dave");
  EXPECT_EQ(Ids(Jobs(0)), std::vector<std::string>{"100"});

  StepTo(seconds(30));  // job 200 ended: its cgroup and its task are gone
  EXPECT_TRUE(Jobs(2).empty());
  EXPECT_FALSE(fs::exists(Root(2) / "proc" / std::to_string(SimJobPid(1, 2))));
  EXPECT_EQ(Ids(Jobs(1)), std::vector<std::string>{"100"});
}

TEST_F(RenderedJobsTest, V1TreeCarriesTheUidInItsPath) {
  Start(std::string("slurm:\n  cgroup: v1\n") +
        (std::string(kTwoJobs).substr(std::string(kTwoJobs).find("  jobs:"))));
  EXPECT_TRUE(fs::exists(Root(0) / "fs/cgroup/freezer/slurm/uid_2001/job_100/"
                                   "step_batch/cgroup.procs"));
  EXPECT_FALSE(fs::exists(Root(0) / "fs/cgroup/system.slice"));
  // Without a readable proc root the uid still comes from the path.
  auto sysfs = MakeRealSysfs(Root(0).string());
  auto jobs = ReadSlurmJobs(*sysfs, "fs/cgroup", ReadTextFile,
                            (Root(0) / "no-proc").string());
  ASSERT_EQ(Ids(jobs), std::vector<std::string>{"100"});
  EXPECT_EQ(jobs[0].uid, 2001u);
  EXPECT_EQ(jobs[0].name, "");
  EXPECT_EQ(Jobs(0)[0].name, "train-a");
}

// The daemon's jobs collector, configured as demo.sh and the tests
// configure it (proc_root below the host's tree), exports the jobs.
TEST_F(RenderedJobsTest, TheJobsCollectorExportsThem) {
  Start(kTwoJobs);
  std::string error;
  auto config = ParseConfig("collectors:\n  jobs:\n    proc_root: " +
                                (Root(0) / "proc").string() + "\n",
                            AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(Root(0).string());
  env.read_text_file = ReadTextFile;
  auto c = MakeCollector("jobs", env, config->Collector("jobs"));
  ASSERT_TRUE(c);
  auto r = testing::Run(*c);
  EXPECT_EQ(r.Find("fabric_node_job_info", {}).size(), 1u);
  EXPECT_EQ(r.Value("fabric_node_job_info", {{"scheduler", "slurm"},
                                             {"job_id", "100"},
                                             {"user", "carol"},
                                             {"job_name", "train-a"},
                                             {"nodelist", "host[0-1]"}}),
            1);
}

}  // namespace
}  // namespace fabric::sim
