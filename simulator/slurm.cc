#include "simulator/slurm.h"

#include <algorithm>

namespace fabric::sim {
namespace {

// Above the kernel's PID_MAX_LIMIT (4 Mi on 64-bit): never a real pid.
constexpr int kFirstPid = 1 << 22;

std::vector<int> OnCluster(std::vector<int> hosts, int count) {
  std::erase_if(hosts, [count](int h) { return h < 0 || h >= count; });
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

std::string Environ(const SimJob& job, const std::vector<int>& hosts,
                    int host) {
  const std::string vars[] = {
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "HOME=/home/" + job.user,
      "SLURM_CLUSTER_NAME=sim",
      "SLURM_JOB_ID=" + job.id,
      "SLURM_JOB_NAME=" + job.name,
      "SLURM_JOB_USER=" + job.user,
      "SLURM_JOB_UID=" + std::to_string(job.uid),
      "SLURM_JOB_NODELIST=" + SlurmNodeList(hosts),
      "SLURM_JOB_NUM_NODES=" + std::to_string(hosts.size()),
      "SLURMD_NODENAME=host" + std::to_string(host),
  };
  std::string out;
  for (const auto& v : vars) out += v + '\0';
  return out;
}

std::string Status(const SimJob& job, int pid) {
  const std::string id = std::to_string(job.uid);
  const std::string p = std::to_string(pid);
  return "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" + p +
         "\nNgid:\t0\nPid:\t" + p + "\nPPid:\t" + std::to_string(pid - 1) +
         "\nTracerPid:\t0\nUid:\t" + id + "\t" + id + "\t" + id + "\t" + id +
         "\nGid:\t" + id + "\t" + id + "\t" + id + "\t" + id + "\n";
}

}  // namespace

std::vector<SimJob> ClusterJobs(const Timeline& timeline, int hosts) {
  if (timeline.slurm_declared) return timeline.jobs;
  std::vector<SimJob> jobs;
  const int half = (hosts + 1) / 2;
  SimJob a, b;
  a.id = "4711", a.name = "llama-70b", a.user = "alice", a.uid = 1000;
  b.id = "4712", b.name = "bert-finetune", b.user = "bob", b.uid = 1001;
  for (int h = 0; h < hosts; ++h) (h < half ? a : b).hosts.push_back(h);
  jobs.push_back(std::move(a));
  if (!b.hosts.empty()) jobs.push_back(std::move(b));
  return jobs;
}

std::string SlurmNodeList(const std::vector<int>& hosts) {
  if (hosts.size() == 1) return "host" + std::to_string(hosts[0]);
  std::string ranges;
  for (std::size_t i = 0; i < hosts.size();) {
    std::size_t j = i;
    while (j + 1 < hosts.size() && hosts[j + 1] == hosts[j] + 1) ++j;
    if (!ranges.empty()) ranges += ',';
    ranges += std::to_string(hosts[i]);
    if (j > i) ranges += '-' + std::to_string(hosts[j]);
    i = j + 1;
  }
  return "host[" + ranges + "]";
}

int SimJobPid(int index, int host) {
  return kFirstPid + 1000 * host + 10 * index + 1;
}

std::map<std::string, std::map<std::string, std::string>> JobDirs(
    const Timeline& timeline, int hosts, int host, Duration now) {
  std::map<std::string, std::map<std::string, std::string>> dirs;
  const std::vector<SimJob> jobs = ClusterJobs(timeline, hosts);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const SimJob& job = jobs[i];
    const std::vector<int> on = OnCluster(job.hosts, hosts);
    if (!job.RunningAt(now) ||
        !std::binary_search(on.begin(), on.end(), host)) {
      continue;
    }
    const int pid = SimJobPid(static_cast<int>(i), host);
    // slurmstepd of each step (its own cgroup on v2), then the task.
    const std::string extern_stepd = std::to_string(pid - 3) + "\n";
    const std::string batch_stepd = std::to_string(pid - 1) + "\n";
    const std::string task = std::to_string(pid) + "\n";
    if (timeline.cgroup_v1) {
      for (const char* controller : {"freezer", "cpuset", "memory"}) {
        auto& f = dirs[std::string("fs/cgroup/") + controller + "/slurm/uid_" +
                       std::to_string(job.uid) + "/job_" + job.id];
        f["cgroup.procs"] = "";
        // slurmstepd stays outside the job's cgroups on v1.
        f["step_extern/cgroup.procs"] = "";
        f["step_batch/cgroup.procs"] = task;
      }
    } else {
      auto& f = dirs["fs/cgroup/system.slice/slurmstepd.scope/job_" + job.id];
      f["cgroup.procs"] = "";
      f["cgroup.controllers"] = "cpuset cpu io memory pids\n";
      f["step_extern/cgroup.procs"] = "";
      f["step_extern/slurm/cgroup.procs"] = extern_stepd;
      f["step_extern/user/task_special/cgroup.procs"] = "";
      f["step_batch/cgroup.procs"] = "";
      f["step_batch/slurm/cgroup.procs"] = batch_stepd;
      f["step_batch/user/task_0/cgroup.procs"] = task;
    }
    auto& p = dirs["proc/" + std::to_string(pid)];
    p["status"] = Status(job, pid);
    p["environ"] = Environ(job, on, host);
  }
  return dirs;
}

}  // namespace fabric::sim
