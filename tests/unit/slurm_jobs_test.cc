// The Slurm jobs source (sources/slurm_jobs.h) on cgroup v1 and v2 trees laid
// out as slurmd 22.05 lays them out (v1 recorded from a real slurmd on this
// machine: freezer/slurm_<node>/uid_<uid>/job_<id>/step_batch), and the jobs
// collector through the registry: the series, the cap, a node without
// Slurm, a job that ends. The real slurmd: tests/integration/slurm_jobs_test.
#include "sources/slurm_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "collectors/jobs.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "tests/support/fake_sysfs.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Environ(const std::string& id, const std::string& name) {
  using namespace std::string_literals;
  return "PATH=/usr/bin\0SLURM_JOB_ID="s + id + "\0SLURM_JOB_NAME="s + name +
         "\0SLURM_JOB_NODELIST=gpu[001-004]\0HOME=/home/a\0"s;
}

// /proc as a map: path -> contents; anything else fails like a missing file.
TextFileReader Proc(std::map<std::string, std::string> files) {
  return [files](const std::string& path, std::size_t) {
    FileRead r;
    if (auto f = files.find(path); f != files.end()) {
      r.text = f->second;
    } else {
      r.error = "No such file or directory";
      r.error_number = ENOENT;
    }
    return r;
  };
}

TEST(SlurmJobsParseTest, NamesAndFiles) {
  EXPECT_EQ(ParseJobDir("job_1234"), "1234");
  EXPECT_EQ(ParseJobDir("job_"), std::nullopt);
  EXPECT_EQ(ParseJobDir("job_12x"), std::nullopt);
  EXPECT_EQ(ParseJobDir("step_batch"), std::nullopt);
  EXPECT_EQ(ParseUidDir("uid_1000"), 1000u);
  EXPECT_EQ(ParseUidDir("uid_-1"), std::nullopt);
  EXPECT_EQ(ParseUidDir("uid_99999999999"), std::nullopt);
  EXPECT_EQ(FirstPid("20645\n20646\n"), 20645);
  EXPECT_EQ(FirstPid(""), std::nullopt);
  EXPECT_EQ(ParseStatusUid("Name:\tsleep\nUmask:\t0022\nUid:\t1000\t1000\t1000"
                           "\t1000\nGid:\t100\n"),
            1000u);
  EXPECT_EQ(ParseStatusUid("Name:\tx\n"), std::nullopt);
  auto vars = ParseSlurmEnviron(Environ("7", "train-a"));
  EXPECT_EQ(vars["SLURM_JOB_NAME"], "train-a");
  EXPECT_EQ(vars["SLURM_JOB_NODELIST"], "gpu[001-004]");
  EXPECT_EQ(vars.count("PATH"), 0u);
  // Truncated or garbage environments give what they hold.
  EXPECT_THAT(ParseSlurmEnviron(std::string("SLURM_JOB_ID", 12)), IsEmpty());
}

TEST(SlurmJobsTest, CgroupV1FromThePathAndTheEnvironment) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string v1 = "fs/cgroup/freezer/slurm_gpu001";
  fs->File(v1 + "/uid_1000/job_12/step_batch/cgroup.procs", "300\n301\n");
  fs->File(v1 + "/uid_1001/job_9/step_0/cgroup.procs", "400\n");
  fs->Dir(v1 + "/uid_1001/job_9/step_extern");
  fs->File(v1 + "/tasks", "");
  // memory lists the same job again: one entry.
  fs->Dir("fs/cgroup/memory/slurm_gpu001/uid_1000/job_12");
  fs->Dir("fs/cgroup/cpu/user.slice");
  const auto jobs = ReadSlurmJobs(
      *fs, "fs/cgroup",
      Proc({{"/proc/300/environ", Environ("12", "llama-70b")},
            // Job 9's environment is not readable (ProtectProc).
            {"/proc/400/status", "Name:\tx\nUid:\t5\t5\t5\t5\n"}}),
      "/proc");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "9");     // by number
  EXPECT_EQ(jobs[0].uid, 1001u);  // the path's, not /proc's
  EXPECT_EQ(jobs[0].name, "");
  EXPECT_EQ(jobs[1].id, "12");
  EXPECT_EQ(jobs[1].uid, 1000u);
  EXPECT_EQ(jobs[1].name, "llama-70b");
  EXPECT_EQ(jobs[1].nodelist, "gpu[001-004]");
}

