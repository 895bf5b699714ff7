// The Slurm jobs running on this node, read from slurmd's cgroup hierarchy:
// no exec, no slurmctld round trip, nothing on a node without Slurm.
//
// Where slurmd puts a job (below the cgroup mount, /sys/fs/cgroup):
//  - cgroup v1 (proctrack/cgroup, cgroup/v1):
//      <controller>/slurm[_<nodename>]/uid_<uid>/job_<id>/step_<step>/
//    (freezer first: proctrack/cgroup always uses it); the uid is in the
//    path;
//  - cgroup v2 (cgroup/v2; on a hybrid host under unified/):
//      system.slice/[<nodename>_]slurmstepd.scope/job_<id>/step_<step>/...
//    The uid is not in the path: it is read from /proc/<pid>/status of a
//    process in the job, when this process may see it.
// The job's name and node list are not in the tree either: they come from
// SLURM_JOB_NAME and SLURM_JOB_NODELIST in /proc/<pid>/environ of a process
// of the job (with SLURM_JOB_USER, Slurm's name of the job's user), when
// readable (root, or the unit without ProtectProc); else
// they are empty and the series says only the ID and user.
//
// None of that changes while a job runs, so the caller may keep it per job
// ID (SlurmJobsKnown): a job's /proc is then read until it answered, and
// after that a running job costs nothing beyond the cgroup listings that
// find it (docs/jobs.md, "Cost").
//
// Thread-safety: pure functions of their inputs (a SlurmJobsKnown is its
// caller's, used by one call at a time); safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/sysfs.h"
#include "sources/text_file.h"

namespace fabric {

struct SlurmJob {
  std::string id;                    // "1234" (array jobs: their own ID)
  std::optional<std::uint32_t> uid;  // unknown when unreadable
  std::string name;                  // SLURM_JOB_NAME, "" when unreadable
  std::string nodelist;              // SLURM_JOB_NODELIST, "" likewise
  std::string user;                  // SLURM_JOB_USER, "" likewise
  std::string cgroup;  // the job's directory, as the Sysfs names it
};

// "job_1234" -> "1234"; nullopt for anything else.
std::optional<std::string> ParseJobDir(std::string_view name);
// "uid_1000" -> 1000; nullopt for anything else.
std::optional<std::uint32_t> ParseUidDir(std::string_view name);
// /proc/<pid>/environ (NUL-separated) -> the SLURM_JOB_* variables only.
std::map<std::string, std::string> ParseSlurmEnviron(std::string_view text);
// The real uid in /proc/<pid>/status ("Uid:\t1000\t1000\t...").
std::optional<std::uint32_t> ParseStatusUid(std::string_view text);
// The first pid of a cgroup.procs or tasks file.
std::optional<int> FirstPid(std::string_view text);

// What /proc said of one job, kept from one collection to the next.
struct SlurmJobProc {
  std::optional<std::uint32_t> uid;  // from /proc/<pid>/status (v2)
  std::string name, nodelist, user;  // from /proc/<pid>/environ
  // Collections that found a process of the job whose /proc said nothing
  // (not readable, as under the packaged unit's ProtectProc, or the
  // process just ended).
  int tries = 0;
  // Nothing more to read: the environment answered, or kMaxProcTries
  // collections found it unreadable.
  bool done = false;
};
// Per job ID. ReadSlurmJobs drops the jobs that are gone.
using SlurmJobsKnown = std::map<std::string, SlurmJobProc, std::less<>>;

// How many collections a job's /proc is tried while it does not answer;
// then the job keeps what it had (an empty name and node list). A job
// without any process yet (a long prolog) is not counted: it is tried
// again when a process appears.
inline constexpr int kMaxProcTries = 3;

// The jobs under `root` of `fs` (the cgroup mount: "fs/cgroup" of the
// /sys tree), sorted by ID, one entry per ID (v1 lists a job under each
// controller). `proc` reads /proc/<pid>/* (the seam; ReadTextFile);
// `proc_root` is "/proc". A job that vanishes mid-read is skipped or
// partial, never an error; no Slurm, no jobs. With `known`, /proc is read
// only for jobs it has no answer for, and it is updated (ended jobs
// dropped); without, every job's /proc is read.
std::vector<SlurmJob> ReadSlurmJobs(const Sysfs& fs, const std::string& root,
                                    const TextFileReader& proc,
                                    const std::string& proc_root,
                                    SlurmJobsKnown* known = nullptr);

}  // namespace fabric
