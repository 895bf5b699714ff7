// Helpers for the simulator's integration tests: ranges of loopback ports,
// the ports scripts/demo.sh chose (--auto-ports, --ports-file), Prometheus
// instant queries (HTTP through tests/support/http.h), and running a script
// in its own session so the test can prove every process it started is
// gone. Thread-safety: none needed (test-only, single thread).
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http.h"
#include "tests/support/prom_api.h"
#include "tests/support/wait.h"

namespace fabric::testing::sim {

inline bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// A start port spread by pid, so test processes ctest runs in parallel
// (each gtest case is its own process) do not race for the same ports.
inline int PidSpread(int from) { return from + (getpid() % 1000) * 8; }

// First port p >= from with p .. p+count-1 all free on 127.0.0.1. Free
// now, not when the caller binds it: a process started later on it may
// find it taken (the demo tests use DemoPortArgs instead).
inline int FreePortRange(int from, int count) {
  for (int base = from; base < 60000; base += count) {
    bool ok = true;
    for (int i = 0; i < count && ok; ++i) ok = PortFree(base + i);
    if (ok) return base;
  }
  return -1;
}

// Where scripts/demo.sh runs: the ports it wrote to --ports-file.
struct DemoPorts {
  std::vector<int> daemons;  // host0, host1, ...
  int prometheus = -1;
  int alertmanager = -1;
};

// demo.sh arguments that let it choose every port itself (--auto-ports:
// busy ones are skipped, one taken between the check and the bind is
// replaced) from start points spread by pid below the kernel's ephemeral
// range (32768+, where other tests' port-0 sockets land), reporting them in
// `ports_file`. `slot` keeps the tests that run demos apart (0..2).
inline std::string DemoPortArgs(int slot, const std::string& ports_file) {
  const int base = 20000 + slot * 4000 + (getpid() % 400) * 10;
  return " --auto-ports --port-base " + std::to_string(base) + " --prom-port " +
         std::to_string(base + 6) + " --ports-file " + ports_file + " ";
}

// The ports file's "key=value" lines; nullopt when one is missing.
inline std::optional<DemoPorts> ParseDemoPorts(const std::string& text) {
  DemoPorts out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    std::istringstream values(line.substr(eq + 1));
    int port = 0;
    while (values >> port) {
      if (key == "daemons") out.daemons.push_back(port);
      if (key == "prometheus") out.prometheus = port;
      if (key == "alertmanager") out.alertmanager = port;
    }
  }
  if (out.daemons.empty() || out.prometheus <= 0 || out.alertmanager <= 0) {
    return std::nullopt;
  }
  return out;
}

using prom::Sample;

// Instant query; nullopt when Prometheus is not answering or errs.
inline std::optional<std::vector<Sample>> PromQuery(int port,
                                                    const std::string& expr) {
  return prom::Query(port, expr);
}

// Pids of every live process in session `sid`.
inline std::vector<int> SessionProcesses(pid_t sid) {
  std::vector<int> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after "(comm)": state ppid pgrp session ...
    const auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    std::string state;
    int ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (session == sid && state != "Z") out.push_back(pid);
  }
  closedir(proc);
  return out;
}

// A command run with /bin/sh -c in a new session, stdout+stderr to a file.
class Session {
 public:
  Session(const std::string& command, const std::string& log) {
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      // exec: the session leader is the command itself, so a signal to it
      // reaches the command and not an intermediate shell.
      const std::string exec_command = "exec " + command;
      execl("/bin/sh", "sh", "-c", exec_command.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Session() {
    const pid_t sid = pid_ > 0 ? pid_ : sid_done_;
    if (pid_ > 0) {
      Signal(SIGTERM);
      Wait(std::chrono::seconds(20));
    }
    sid_done_ = sid;
    if (pid_ > 0) {  // last resort, only our own session
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    // Whatever the leader left behind in its session (a failing test must
    // not leak daemons into the next one).
    if (sid_done_ > 0) {
      for (int pid : SessionProcesses(sid_done_)) kill(pid, SIGKILL);
    }
  }
  pid_t pid() const { return pid_; }
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  // Waits up to `limit` for the leader to exit; returns its wait status or
  // -1 on timeout.
  int Wait(std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        sid_done_ = pid_;
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  bool running() const { return pid_ > 0; }
  pid_t session_id() const { return pid_ > 0 ? pid_ : sid_done_; }

 private:
  pid_t pid_ = -1;
  pid_t sid_done_ = -1;
};

// A real Prometheus (the Debian package's /usr/bin/prometheus) serving
// 127.0.0.1:`port`, configured by `dir`/prometheus.yml; its data and log
// (prometheus.log) under `dir`. Stopped with the Session.
inline std::unique_ptr<Session> StartPrometheus(
    const std::filesystem::path& dir, int port) {
  return std::make_unique<Session>(
      "/usr/bin/prometheus --config.file=" + (dir / "prometheus.yml").string() +
          " --storage.tsdb.path=" + (dir / "data").string() +
          " --web.listen-address=127.0.0.1:" + std::to_string(port) +
          " --log.level=warn",
      (dir / "prometheus.log").string());
}

// Waits up to `limit` for fabricmon-sim (logging to `log`) to finish its
// first render of every host: it says "N host(s) under DIR" once all are
// written. A daemon started on a half-written tree (class/infiniband there,
// a RoCE port's netdev not yet) classifies what it sees until its next
// collection: a minute for fabric_class. False when time runs out.
inline bool WaitRendered(const std::filesystem::path& log,
                         std::chrono::seconds limit) {
  return WaitFor(
      [&] {
        return ReadFile(log).find(" host(s) under ") != std::string::npos;
      },
      limit);
}

// Waits up to `limit` for `demo` to write `ports_file` (it does once every
// process it started listens); nullopt when it exits first or time runs
// out.
inline std::optional<DemoPorts> WaitDemoPorts(Session& demo,
                                              const std::string& ports_file,
                                              std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(ports_file);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      if (auto ports = ParseDemoPorts(text.str())) return ports;
    }
    if (demo.Wait(std::chrono::seconds(1)) != -1) return std::nullopt;
  }
  return std::nullopt;
}

// Stops a scripts/demo.sh session with SIGINT (its trap stops what it
// started, by pid); false, with the reason, when it does not exit within
// 30 s or a process of its session survives.
inline bool StopDemo(Session& demo, std::string* why) {
  const pid_t sid = demo.pid();
  demo.Signal(SIGINT);
  if (demo.Wait(std::chrono::seconds(30)) == -1) {
    *why = "demo.sh did not stop on SIGINT";
    return false;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (!SessionProcesses(sid).empty()) {
    *why = "a process of the demo's session survived it";
    return false;
  }
  return true;
}

}  // namespace fabric::testing::sim
