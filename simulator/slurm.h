// Slurm jobs on the simulated hosts (issue 43): which jobs run where and
// when (from the timeline's `slurm:` section, or a default), and the files
// slurmd and the kernel would show for them on a host, so that the daemon's
// real jobs collector (sources/slurm_jobs.h) reads them through its normal
// path: the cgroup tree below the host's sysfs root (fs/cgroup/...) and
// /proc/<pid>/{status,environ} of one process per job below a simulated
// proc root (<host>/proc, the jobs collector's `proc_root`).
//
// Layouts, as slurmd 22.05 makes them:
//  - cgroup v2 (cgroup/v2, the default):
//      fs/cgroup/system.slice/slurmstepd.scope/job_<id>/
//        step_extern/{slurm,user/task_special}/cgroup.procs
//        step_batch/{slurm,user/task_0}/cgroup.procs
//    (processes only in the leaves, as cgroup v2 requires);
//  - cgroup v1 (proctrack/cgroup, task/cgroup):
//      fs/cgroup/{freezer,cpuset,memory}/slurm/uid_<uid>/job_<id>/
//        step_extern/cgroup.procs, step_batch/cgroup.procs.
// The job's process has a pid above the kernel's PID_MAX_LIMIT (2^22), so
// it can never name a real process of the machine the simulator runs on: a
// daemon whose proc_root is the real /proc reads nothing for it.
//
// Thread-safety: pure functions of their inputs; safe from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "simulator/timeline.h"

namespace fabric::sim {

// The jobs of `timeline` for a cluster of `hosts` hosts: its `slurm: jobs:`
// when it has that section, else the default: job 4711 "llama-70b" of
// alice on the first half of the hosts (rounded up), job 4712
// "bert-finetune" of bob on the rest (none with one host).
std::vector<SimJob> ClusterJobs(const Timeline& timeline, int hosts);

// Slurm's compressed host list of `hosts` (indexes): "host[0-1,3]",
// "host2" for one host.
std::string SlurmNodeList(const std::vector<int>& hosts);

// The pid of `job`'s task on host `host` (the `index`th job of the
// cluster), above PID_MAX_LIMIT.
int SimJobPid(int index, int host);

// Relative path (below the host's root) -> contents: the cgroup and proc
// files of the jobs running on host `host` at time `now`, grouped by the
// directory that appears and disappears with the job (the map's key:
// "fs/cgroup/.../job_<id>" or "proc/<pid>"; values: files relative to it).
std::map<std::string, std::map<std::string, std::string>> JobDirs(
    const Timeline& timeline, int hosts, int host, Duration now);

}  // namespace fabric::sim