TEST(SlurmJobsTest, CgroupV2UidFromAProcessOfTheJob) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string scope = "fs/cgroup/system.slice/slurmstepd.scope";
  fs->File(scope + "/job_77/step_0/user/task_0/cgroup.procs", "900\n");
  fs->File(scope + "/job_77/step_0/slurm/cgroup.procs", "");
  fs->Dir(scope + "/job_78/step_extern/user");  // no process: uid unknown
  fs->Dir(scope + "/system");
  // A second slurmd on the node (multiple-slurmd): its own scope.
  fs->Dir("fs/cgroup/system.slice/n2_slurmstepd.scope/job_80");
  fs->Dir("fs/cgroup/system.slice/ssh.service");
  const auto jobs = ReadSlurmJobs(
      *fs, "fs/cgroup",
      Proc({{"/proc/900/status", "Name:\tpython\nUid:\t1000\t1000\t1000\t1000"},
            // A pid reused by another job's process says nothing.
            {"/proc/900/environ", Environ("76", "other")}}),
      "/proc");
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].id, "77");
  EXPECT_EQ(jobs[0].uid, 1000u);
  EXPECT_EQ(jobs[0].name, "");
  EXPECT_EQ(jobs[1].id, "78");
  EXPECT_EQ(jobs[1].uid, std::nullopt);
  EXPECT_EQ(jobs[2].id, "80");
}

TEST(SlurmJobsTest, HybridHostsV2TreeUnderUnified) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  fs->Dir("fs/cgroup/unified/system.slice/slurmstepd.scope/job_5");
  const auto jobs = ReadSlurmJobs(*fs, "fs/cgroup", Proc({}), "/proc");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, "5");
}

TEST(SlurmJobsTest, NoSlurmNoCgroupAndFailingDirectoriesGiveNothing) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  EXPECT_THAT(ReadSlurmJobs(*fs, "fs/cgroup", Proc({}), "/proc"), IsEmpty());
  fs->Dir("fs/cgroup/freezer/user.slice");
  fs->Dir("fs/cgroup/system.slice/ssh.service");
  EXPECT_THAT(ReadSlurmJobs(*fs, "fs/cgroup", Proc({}), "/proc"), IsEmpty());
  // A uid directory that cannot be listed (EACCES), a job that vanished.
  fs->Dir("fs/cgroup/freezer/slurm/uid_3/job_1");
  fs->Fail("fs/cgroup/freezer/slurm/uid_3", EACCES);
  fs->Dir("fs/cgroup/freezer/slurm/uid_4/job_2");
  fs->Fail("fs/cgroup/freezer/slurm/uid_4/job_2", ENOENT);
  const auto jobs = ReadSlurmJobs(*fs, "fs/cgroup", Proc({}), "/proc");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, "2");
}

class JobsCollectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<Collector> Make(const std::string& yaml) {
    std::string error;
    auto config = ParseConfig(yaml, AllCollectorKeys(), &error);
    EXPECT_TRUE(config) << error;
    CollectorEnv env;
    env.sysfs = fs_;
    env.read_text_file = Proc({{"/proc/300/environ", Environ("12", "train")}});
    return MakeCollector("jobs", env, config->Collector("jobs"));
  }
  std::shared_ptr<testing::FakeSysfs> fs_ =
      std::make_shared<testing::FakeSysfs>();
};

TEST_F(JobsCollectorTest, OneSeriesPerJobAndAnEndedJobIsGone) {
  auto c = Make("");
  ASSERT_TRUE(c);
  // No Slurm: nothing at all, and a healthy collection.
  auto none = testing::Run(*c);
  EXPECT_TRUE(none.ok);
  EXPECT_THAT(none.families, IsEmpty());

  const std::string v1 = "fs/cgroup/freezer/slurm/uid_0";
  fs_->File(v1 + "/job_12/step_batch/cgroup.procs", "300\n");
  fs_->Dir(v1 + "/job_13");
  auto two = testing::Run(*c);
  EXPECT_TRUE(two.ok);
  EXPECT_EQ(two.Find("fabric_node_job_info", {}).size(), 2u);
  EXPECT_EQ(two.Value("fabric_node_job_info", {{"job_id", "12"},
                                               {"user", "root"},
                                               {"job_name", "train"},
                                               {"nodelist", "gpu[001-004]"},
                                               {"scheduler", "slurm"}}),
            1);
  EXPECT_EQ(two.Value("fabric_node_job_info", {{"job_id", "13"}}), 1);
  EXPECT_EQ(two.Family("fabric_node_jobs_over_cap"), nullptr);

  fs_->Remove(v1 + "/job_12");
  auto one = testing::Run(*c);
  EXPECT_EQ(one.Find("fabric_node_job_info", {}).size(), 1u);
  EXPECT_EQ(one.Find("fabric_node_job_info", {{"job_id", "12"}}).size(), 0u);
}

