// The Node.js gNMI target of tests/gnmi/server.js (@grpc/grpc-js, not
// fabricmon's gRPC) as a test drives it: started on 127.0.0.1 port 0 in its
// own session, its port read from its log, leaves set through its stdin
// ("set PATH KIND VALUE", answered "ok N"). Packages are installed once into
// the build directory (tests/gnmi/install.sh). Thread-safety: one owner.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {

// "" when node/npm are there and the pinned packages installed; else why not.
inline std::string InstallGnmiTarget() {
  if (RunCommand("command -v node && command -v npm").exit_code != 0)
    return "node/npm not installed (scripts/setup.sh)";
  auto r = RunCommand(SourceDir() + "/tests/gnmi/install.sh " + BinaryDir() +
                      "/gnmi-node 2>&1");
  return r.exit_code == 0 ? "" : "npm ci of tests/gnmi failed: " + r.out;
}

// "" when a test can run the target against the daemon and a real
// Prometheus (/usr/bin/prometheus, node, the pinned packages); else why not.
inline std::string GnmiStackMissing() {
  if (RunCommand("test -x /usr/bin/prometheus").exit_code != 0)
    return "/usr/bin/prometheus not installed";
  return InstallGnmiTarget();
}

class GnmiTarget {
 public:
  // `args`: server.js options besides --proto (--cert, --user, ...).
  GnmiTarget(const std::string& log, const std::vector<std::string>& args = {})
      : log_(log) {
    int in[2];
    if (pipe(in) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      dup2(in[0], 0);
      close(in[0]);
      close(in[1]);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("NODE_PATH", (BinaryDir() + "/gnmi-node/node_modules").c_str(), 1);
      const std::string script = SourceDir() + "/tests/gnmi/server.js";
      const std::string proto = SourceDir() + "/proto/gnmi";
      std::vector<const char*> argv = {"node", script.c_str(), "--proto",
                                       proto.c_str()};
      for (const auto& a : args) argv.push_back(a.c_str());
      argv.push_back(nullptr);
      execvp("node", const_cast<char* const*>(argv.data()));
      _exit(127);
    }
    close(in[0]);
    in_ = in[1];
    std::smatch m;
    WaitFor(
        [&] {
          const std::string text = ReadFile(log_);
          if (std::regex_search(text, m, std::regex(R"(listening (\d+))")))
            port_ = std::stoi(m[1]);
          return port_ > 0;
        },
        std::chrono::seconds(30));
  }
  ~GnmiTarget() {
    if (in_ >= 0) close(in_);  // the server exits at end of input
    if (pid_ > 0) {
      WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; },
              std::chrono::seconds(5));
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, WNOHANG);
    }
  }
  GnmiTarget(const GnmiTarget&) = delete;
  GnmiTarget& operator=(const GnmiTarget&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return ReadFile(log_); }

  // One command; true once the server answered it "ok".
  bool Command(const std::string& line) {
    const std::string text = line + "\n";
    if (write(in_, text.data(), text.size()) !=
        static_cast<ssize_t>(text.size()))
      return false;
    const std::string ok = "ok " + std::to_string(++commands_) + "\n";
    return WaitFor([&] { return log().find(ok) != std::string::npos; },
                   std::chrono::seconds(10));
  }
  bool Set(const std::string& path, const std::string& kind,
           const std::string& value) {
    return Command("set " + path + " " + kind + " " + value);
  }

  // Subscribe RPCs the server has seen.
  int Subscribes() {
    if (!Command("stats")) return -1;
    const std::string text = log();
    auto at = text.rfind("subscribes ");
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + 11));
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int in_ = -1;
  int port_ = 0;
  int commands_ = 0;
};

}  // namespace fabric::testing
