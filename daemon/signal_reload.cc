#include "daemon/signal_reload.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "daemon/reload_verdict.h"

namespace fabric {
namespace {

constexpr const char* kName = "fabricmon";

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TrimNewline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The executable's base name, without the " (deleted)" the kernel appends
// once a package upgrade replaced the file under a running daemon; "" when
// unreadable (another user's process).
std::string ExeName(const std::string& pid_dir) {
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink(pid_dir + "/exe", ec);
  if (ec) return "";
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() &&
      exe.compare(exe.size() - kDeleted.size(), kDeleted.size(), kDeleted) ==
          0) {
    exe.resize(exe.size() - kDeleted.size());
  }
  return std::filesystem::path(exe).filename().string();
}

}  // namespace

ReloadTargetEnv ThisProcessReloadEnv() {
  ReloadTargetEnv env;
  env.self_pid = static_cast<int>(::getpid());
  if (const char* main = std::getenv("MAINPID"); main && *main) {
    char* end = nullptr;
    const long pid = std::strtol(main, &end, 10);
    if (*end == '\0' && pid > 0) env.main_pid = static_cast<int>(pid);
  }
  env.verdict_path = ReloadVerdictPath(std::getenv("RUNTIME_DIRECTORY"));
  const char* invocation = std::getenv("INVOCATION_ID");
  env.under_systemd = invocation && *invocation;
  return env;
}

std::string CheckReloadTarget(int pid, const ReloadTargetEnv& env) {
  const std::string who = "PID " + std::to_string(pid);
  if (pid <= 0) return who + " is not a process ID";
  if (pid == 1) return who + " is the init process, not a fabricmon";
  if (pid == env.self_pid) return who + " is this fabricmon --signal-reload";
  if (env.main_pid && *env.main_pid != pid) {
    return who + " is not the unit's main process ($MAINPID is " +
           std::to_string(*env.main_pid) + ")";
  }
  const std::string dir = env.proc + "/" + std::to_string(pid);
  const auto comm = ReadText(dir + "/comm");
  // The packaged unit's sandbox can hide the main process from ExecReload's
  // /proc; systemd itself then vouches for it: $MAINPID is this unit's main
  // process (systemd_nspawn_test's reload).
  if (!comm && env.under_systemd && env.main_pid && *env.main_pid == pid) {
    return "";
  }
  if (!comm) return who + " is not running (no " + dir + ")";
  const std::string name = TrimNewline(*comm);
  if (name != kName && ExeName(dir) != kName) {
    return who + " is \"" + name + "\", not a fabricmon";
  }
  if (env.under_systemd) {
    // Every process of a service, ExecReload's included, is in its cgroup.
    const auto ours = ReadText(env.proc + "/self/cgroup");
    const auto theirs = ReadText(dir + "/cgroup");
    if (!ours || !theirs) {
      return "cannot read the cgroup of " + who + " or of this process";
    }
    if (*ours != *theirs) {
      return who +
             " is a fabricmon of another unit (its cgroup is not this "
             "unit's)";
    }
  }
  return "";
}

int SignalReload(int pid, const ReloadTargetEnv& env) {
  if (std::string why = CheckReloadTarget(pid, env); !why.empty()) {
    std::cerr << "fabricmon: refusing to send SIGHUP: " << why << "\n";
    return 1;
  }
  const auto send = [pid] {
    if (::kill(pid, SIGHUP) == 0) return true;
    std::cerr << "fabricmon: cannot send SIGHUP to " << pid << ": "
              << std::strerror(errno) << "\n";
    return false;
  };
  return SignalAndAwaitVerdict(env.verdict_path, send, env.verdict_timeout);
}

}  // namespace fabric
