#include "sources/slurm_jobs.h"

#include <algorithm>
#include <charconv>

namespace fabric {
namespace {

// Big enough for a job's environment (the kernel caps argv + envp at a
// quarter of the stack limit; training jobs carry a few KiB to tens).
constexpr std::size_t kMaxEnvironBytes = 1 << 20;
constexpr std::size_t kMaxStatusBytes = 16 << 10;

template <typename T>
std::optional<T> Number(std::string_view text) {
  T value{};
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string> ListOrEmpty(const Sysfs& fs, const std::string& dir) {
  return fs.List(dir).value_or(std::vector<std::string>{});
}

// A pid of the job: the first of the first step's cgroup.procs that has
// one, searching the step and, on v2, its user/task_* children.
std::optional<int> PidOfJob(const Sysfs& fs, const std::string& job) {
  std::vector<std::string> dirs;
  for (const auto& step : ListOrEmpty(fs, job)) {
    if (!step.starts_with("step_")) continue;
    const std::string s = job + "/" + step;
    dirs.push_back(s);
    for (const auto& task : ListOrEmpty(fs, s + "/user")) {
      if (task.starts_with("task_")) dirs.push_back(s + "/user/" + task);
    }
  }
  for (const auto& d : dirs) {
    ReadResult procs = fs.Read(d + "/cgroup.procs");
    if (!procs.ok()) continue;
    if (auto pid = FirstPid(procs.value())) return pid;
  }
  return std::nullopt;
}

// Reads what /proc says about `job` into `seen`: a process of the job's
// status (the uid, when the path did not give it) and environment.
void ReadProc(const Sysfs& fs, const TextFileReader& proc,
              const std::string& proc_root, const SlurmJob& job,
              SlurmJobProc* seen) {
  const auto pid = PidOfJob(fs, job.cgroup);
  if (!pid) return;  // no process yet: not a try
  const std::string base = proc_root + "/" + std::to_string(*pid);
  if (!job.uid && !seen->uid) {
    FileRead status = proc(base + "/status", kMaxStatusBytes);
    if (status.ok()) seen->uid = ParseStatusUid(status.text);
  }
  FileRead environ = proc(base + "/environ", kMaxEnvironBytes);
  if (environ.ok()) {
    auto vars = ParseSlurmEnviron(environ.text);
    // A pid reused by a process of another job (or none) says nothing.
    if (vars["SLURM_JOB_ID"] == job.id) {
      seen->name = vars["SLURM_JOB_NAME"];
      seen->nodelist = vars["SLURM_JOB_NODELIST"];
      seen->user = vars["SLURM_JOB_USER"];
      seen->done = true;
      return;
    }
  }
  if (++seen->tries >= kMaxProcTries) seen->done = true;
}

// Fills what /proc says about the job, reading it only while `seen` has
// no answer.
void FromProc(const Sysfs& fs, const TextFileReader& proc,
              const std::string& proc_root, SlurmJobProc* seen, SlurmJob* job) {
  if (!seen->done) ReadProc(fs, proc, proc_root, *job, seen);
  if (!job->uid) job->uid = seen->uid;
  job->name = seen->name;
  job->nodelist = seen->nodelist;
  job->user = seen->user;
}

void AddJobsUnder(const Sysfs& fs, const std::string& dir,
                  std::optional<std::uint32_t> uid,
                  std::map<std::string, SlurmJob>* out) {
  for (const auto& entry : ListOrEmpty(fs, dir)) {
    auto id = ParseJobDir(entry);
    if (!id || out->count(*id)) continue;
    SlurmJob job;
    job.id = *id;
    job.uid = uid;
    job.cgroup = dir + "/" + entry;
    out->emplace(*id, std::move(job));
  }
}

// v1: <controller>/slurm*/uid_<n>/job_<id>.
void AddV1(const Sysfs& fs, const std::string& root,
           std::map<std::string, SlurmJob>* out) {
  std::vector<std::string> controllers = ListOrEmpty(fs, root);
  // freezer first: proctrack/cgroup always puts every job there.
  std::stable_partition(controllers.begin(), controllers.end(),
                        [](const std::string& c) { return c == "freezer"; });
  for (const auto& controller : controllers) {
    if (controller == "unified" || controller == "system.slice") continue;
    const std::string dir = root + "/" + controller;
    for (const auto& slurm : ListOrEmpty(fs, dir)) {
      if (slurm != "slurm" && !slurm.starts_with("slurm_")) continue;
      const std::string users = dir + "/" + slurm;
      for (const auto& user : ListOrEmpty(fs, users)) {
        if (auto uid = ParseUidDir(user)) {
          AddJobsUnder(fs, users + "/" + user, uid, out);
        }
      }
    }
  }
}

// v2: [unified/]system.slice/[<node>_]slurmstepd.scope/job_<id>.
void AddV2(const Sysfs& fs, const std::string& root,
           std::map<std::string, SlurmJob>* out) {
  for (const std::string prefix : {"/", "/unified/"}) {
    const std::string slice = root + prefix + "system.slice";
    for (const auto& scope : ListOrEmpty(fs, slice)) {
      if (scope == "slurmstepd.scope" || scope.ends_with("_slurmstepd.scope")) {
        AddJobsUnder(fs, slice + "/" + scope, std::nullopt, out);
      }
    }
  }
}

}  // namespace

std::optional<std::string> ParseJobDir(std::string_view name) {
  if (!name.starts_with("job_")) return std::nullopt;
  name.remove_prefix(4);
  if (!Number<std::uint64_t>(name)) return std::nullopt;
  return std::string(name);
}

std::optional<std::uint32_t> ParseUidDir(std::string_view name) {
  if (!name.starts_with("uid_")) return std::nullopt;
  return Number<std::uint32_t>(name.substr(4));
}

std::map<std::string, std::string> ParseSlurmEnviron(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    const auto end = text.find('\0');
    std::string_view var = text.substr(0, end);
    text = end == std::string_view::npos ? "" : text.substr(end + 1);
    const auto eq = var.find('=');
    if (eq == std::string_view::npos || !var.starts_with("SLURM_JOB_")) {
      continue;
    }
    out.emplace(std::string(var.substr(0, eq)),
                std::string(var.substr(eq + 1)));
  }
  return out;
}

std::optional<std::uint32_t> ParseStatusUid(std::string_view text) {
  const auto at = text.find("\nUid:");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 5);
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  return Number<std::uint32_t>(rest.substr(0, rest.find_first_of(" \t\n")));
}

std::optional<int> FirstPid(std::string_view text) {
  return Number<int>(text.substr(0, text.find('\n')));
}

std::vector<SlurmJob> ReadSlurmJobs(const Sysfs& fs, const std::string& root,
                                    const TextFileReader& proc,
                                    const std::string& proc_root,
                                    SlurmJobsKnown* known) {
  std::map<std::string, SlurmJob> jobs;
  AddV1(fs, root, &jobs);
  AddV2(fs, root, &jobs);
  if (known) {
    std::erase_if(*known,
                  [&](const auto& kv) { return !jobs.count(kv.first); });
  }
  std::vector<SlurmJob> out;
  for (auto& [id, job] : jobs) {
    SlurmJobProc once;
    FromProc(fs, proc, proc_root, known ? &(*known)[id] : &once, &job);
    out.push_back(std::move(job));
  }
  // By number, not text: job 9 before job 10.
  std::sort(out.begin(), out.end(), [](const SlurmJob& a, const SlurmJob& b) {
    return a.id.size() != b.id.size() ? a.id.size() < b.id.size() : a.id < b.id;
  });
  return out;
}

}  // namespace fabric
