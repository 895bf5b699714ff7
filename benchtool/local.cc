#include "benchtool/local.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace fabric::bench {
namespace {

// Runs a command (argv, no shell) and waits; true on exit 0.
bool RunCmd(const std::vector<std::string>& argv, std::string* error) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  std::string cmd;
  for (auto& s : argv) cmd += (cmd.empty() ? "" : " ") + s;
  *error = "'" + cmd + "' failed";
  return false;
}

bool HaveIp() {
  return access("/usr/sbin/ip", X_OK) == 0 || access("/sbin/ip", X_OK) == 0 ||
         access("/usr/bin/ip", X_OK) == 0;
}

}  // namespace

std::unique_ptr<LocalCluster> LocalCluster::Start(const LocalOptions& o,
                                                  std::string* error) {
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  char tmpl[] = "/tmp/fabricmon-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    *error = "cannot create a temporary directory";
    return nullptr;
  }
  c->dir_ = tmpl;
  c->key_path_ = c->dir_ + "/key";
  std::string hex = GenerateKeyHex();
  {
    int fd = open(c->key_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 ||
        write(fd, hex.data(), hex.size()) != static_cast<ssize_t>(hex.size())) {
      *error = "cannot write the key file";
      if (fd >= 0) close(fd);
      return nullptr;
    }
    close(fd);
  }
  c->key_ = *ParseKeyHex(hex, error);
  bool netns = o.netns && geteuid() == 0 && HaveIp();
  if (netns && !c->SetUpNetns(o, error)) return nullptr;
  if (!netns) c->description_ = "loopback";
  for (int i = 0; i < o.agents; ++i) {
    if (!c->Spawn(o, i, error)) return nullptr;
  }
  return c;
}

bool LocalCluster::SetUpNetns(const LocalOptions& o, std::string* error) {
  std::string tag = "fmb" + std::to_string(getpid()) + "-";
  std::string br = tag + "br";
  auto ip = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "ip");
    return RunCmd(args, error);
  };
  auto in = [&](const std::string& ns, std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "netns", "exec", ns});
    return RunCmd(args, error);
  };
  if (!ip({"netns", "add", br})) return false;
  namespaces_.push_back(br);
  if (!in(br, {"ip", "link", "add", "br0", "type", "bridge"}) ||
      !in(br, {"ip", "addr", "add", "10.77.0.254/24", "dev", "br0"}) ||
      !in(br, {"ip", "link", "set", "br0", "up"}) ||
      !in(br, {"ip", "link", "set", "lo", "up"})) {
    return false;
  }
  for (int i = 0; i < o.agents; ++i) {
    std::string ns = tag + std::to_string(i);
    if (!ip({"netns", "add", ns})) return false;
    namespaces_.insert(namespaces_.begin(), ns);
    std::string a = "v" + std::to_string(i), b = "b" + std::to_string(i);
    std::string addr = "10.77.0." + std::to_string(i + 1);
    if (!ip({"link", "add", a, "netns", ns, "type", "veth", "peer", "name", b,
             "netns", br}) ||
        !in(ns, {"ip", "addr", "add", addr + "/24", "dev", a}) ||
        !in(ns, {"ip", "link", "set", a, "mtu", "9000", "up"}) ||
        !in(ns, {"ip", "link", "set", "lo", "up"}) ||
        !in(br, {"ip", "link", "set", b, "master", "br0"}) ||
        !in(br, {"ip", "link", "set", b, "mtu", "9000", "up"})) {
      return false;
    }
    if (!o.rate.empty() &&
        (!in(ns, {"tc", "qdisc", "add", "dev", a, "root", "tbf", "rate", o.rate,
                  "burst", "64kb", "limit", "2mb"}) ||
         !in(br, {"tc", "qdisc", "add", "dev", b, "root", "tbf", "rate", o.rate,
                  "burst", "64kb", "limit", "2mb"}))) {
      return false;
    }
    hosts_.push_back(addr + ":10916");
  }
  // Jumbo frames, as RoCE fabrics run: per-packet cost (CPU on this shared
  // machine, header bytes on the shaped link) is then what a fabric sees.
  if (!in(br, {"ip", "link", "set", "br0", "mtu", "9000"})) return false;
  // This thread joins the bridge namespace to reach the agents.
  original_ns_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  int fd = open(("/run/netns/" + br).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    *error = "cannot enter namespace " + br;
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  description_ = "network namespaces, veth" +
                 (o.rate.empty() ? std::string(" unshaped")
                                 : " shaped by tbf at " + o.rate);
  return true;
}

bool LocalCluster::Spawn(const LocalOptions& o, int i, std::string* error) {
  bool netns = !namespaces_.empty();
  std::string listen = netns ? hosts_[i] : "127.0.0.1:0";
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return false;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // An agent must not outlive the run that started it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    dup2(pipefd[1], 1);
    std::vector<std::string> argv;
    if (netns) {
      argv = {"ip", "netns", "exec", namespaces_[o.agents - 1 - i]};
    }
    // `ip netns exec` runs the binary by path: /proc/self/exe would be ip.
    std::error_code ec;
    std::string exe = std::filesystem::read_symlink(o.self_exe, ec);
    if (ec || o.self_exe != "/proc/self/exe") exe = o.self_exe;
    for (const char* s : {exe.c_str(), "agent", "--listen"}) {
      argv.push_back(s);
    }
    argv.push_back(listen);
    argv.push_back("--key");
    argv.push_back(key_path_);
    if (!o.sysfs_roots.empty()) {
      argv.push_back("--sysfs.root");
      argv.push_back(o.sysfs_roots[i % o.sysfs_roots.size()]);
    }
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  close(pipefd[1]);
  pids_.push_back(pid);
  // The agent prints "listening on PORT" once its socket is bound.
  std::string line;
  char ch;
  pollfd p{pipefd[0], POLLIN, 0};
  while (poll(&p, 1, 10000) > 0 && read(pipefd[0], &ch, 1) == 1 && ch != '\n') {
    line += ch;
  }
  close(pipefd[0]);
  auto sp = line.rfind(' ');
  if (line.rfind("listening on ", 0) != 0 || sp == std::string::npos) {
    *error = "agent " + std::to_string(i) + " did not start";
    return false;
  }
  if (!netns) hosts_.push_back("127.0.0.1:" + line.substr(sp + 1));
  return true;
}

void LocalCluster::Kill(int i) {
  if (i >= 0 && i < static_cast<int>(pids_.size()) && pids_[i] > 0) {
    kill(pids_[i], SIGKILL);
  }
}

void LocalCluster::TearDown() {
  for (pid_t pid : pids_) {
    if (pid > 0) kill(pid, SIGTERM);
  }
  for (pid_t pid : pids_) {
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  pids_.clear();
  if (original_ns_ >= 0) {
    setns(original_ns_, CLONE_NEWNET);
    close(original_ns_);
    original_ns_ = -1;
  }
  std::string ignored;
  for (const auto& ns : namespaces_) {
    RunCmd({"ip", "netns", "del", ns}, &ignored);
  }
  namespaces_.clear();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

LocalCluster::~LocalCluster() { TearDown(); }

}  // namespace fabric::bench
