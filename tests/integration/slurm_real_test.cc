// The jobs collector against a real Slurm (Debian's slurm-wlm 22.05: munged,
// slurmctld and slurmd as plain processes on this machine, configured in a
// temporary directory, ports from the kernel): two jobs submitted with
// sbatch, one as root and one as `nobody`, are exported by `fabricmon
// --once` with their IDs, users, names and node list; the cancelled one is
// gone at the next collection. Needs root (slurmd runs jobs as their users)
// and cgroups slurmd can use (proctrack/cgroup).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "collectors/registry.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string ShortHostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

class SlurmRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"munged", "slurmctld", "slurmd", "sbatch",
                             "squeue", "scancel", "sinfo"}) {
      if (std::system(
              ("command -v " + std::string(tool) + " >/dev/null").c_str()) !=
          0) {
        MISSING_DEPENDENCY(std::string(tool) + " not installed (slurm-wlm)");
      }
    }
    if (::geteuid() != 0) MISSING_DEPENDENCY("slurmd needs root");
    dir_ = tmp_.path();
    // munged wants its socket's directories searchable by all (0711).
    const fs::path munge = dir_ / "munge";
    fs::create_directories(munge);
    const auto searchable =
        fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;
    fs::permissions(dir_, searchable);
    fs::permissions(munge, searchable);
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      random.read(key.data(), key.size());
      std::ofstream(munge / "munge.key", std::ios::binary) << key;
    }
    fs::permissions(munge / "munge.key",
                    fs::perms::owner_read | fs::perms::owner_write);
    for (const char* d : {"state", "spool", "log"}) {
      fs::create_directories(dir_ / d);
    }
    host_ = ShortHostname();
    const std::string d = dir_.string();
    std::ofstream(dir_ / "slurm.conf")
        << "ClusterName=fmtest\n"
        << "SlurmctldHost=" << host_ << "(127.0.0.1)\n"
        << "SlurmctldPort=" << FreeLoopbackPort() << "\n"
        << "SlurmdPort=" << FreeLoopbackPort() << "\n"
        << "AuthType=auth/munge\nCredType=cred/munge\n"
        << "AuthInfo=socket=" << d << "/munge/munge.socket\n"
        << "SlurmUser=root\nSlurmdUser=root\n"
        << "StateSaveLocation=" << d << "/state\n"
        << "SlurmdSpoolDir=" << d << "/spool\n"
        << "SlurmctldPidFile=" << d << "/slurmctld.pid\n"
        << "SlurmdPidFile=" << d << "/slurmd.pid\n"
        << "SlurmctldLogFile=" << d << "/log/slurmctld.log\n"
        << "SlurmdLogFile=" << d << "/log/slurmd.log\n"
        << "ProctrackType=proctrack/cgroup\nTaskPlugin=task/none\n"
        << "JobAcctGatherType=jobacct_gather/none\n"
        << "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
        << "SelectTypeParameters=CR_CPU\nMpiDefault=none\n"
        << "ReturnToService=2\n"
        << "NodeName=" << host_ << " NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n"
        << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE "
           "State=UP OverSubscribe=FORCE:4\n";
    std::ofstream(dir_ / "cgroup.conf")
        << "CgroupPlugin=autodetect\nConstrainCores=no\n"
           "ConstrainDevices=no\nConstrainRAMSpace=no\n";
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
    munged_ = std::make_unique<sim::Session>(
        "munged -F --socket=" + d + "/munge/munge.socket --key-file=" + d +
            "/munge/munge.key --pid-file=" + d +
            "/munge/munged.pid --seed-file=" + d +
            "/munge/seed --log-file=" + d + "/log/munged.log",
        d + "/log/munged.out");
    ASSERT_TRUE(Eventually([&] { return fs::exists(munge / "munge.socket"); }))
        << Log("munged.out");
    slurmctld_ = std::make_unique<sim::Session>(
        "slurmctld -D -i -f " + d + "/slurm.conf", d + "/log/slurmctld.out");
    slurmd_ = std::make_unique<sim::Session>(
        "slurmd -D -f " + d + "/slurm.conf", d + "/log/slurmd.out");
    ASSERT_TRUE(Eventually([&] {
      return Sh("sinfo -h -o %T").find("idle") != std::string::npos;
    })) << Log("slurmctld.log")
        << Log("slurmd.log");
  }

  void TearDown() override {
    if (slurmctld_) Sh("scancel --full --signal=KILL " + submitted_ + " ");
    if (!submitted_.empty()) {
      Eventually([&] { return Sh("squeue -h -o %i").empty(); });
    }
    slurmd_.reset();
    slurmctld_.reset();
    munged_.reset();
    ::unsetenv("SLURM_CONF");
  }

  static bool Eventually(const std::function<bool()>& done,
                         std::chrono::seconds bound = 90s) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(500ms);
    }
    return false;
  }
  static std::string Sh(const std::string& command) {
    return RunCommand(command + " 2>/dev/null").out;
  }
  std::string Log(const std::string& name) const {
    std::ifstream in(dir_ / "log" / name);
    std::stringstream text;
    text << in.rdbuf();
    return "\n--- " + name + ":\n" + text.str();
  }
  // Submits `command` (sbatch --wrap) as `user` with sbatch's `options`;
  // returns the job ID ("" on failure).
  std::string Submit(const std::string& name, const std::string& user,
                     const std::string& command = "sleep 300",
                     const std::string& options = "-o /dev/null") {
    std::string as = user == "root" ? "" : " --uid=" + user + " --gid=nogroup";
    const std::string out = Sh("sbatch -J " + name + as + " -n1 " + options +
                               " --chdir=/tmp --wrap '" + command + "'");
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("Submitted batch job (\\d+)"))) {
      return "";
    }
    submitted_ += m[1].str() + " ";
    return m[1];
  }
  // The daemon's jobs series now: "job_id/user/job_name/nodelist" per job.
  std::set<std::string> Exported() {
    std::string config = "collectors:\n";
    for (const auto& name : CollectorNames()) {
      if (name != "jobs") config += "  " + name + ": {enabled: false}\n";
    }
    std::ofstream(dir_ / "fabricmon.yaml") << config;
    const auto run =
        RunCommand(Binary("fabricmon") + " --once --config " +
                   (dir_ / "fabricmon.yaml").string() + " 2>/dev/null");
    std::set<std::string> out;
    const std::regex series(
        "fabric_node_job_info\\{job_id=\"(\\d+)\",job_name=\"([^\"]*)\","
        "nodelist=\"([^\"]*)\",scheduler=\"slurm\",user=\"([^\"]*)\"\\} 1");
    for (const auto& [text, value] : ParseSamples(run.out)) {
      std::smatch m;
      const std::string line = text + " " + std::to_string(int(value));
      if (std::regex_match(line, m, series)) {
        out.insert(m[1].str() + "/" + m[4].str() + "/" + m[2].str() + "/" +
                   m[3].str());
      }
    }
    return out;
  }

  TempDir tmp_{"fabricmon-slurm"};
  fs::path dir_;
  std::string host_, submitted_;
  std::unique_ptr<sim::Session> munged_, slurmctld_, slurmd_;
};

