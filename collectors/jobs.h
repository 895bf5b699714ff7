// The jobs collector: which Slurm jobs run on this node, as
// fabric_node_job_info{job_id, user, job_name, nodelist} = 1, so that rules
// and dashboards can say which jobs a fabric fault touches. Read from
// slurmd's cgroup tree (sources/slurm_jobs.h) every interval: no exec, no
// controller round trip. A node without Slurm exports nothing and logs
// nothing; a job that ends is gone at the next collection. A job's name,
// node list and user are read from /proc once per job, not per collection:
// a running job costs only the cgroup listings that find it.
//
// Bounded: at most `max_jobs` series (a node runs a few jobs; the default
// 64 covers one per core of a shared node). Past it the lowest job IDs are
// kept and fabric_node_jobs_over_cap says how many were left out.
//
// Thread-safety: the collector follows Collector.
#pragma once

#include <string>

#include "collectors/collector.h"

namespace fabric {

struct JobsSettings {
  // The cgroup mount, relative to the sysfs root (--sysfs.root, /sys).
  std::string cgroup_root = "fs/cgroup";
  std::string proc_root = "/proc";
  int max_jobs = 64;
  bool operator==(const JobsSettings&) const = default;
};

CollectorSpec JobsCollectorSpec();

}  // namespace fabric
