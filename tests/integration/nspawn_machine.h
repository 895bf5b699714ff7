// A minimal Debian 12 booted under systemd-nspawn, for tests that need a
// real systemd as PID 1 (systemd_nspawn_test.cc).
//
// The root: `debootstrap --variant=minbase --include=systemd,systemd-sysv,
// dbus,curl bookworm` from the mirror the host's apt uses, made once and
// kept in the build directory (nspawn-root/); a second run reuses it.
// Each boot mounts it with --volatile=overlay: the root stays read-only
// under a tmpfs that dies with the container, so every run starts from the
// same clean tree and leaves nothing behind.
//
// The container shares the host's network (no --private-network): a daemon
// in it bound to 127.0.0.1:PORT is scraped from the host. --register=no and
// --keep-unit: the host needs no systemd of its own (machinectl and
// `systemd-run --machine` are then unavailable), so commands run in the
// container by entering its PID 1's namespaces and root with nsenter.
//
// Thread-safety: none needed (test-only, single thread).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/paths.h"

namespace fabric::testing {

struct ShellResult {
  int rc = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through /bin/sh, stdin empty (for the whole of it: a
// pipeline's last command still reads the pipe).
inline ShellResult Shell(const std::string& command) {
  ShellResult r;
  FILE* p = ::popen(("{ " + command + "\n} </dev/null 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
    r.output.append(buf.data(), n);
  }
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `s` as one single-quoted shell word.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class NspawnMachine {
 public:
  // The cached root, made on first use (a few minutes: debootstrap
  // downloads about 100 MB). Empty with *error on failure.
  static std::string CachedRoot(std::string* error) {
    namespace fs = std::filesystem;
    const fs::path root = fs::path(BinaryDir()) / "nspawn-root";
    if (fs::exists(root / "usr/lib/systemd/systemd")) return root.string();
    // The mirror apt already uses for bookworm (apt's own view of its
    // sources, whichever format they are written in).
    ShellResult mirror = Shell(
        "apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | "
        "awk '$2 == \"bookworm\" { print $1; exit }'");
    while (!mirror.output.empty() && mirror.output.back() == '\n') {
      mirror.output.pop_back();
    }
    if (mirror.rc != 0 || mirror.output.empty()) {
      *error = "no bookworm mirror in the host's apt sources";
      return "";
    }
    // Built aside and renamed, so an interrupted debootstrap is never
    // mistaken for a root.
    const fs::path partial =
        root.string() + ".partial." + std::to_string(::getpid());
    const ShellResult r = Shell(
        "debootstrap --variant=minbase "
        "--include=systemd,systemd-sysv,dbus,curl bookworm " +
        ShellQuote(partial.string()) + " " + ShellQuote(mirror.output));
    std::error_code ec;
    if (r.rc != 0) {
      fs::remove_all(partial, ec);
      *error = "debootstrap failed: " + r.output;
      return "";
    }
    fs::rename(partial, root, ec);
    if (ec) {
      fs::remove_all(partial, ec);
      if (!fs::exists(root / "usr/lib/systemd/systemd")) {
        *error = "cannot move the root in place";
        return "";
      }
    }
    return root.string();
  }

  // Boots `root` with `binds` ("HOST:CONTAINER", read-only) and waits until
  // systemd reports the boot finished. The console goes to `log`.
  bool Boot(const std::string& root, const std::vector<std::string>& binds,
            const std::string& log, std::string* error) {
    const std::string name = "fabricmon-test-" + std::to_string(::getpid());
    std::vector<std::string> args = {"systemd-nspawn",
                                     "-D",
                                     root,
                                     "--volatile=overlay",
                                     "--boot",
                                     "--register=no",
                                     "--keep-unit",
                                     "--machine=" + name,
                                     "--console=read-only"};
    for (const auto& b : binds) args.push_back("--bind-ro=" + b);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    nspawn_ = ::fork();
    if (nspawn_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    // PID 1 of the container is nspawn's child running systemd; then wait
    // for the boot (bounded: a container that never boots fails the test,
    // it does not hang it).
    for (int i = 0; i < 600 && leader_ <= 0; ++i) {
      if (::waitpid(nspawn_, nullptr, WNOHANG) == nspawn_) {
        nspawn_ = -1;
        *error = "systemd-nspawn exited during boot";
        return false;
      }
      leader_ = SystemdChild();
      if (leader_ <= 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (int i = 0; i < 120; ++i) {
      const ShellResult r = Run("systemctl is-system-running --wait");
      if (r.output.find("running") != std::string::npos ||
          r.output.find("degraded") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    *error = "the container did not finish booting";
    return false;
  }

  // Runs `script` with /bin/sh inside the container (its namespaces and
  // root, a clean environment).
  ShellResult Run(const std::string& script) const {
    if (leader_ <= 0) return {};
    return Shell("nsenter -t " + std::to_string(leader_) +
                 " -a -r -w env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "
                 "LANG=C.UTF-8 SYSTEMD_PAGER= /bin/sh -c " +
                 ShellQuote(script));
  }

  // Powers the container off (a clean shutdown; SIGKILL to its PID 1,
  // which ends the PID namespace, if that does not finish) and reaps
  // systemd-nspawn. Nothing of the run stays: the overlay was a tmpfs.
  ~NspawnMachine() {
    if (nspawn_ <= 0) return;
    if (leader_ > 0) Run("systemctl poweroff");
    for (int i = 0; i < 600; ++i) {
      if (::waitpid(nspawn_, nullptr, WNOHANG) == nspawn_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (leader_ > 0) ::kill(leader_, SIGKILL);
    ::kill(nspawn_, SIGKILL);
    ::waitpid(nspawn_, nullptr, 0);
  }

 private:
  // The child of systemd-nspawn that runs systemd, 0 while there is none.
  pid_t SystemdChild() const {
    const std::string task = "/proc/" + std::to_string(nspawn_) + "/task/" +
                             std::to_string(nspawn_) + "/children";
    std::ifstream children(task);
    pid_t pid;
    while (children >> pid) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      if (comm >> name && name == "systemd") return pid;
    }
    return 0;
  }

  pid_t nspawn_ = -1;
  pid_t leader_ = 0;
};

}  // namespace fabric::testing