TEST_F(SlurmRealTest, RunningJobsAreExportedAndACancelledOneDisappears) {
  const std::string a = Submit("fm-train-a", "root");
  const std::string b = Submit("fm-train-b", "nobody");
  ASSERT_FALSE(a.empty() || b.empty()) << Log("slurmctld.log");
  ASSERT_TRUE(Eventually([&] {
    return Sh("squeue -h -t R -o %i -j " + a + "," + b) == a + "\n" + b + "\n";
  })) << Sh("squeue")
      << Log("slurmctld.log") << Log("slurmd.log");

  const std::set<std::string> both = {a + "/root/fm-train-a/" + host_,
                                      b + "/nobody/fm-train-b/" + host_};
  std::set<std::string> seen;
  // The step's cgroup is made as the job starts: allow it a moment.
  EXPECT_TRUE(Eventually([&] { return (seen = Exported()) == both; }, 30s))
      << "exported: " << ::testing::PrintToString(seen);

  Sh("scancel " + b);
  std::set<std::string> after;
  EXPECT_TRUE(Eventually(
      [&] {
        return (after = Exported()) ==
               std::set<std::string>{a + "/root/fm-train-a/" + host_};
      },
      60s))
      << "exported after scancel: " << ::testing::PrintToString(after);
}

// fabricmon-bench run inside an allocation records the job in results.json
// and the report.
TEST_F(SlurmRealTest, BenchRunInsideAnAllocationRecordsTheJob) {
  const std::string out = (dir_ / "r.json").string();
  const std::string id =
      Submit("fm-bench", "root",
             Binary("fabricmon-bench") +
                 " run --pattern allreduce-ring --local 2 --local-loopback"
                 " --sizes 1K --iterations 2 --warmup 1 --out " +
                 out,
             "--wait -o " + (dir_ / "log" / "bench.out").string());
  ASSERT_FALSE(id.empty()) << Log("slurmctld.log");
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty()) << Log("bench.out") << Log("slurmd.log");
  const auto j = nlohmann::json::parse(text.str());
  EXPECT_EQ(j["metadata"]["slurm"], nlohmann::json({{"job_id", id},
                                                    {"job_name", "fm-bench"},
                                                    {"nodelist", host_}}));
  std::ifstream report((dir_ / "r.html").string());
  std::stringstream html;
  html << report.rdbuf();
  EXPECT_NE(html.str().find("<th>Slurm job</th><td>" + id + " (fm-bench) on " +
                            host_ + "</td>"),
            std::string::npos);
}

}  // namespace
}  // namespace fabric::testing
