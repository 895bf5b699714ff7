#include "collectors/jobs.h"

#include <pwd.h>

#include "config/yaml_keys.h"
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
    auto jobs = ReadSlurmJobs(*env_.sysfs, settings_.cgroup_root,
                              env_.read_text_file, settings_.proc_root,
                              &known_);
    const std::size_t cap = static_cast<std::size_t>(settings_.max_jobs);
    const std::size_t over = jobs.size() > cap ? jobs.size() - cap : 0;
    jobs.resize(jobs.size() - over);
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
    if (over > 0 || had_over_) {
      had_over_ = true;
      sink.Gauge("fabric_node_jobs_over_cap",
                 "Jobs running on this node beyond collectors.jobs.max_jobs, "
                 "not exported (the lowest job IDs are).",
                 {}, static_cast<double>(over));
    }
    return true;
  }

 private:
  CollectorEnv env_;
  JobsSettings settings_;
  // What each running job's /proc said: read once per job, not per
  // collection (sources/slurm_jobs.h).
  SlurmJobsKnown known_;
  bool had_over_ = false;  // keep the gauge (at 0) once it has been seen
};

}  // namespace

std::unique_ptr<Collector> MakeJobsCollector(const CollectorEnv& env,
                                             const CollectorConfig& config) {
  return std::make_unique<JobsCollector>(env, SettingsAs<JobsSettings>(config));
}

CollectorSpec JobsCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "jobs";
  spec.interval = std::chrono::seconds(30);
  spec.keys = {"cgroup_root", "proc_root", "max_jobs"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    JobsSettings settings;
    ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark& mark) {
          if (key == "cgroup_root") {
            settings.cgroup_root = Scalar(value, key_path);
            if (settings.cgroup_root.empty()) {
              Fail(key_path, mark, "must name a directory");
            }
          } else if (key == "proc_root") {
            settings.proc_root = Scalar(value, key_path);
            if (settings.proc_root.empty() || settings.proc_root[0] != '/') {
              Fail(key_path, mark, "must be an absolute path");
            }
          } else if (key == "max_jobs") {
            settings.max_jobs = static_cast<int>(Integer(
                value, key_path, 1, 4096, "a number of jobs in 1..4096"));
          }
        });
    return std::make_shared<SettingsOf<JobsSettings>>(settings);
  };
  spec.make = MakeJobsCollector;
  return spec;
}

}  // namespace fabric
