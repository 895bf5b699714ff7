// --signal-reload PID: the unit's ExecReload sends the SIGHUP itself
// (minimal systems have no /bin/kill). Before signalling it checks that PID
// is a fabricmon, and under systemd the main process of this very unit: a
// wrong PID (1, a typo, an unset $MAINPID expanded to nothing else) must not
// send SIGHUP to init or to another service. Everything it reads is under
// an injectable /proc.
//
// Thread-safety: pure functions over the file system and the values given.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace fabric {

struct ReloadTargetEnv {
  std::string proc = "/proc";
  int self_pid = 0;
  // $MAINPID: systemd sets it for ExecReload; the PID must be it.
  std::optional<int> main_pid;
  // $INVOCATION_ID is set: running as part of a unit, whose processes all
  // share one cgroup (/proc/PID/cgroup must equal /proc/self/cgroup).
  bool under_systemd = false;
  // The running daemon's reload verdict ($RUNTIME_DIRECTORY/reload-verdict,
  // daemon/reload_verdict.h): after signalling, wait for it and fail on a
  // rejected reload. "" (not under systemd): signal only.
  std::string verdict_path;
  std::chrono::milliseconds verdict_timeout{60000};
};

// This process's: /proc, getpid(), $MAINPID, $INVOCATION_ID.
ReloadTargetEnv ThisProcessReloadEnv();

// "" when `pid` may be sent SIGHUP, else why not (one sentence naming PID).
std::string CheckReloadTarget(int pid, const ReloadTargetEnv& env);

// Checks `pid`, sends it SIGHUP and, with a verdict path, waits for the
// daemon's verdict; prints why not to stderr. Returns the exit status: 0
// applied (or sent, without a verdict file), 1 refused, failed or rejected.
int SignalReload(int pid, const ReloadTargetEnv& env);

}  // namespace fabric