// SLURM_JOB_USER, Slurm's name of the job's user, wins over this host's NSS
// name of the uid (a user the node's NSS does not know, or the simulator's
// alice on a machine where uid 0 is root).
TEST_F(JobsCollectorTest, SlurmJobUserNamesTheUser) {
  fs_->File("fs/cgroup/freezer/slurm/uid_0/job_12/step_batch/cgroup.procs",
            "300\n");
  CollectorEnv env;
  env.sysfs = fs_;
  using namespace std::string_literals;
  env.read_text_file =
      Proc({{"/proc/300/environ", "SLURM_JOB_ID=12\0SLURM_JOB_USER=alice\0"s}});
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  auto c = MakeCollector("jobs", env, config->Collector("jobs"));
  auto r = testing::Run(*c);
  EXPECT_EQ(r.Value("fabric_node_job_info",
                    {{"job_id", "12"}, {"user", "alice"}, {"job_name", ""}}),
            1);
}

TEST_F(JobsCollectorTest, CapKeepsTheLowestIdsAndCountsTheRest) {
  for (int id : {5, 40, 300}) {
    fs_->Dir("fs/cgroup/freezer/slurm/uid_0/job_" + std::to_string(id));
  }
  auto c = Make("collectors:\n  jobs:\n    max_jobs: 2\n");
  auto r = testing::Run(*c);
  EXPECT_EQ(r.Find("fabric_node_job_info", {}).size(), 2u);
  EXPECT_EQ(r.Find("fabric_node_job_info", {{"job_id", "300"}}).size(), 0u);
  EXPECT_EQ(r.Value("fabric_node_jobs_over_cap", {}), 1);
  // Back under the cap: the gauge stays, at 0.
  fs_->Remove("fs/cgroup/freezer/slurm/uid_0/job_300");
  EXPECT_EQ(testing::Run(*c).Value("fabric_node_jobs_over_cap", {}), 0);
}

// /proc as Proc(files) does, counting the reads of each path.
struct CountingProc {
  std::map<std::string, std::string> files;
  std::shared_ptr<std::map<std::string, int>> reads =
      std::make_shared<std::map<std::string, int>>();
  TextFileReader Reader() const {
    return [files = files, reads = reads](const std::string& path,
                                          std::size_t max) {
      ++(*reads)[path];
      return Proc(files)(path, max);
    };
  }
  int Reads(const std::string& path) const {
    auto it = reads->find(path);
    return it == reads->end() ? 0 : it->second;
  }
};

// The jobs collector with `proc` as /proc, on fs_.
std::unique_ptr<Collector> JobsWith(std::shared_ptr<testing::FakeSysfs> fs,
                                    const TextFileReader& proc) {
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  EXPECT_TRUE(config) << error;
  CollectorEnv env;
  env.sysfs = std::move(fs);
  env.read_text_file = proc;
  return MakeCollector("jobs", env, config->Collector("jobs"));
}

// How many of the fake's calls name a path under `dir`.
int CallsUnder(const testing::FakeSysfs& fs, const std::string& dir) {
  int n = 0;
  for (const auto& call : fs.calls()) {
    n += call.find(" " + dir + "/") != std::string::npos ||
         call.ends_with(" " + dir);
  }
  return n;
}

// A job's name, node list and user never change while it runs: /proc and
// the job's own cgroup directory are read once per job, and then a running
// job costs only the listing of the directory it is in (v1 and v2).
TEST(JobsCollectorCostTest, AJobsProcIsReadOncePerJobNotPerCollection) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string v1 = "fs/cgroup/freezer/slurm/uid_1000/job_12";
  const std::string v2 = "fs/cgroup/system.slice/slurmstepd.scope/job_13";
  fs->File(v1 + "/step_batch/cgroup.procs", "300\n");
  fs->File(v2 + "/step_0/user/task_0/cgroup.procs", "400\n");
  CountingProc proc;
  proc.files = {{"/proc/300/environ", Environ("12", "llama-70b")},
                {"/proc/400/environ", Environ("13", "bert")},
                {"/proc/400/status", "Name:\tx\nUid:\t7\t7\t7\t7\n"}};
  auto c = JobsWith(fs, proc.Reader());
  for (int i = 0; i < 3; ++i) {
    auto r = testing::Run(*c);
    EXPECT_EQ(r.Value("fabric_node_job_info",
                      {{"job_id", "12"}, {"job_name", "llama-70b"}}),
              1)
        << i;
    EXPECT_EQ(r.Value("fabric_node_job_info", {{"job_id", "13"},
                                               {"job_name", "bert"},
                                               {"nodelist", "gpu[001-004]"}}),
              1)
        << i;
  }
  EXPECT_EQ(proc.Reads("/proc/300/environ"), 1);
  EXPECT_EQ(proc.Reads("/proc/400/environ"), 1);
  EXPECT_EQ(proc.Reads("/proc/400/status"), 1);
  EXPECT_EQ(fs->Reads(v1 + "/step_batch/cgroup.procs"), 1);
  EXPECT_EQ(fs->Reads(v2 + "/step_0/user/task_0/cgroup.procs"), 1);
  // The first collection listed each job's steps; the next two nothing of
  // the jobs' own directories.
  const int first_v1 = CallsUnder(*fs, v1);
  EXPECT_GT(first_v1, 0);
  testing::Run(*c);
  EXPECT_EQ(CallsUnder(*fs, v1), first_v1);
  EXPECT_EQ(proc.Reads("/proc/300/environ"), 1);
}

