#include "collectors/jobs.h"

#include <pwd.h>

#include "collectors/inventory.h"
#include "sources/slurm_jobs.h"

namespace fabric {
namespace {

// The account name of `uid` (NSS: files, LDAP, sssd), else the number.
std::string UserName(std::uint32_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found) {
    return pw.pw_name;
  }
  return std::to_string(uid);
}

// Slurm's own name for the job's user (SLURM_JOB_USER, read with the
// job's name) when the environment was readable: right also where this
// host's NSS does not know the user; else the NSS name of the uid.
std::string UserOf(const SlurmJob& job) {
  if (!job.user.empty()) return job.user;
  return job.uid ? UserName(*job.uid) : "";
}

class JobsCollector final : public Collector {
 public:
  JobsCollector(CollectorEnv env, JobsSettings settings)
      : env_(std::move(env)), settings_(std::move(settings)) {}
  std::string_view Name() const override { return "jobs"; }

  bool Collect(MetricSink& sink) override {
    auto jobs =
        ReadSlurmJobs(*env_.sysfs, settings_.cgroup_root, env_.read_text_file,
                      settings_.proc_root, &known_);
    cap_.Apply(static_cast<std::size_t>(settings_.max_jobs), jobs, sink);
    for (const SlurmJob& job : jobs) {
      sink.Gauge("fabric_node_job_info",
                 "A Slurm job running on this node (from slurmd's cgroup "
                 "tree); job_name and nodelist are empty when the job's "
                 "environment is not readable.",
                 {{"scheduler", "slurm"},
                  {"job_id", job.id},
                  {"user", UserOf(job)},
                  {"job_name", job.name},
                  {"nodelist", job.nodelist}},
                 1);
    }
    return true;
  }

 private:
  CollectorEnv env_;
  JobsSettings settings_;
  // What each running job's /proc said: read once per job, not per
  // collection (sources/slurm_jobs.h).
  SlurmJobsKnown known_;
  SeriesCap cap_{"fabric_node_jobs_over_cap",
                 "Jobs running on this node beyond collectors.jobs.max_jobs, "
                 "not exported (the lowest job IDs are)."};
};

}  // namespace

CollectorSpec JobsCollectorSpec() {
  using namespace config_keys;
  return InventorySpec<JobsCollector, JobsSettings>(
      "jobs", {"cgroup_root", "proc_root", "max_jobs"},
      [](JobsSettings& settings, const SettingKey& key) {
        if (key.name == "cgroup_root") {
          settings.cgroup_root = Scalar(key.value, key.path);
          if (settings.cgroup_root.empty()) {
            Fail(key.path, key.mark, "must name a directory");
          }
        } else if (key.name == "proc_root") {
          settings.proc_root = PathKey(key);
        } else if (key.name == "max_jobs") {
          settings.max_jobs = CapKey(key, 4096, "jobs");
        }
      });
}

}  // namespace fabric