// A job that ends is forgotten: the same ID again (a requeued job) is read
// afresh.
TEST(JobsCollectorCostTest, AnEndedJobIsForgotten) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string job = "fs/cgroup/freezer/slurm/uid_0/job_12";
  fs->File(job + "/step_batch/cgroup.procs", "300\n");
  CountingProc proc;
  proc.files = {{"/proc/300/environ", Environ("12", "first")},
                {"/proc/301/environ", Environ("12", "second")}};
  auto c = JobsWith(fs, proc.Reader());
  testing::Run(*c);
  fs->Remove(job);
  EXPECT_TRUE(testing::Run(*c).Find("fabric_node_job_info", {}).empty());
  fs->File(job + "/step_batch/cgroup.procs", "301\n");
  auto r = testing::Run(*c);
  EXPECT_EQ(r.Value("fabric_node_job_info", {{"job_name", "second"}}), 1);
  EXPECT_EQ(proc.Reads("/proc/300/environ"), 1);
  EXPECT_EQ(proc.Reads("/proc/301/environ"), 1);
}

// An environment that is not readable (the packaged unit's ProtectProc)
// is tried kMaxProcTries times, then no more; a job without a process yet
// is not a try: its environment is read once a process appears.
TEST(JobsCollectorCostTest, UnreadableProcIsTriedAFewTimesOnly) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string hidden = "fs/cgroup/freezer/slurm/uid_0/job_12";
  const std::string starting = "fs/cgroup/freezer/slurm/uid_0/job_13";
  fs->File(hidden + "/step_batch/cgroup.procs", "300\n");
  fs->Dir(starting);
  CountingProc proc;
  proc.files = {{"/proc/500/environ", Environ("13", "late")}};
  auto c = JobsWith(fs, proc.Reader());
  for (int i = 0; i < kMaxProcTries + 3; ++i) testing::Run(*c);
  EXPECT_EQ(proc.Reads("/proc/300/environ"), kMaxProcTries);
  const int listed = CallsUnder(*fs, hidden);
  testing::Run(*c);
  EXPECT_EQ(CallsUnder(*fs, hidden), listed);

  fs->File(starting + "/step_batch/cgroup.procs", "500\n");
  auto r = testing::Run(*c);
  EXPECT_EQ(
      r.Value("fabric_node_job_info", {{"job_id", "13"}, {"job_name", "late"}}),
      1);
  EXPECT_EQ(r.Value("fabric_node_job_info",
                    {{"job_id", "12"}, {"job_name", ""}, {"user", "root"}}),
            1);
  testing::Run(*c);
  EXPECT_EQ(proc.Reads("/proc/500/environ"), 1);
}

TEST(JobsSettingsTest, BadValuesNameKeyAndLine) {
  std::string error;
  auto bad = [&](const std::string& body) {
    return !ParseConfig("collectors:\n  jobs:\n" + body, AllCollectorKeys(),
                        &error);
  };
  EXPECT_TRUE(bad("    max_jobs: 0\n"));
  EXPECT_NE(error.find("collectors.jobs.max_jobs (line 3)"), std::string::npos)
      << error;
  EXPECT_TRUE(bad("    proc_root: proc\n"));
  EXPECT_NE(error.find("collectors.jobs.proc_root (line 3)"), std::string::npos)
      << error;
  EXPECT_TRUE(bad("    cgroup_root: \"\"\n"));
  EXPECT_FALSE(bad("    enabled: false\n"));
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_TRUE(config->Collector("jobs").enabled);
  EXPECT_EQ(config->Collector("jobs").interval, std::chrono::seconds(30));
}

}  // namespace
}  // namespace fabric
