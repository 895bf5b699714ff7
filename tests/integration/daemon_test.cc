// Integration tests for the fabricmon daemon binary: serve a recorded tree
// on port 0 over HTTP, reload good and bad configs on SIGHUP, stop on
// SIGTERM with status 0, reject invalid configs, --check-config, --once on
// an empty tree, and the systemd notify protocol over a real unix socket.
//
// No timing assertions: waits poll for an expected state with a generous
// limit and only fail if it never arrives.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "collectors/registry.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

extern char** environ;

namespace fabric {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr auto kPatience = std::chrono::seconds(20);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// Polls `done` until it holds or kPatience passes.
bool WaitFor(const std::function<bool()>& done) {
  return fabric::testing::WaitFor(done, kPatience,
                                  std::chrono::milliseconds(50));
}

// A child process with stdout/stderr captured in files under a temp dir;
// `fd_limit` > 0 sets its RLIMIT_NOFILE, soft and hard (so that it cannot
// raise it), like `ulimit -n` before exec.
class Process {
 public:
  Process(const std::vector<std::string>& args,
          const std::vector<std::string>& extra_env = {}, rlim_t fd_limit = 0) {
    std::vector<std::string> argv_s = {testing::Binary("fabricmon")};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      if (kv.rfind("NOTIFY_SOCKET=", 0) == 0 || kv.rfind("WATCHDOG_", 0) == 0) {
        continue;
      }
      env_s.push_back(kv);
    }
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv, envp;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string out = stdout_path(), err = stderr_path();
    pid_ = fork();
    if (pid_ == 0) {
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      if (fd_limit > 0) {
        rlimit limit{fd_limit, fd_limit};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  std::string stdout_path() const { return dir_ / "stdout"; }
  std::string stderr_path() const { return dir_ / "stderr"; }
  std::string Stdout() const { return ReadFile(stdout_path()); }
  std::string Stderr() const { return ReadFile(stderr_path()); }
  void Signal(int sig) { kill(pid_, sig); }
  pid_t Pid() const { return pid_; }

  // Exit status, or -1 if it did not exit within kPatience (then killed).
  int Wait() {
    int status = 0;
    bool done = WaitFor([&] {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      return r == pid_;
    });
    if (!done) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exited_ = true;
      return -1;
    }
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The port from the "listening on HOST:PORT" log line (the last one, so
  // a rebind after reload is seen), 0 if none yet.
  int Port() const {
    static const std::regex re("listening on [^\\s]+:([0-9]+)");
    std::string err = Stderr();
    int port = 0;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), re);
         it != std::sregex_iterator(); ++it) {
      port = std::stoi((*it)[1]);
    }
    return port;
  }

 private:
  testing::TempDir tmp_{"fabricmon-daemon-test"};
  fs::path dir_ = tmp_.path();
  pid_t pid_ = -1;
  bool exited_ = false;
};

// The body of a 200 answer to GET `path`, or "" on any failure.
std::string Scrape(int port, const std::string& path = "/metrics") {
  return testing::HttpGetOk(port, path).value_or("");
}

std::string H100() { return testing::Fixture("real/sysfs-gpud-h100"); }

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    config_ = dir_ / "fabricmon.yaml";
  }
  testing::TempDir tmp_{"fabricmon-daemon-test-cfg"};
  fs::path dir_;
  std::string config_;
};

TEST_F(DaemonTest, ServesReloadsAndStopsCleanly) {
  WriteFile(config_,
            "log_level: info\ncollectors:\n  ib_port:\n"
            "    interval: 100ms\n");
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const int port = daemon.Port();

  // Two scrapes; both see the recorded counters and healthy collectors.
  const std::string mlx5_0_state =
      "fabric_port_state{device=\"mlx5_0\",port=\"1\"} 4";
  std::string first;
  ASSERT_TRUE(WaitFor([&] {
    first = Scrape(port);
    return first.find(mlx5_0_state) != std::string::npos;
  })) << first;
  EXPECT_THAT(first,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1"));
  EXPECT_THAT(first, HasSubstr("fabric_build_info{"));
  EXPECT_THAT(first, HasSubstr("fabric_port_receive_bytes_total{device="
                               "\"mlx5_1\",port=\"1\"} 820514751096996"));
  std::string second = Scrape(port);
  EXPECT_THAT(second, HasSubstr(mlx5_0_state));
  EXPECT_THAT(second,
              HasSubstr("# TYPE fabric_collector_duration_seconds gauge"));

  // Good new config: exclude mlx5_0 everywhere.
  WriteFile(config_, "devices:\n  exclude: [mlx5_0]\n");
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    std::string text = Scrape(port);
    return !text.empty() &&
           text.find("device=\"mlx5_0\"") == std::string::npos &&
           text.find("device=\"mlx5_1\"") != std::string::npos;
  })) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("reload done"));

  // Bad new config: rejected, logged with the key; old config keeps running.
  WriteFile(config_,
            "devices:\n  exclude: [mlx5_0]\ncollectors:\n"
            "  ib_port:\n    interval: fast\n");
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return daemon.Stderr().find("reload rejected") != std::string::npos;
  })) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(),
              HasSubstr("collectors.ib_port.interval (line 5): \"fast\" is "
                        "not a duration"));
  std::string after = Scrape(port);
  EXPECT_THAT(after, HasSubstr("fabric_port_state{device=\"mlx5_1\""));
  EXPECT_THAT(after, Not(HasSubstr("device=\"mlx5_0\"")));

  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("stopped"));
}

TEST_F(DaemonTest, ReloadRestartsOnlyChangedCollectors) {
  WriteFile(config_, "log_level: info\n");
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  WriteFile(config_,
            "log_level: info\ncollectors:\n  ib_port:\n"
            "    interval: 2s\n");
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return daemon.Stderr().find("reload done") != std::string::npos;
  })) << daemon.Stderr();
  std::string log = daemon.Stderr();
  EXPECT_THAT(log, HasSubstr("ib_port: settings changed, restarting"));
  EXPECT_THAT(log, Not(HasSubstr("hw_counters: settings changed")));
  // The restarted collector publishes after its first collection, which a
  // slow machine (or a TSan build) may not have finished yet.
  EXPECT_TRUE(WaitFor([&] {
    return Scrape(daemon.Port())
               .find("fabric_collector_success{collector=\"ib_port\"}") !=
           std::string::npos;
  }));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
}

TEST_F(DaemonTest, DeviceRemovedWhileRunningKeepsServing) {
  fs::path root = dir_ / "sys";
  fs::copy(H100(), root, fs::copy_options::recursive);
  WriteFile(config_,
            "collectors:\n  ib_port:\n    interval: 100ms\n"
            "  hw_counters:\n    interval: 100ms\n"
            // Polled every minute by default: their series of a removed
            // device would linger that long.
            "  nic_identity:\n    interval: 1s\n"
            "  fabric_class:\n    interval: 1s\n");
  Process daemon({"--config", config_, "--sysfs.root", root.string(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const std::string gone = "fabric_port_state{device=\"mlx5_4\"";
  ASSERT_TRUE(WaitFor(
      [&] { return Scrape(daemon.Port()).find(gone) != std::string::npos; }));
  fs::remove_all(root / "class/infiniband/mlx5_4");
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    // Every collector has polled since the removal (the slowest at 1s).
    return !text.empty() && text.find("device=\"mlx5_4\"") == std::string::npos;
  })) << daemon.Stderr();
  EXPECT_THAT(text, HasSubstr("fabric_port_state{device=\"mlx5_1\""));
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

TEST_F(DaemonTest, ReloadRebindsWhenListenAddressChanges) {
  WriteFile(config_, "listen_address: \"127.0.0.1:0\"\n");
  Process daemon({"--config", config_, "--sysfs.root", H100()});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const int old_port = daemon.Port();
  // Port 0 again is a different address string only if written so; use an
  // explicit second form that binds a new ephemeral port.
  WriteFile(config_, "listen_address: \"localhost:0\"\n");
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return daemon.Stderr().find("reload done") != std::string::npos;
  })) << daemon.Stderr();
  const int new_port = daemon.Port();
  EXPECT_NE(new_port, old_port);
  EXPECT_THAT(Scrape(new_port), HasSubstr("fabric_build_info"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
}

TEST_F(DaemonTest, InvalidConfigExitsNonZeroNamingTheKey) {
  WriteFile(config_,
            "listen_address: \":10915\"\ndevices:\n  include: "
            "[\"mlx5_[\"]\n");
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_THAT(daemon.Stderr(), HasSubstr("config error: devices.include "
                                         "(line 3): \"mlx5_[\" is not a "
                                         "valid regex"));

  Process check({"--check-config", "--config", config_});
  EXPECT_EQ(check.Wait(), 1);
  EXPECT_THAT(check.Stderr(), HasSubstr("config error: devices.include "
                                        "(line 3): \"mlx5_[\" is not a "
                                        "valid regex"));
}

TEST_F(DaemonTest, CheckConfigAcceptsValidAndShippedConfigs) {
  WriteFile(config_, "collectors:\n  ib_port:\n    interval: 2s\n");
  Process check({"--check-config", "--config", config_});
  EXPECT_EQ(check.Wait(), 0) << check.Stderr();
  Process shipped({"--check-config", "--config",
                   testing::SourceDir() + "/config/fabricmon.yaml"});
  EXPECT_EQ(shipped.Wait(), 0) << shipped.Stderr();
  EXPECT_THAT(shipped.Stderr(), HasSubstr("config ok: "));
  EXPECT_THAT(shipped.Stderr(), HasSubstr("config/fabricmon.yaml"));
}

// --signal-reload PID, the unit's ExecReload (no /bin/kill needed): SIGHUP
// to that daemon. Anything but a positive PID is a usage error (kill() with
// 0 or -1 would signal whole process groups); a PID that is gone, exit 1.
TEST_F(DaemonTest, SignalReloadSendsSighupToThePid) {
  WriteFile(config_, "log_level: info\n");
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  WriteFile(config_,
            "log_level: info\ncollectors:\n  ib_port:\n    interval: 2s\n");
  Process reload({"--signal-reload", std::to_string(daemon.Pid())});
  EXPECT_EQ(reload.Wait(), 0) << reload.Stderr();
  ASSERT_TRUE(WaitFor([&] {
    return daemon.Stderr().find("reload done") != std::string::npos;
  })) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("ib_port: settings changed"));
  for (const char* bad : {"0", "-1", "x"}) {
    Process refused({"--signal-reload", bad});
    EXPECT_NE(refused.Wait(), 0) << bad;
  }
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
  Process gone({"--signal-reload", std::to_string(daemon.Pid())});
  EXPECT_EQ(gone.Wait(), 1);
  EXPECT_THAT(gone.Stderr(), HasSubstr("refusing to send SIGHUP"));
  EXPECT_THAT(gone.Stderr(), HasSubstr("is not running"));
}

// Under systemd (RuntimeDirectory= sets $RUNTIME_DIRECTORY for the daemon
// and for ExecReload) --signal-reload waits for the running daemon's own
// verdict: a config the daemon rejects fails the reload command, with the
// daemon's reason, and the running config stays. The daemon, not a separate
// --check-config, judges what it reads (systemd 252 hides credentials from
// a sandboxed ExecReload).
TEST_F(DaemonTest, SignalReloadFailsWhenTheDaemonRejectsTheReload) {
  WriteFile(config_, "log_level: info\n");
  const std::vector<std::string> env = {"RUNTIME_DIRECTORY=" + dir_.string()};
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"},
                 env);
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ / "reload-verdict"); }));
  WriteFile(config_, "log_level: info\ndevices:\n  include: [\"mlx5_[\"]\n");
  Process bad({"--signal-reload", std::to_string(daemon.Pid())}, env);
  EXPECT_EQ(bad.Wait(), 1) << bad.Stderr();
  EXPECT_THAT(bad.Stderr(), HasSubstr("reload rejected, keeping the running "
                                      "config: config error: devices.include "
                                      "(line 3)"));
  WriteFile(config_,
            "log_level: info\ncollectors:\n  ib_port:\n    interval: 2s\n");
  Process good({"--signal-reload", std::to_string(daemon.Pid())}, env);
  EXPECT_EQ(good.Wait(), 0) << good.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("reload done"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
}

// Issue 39: `--signal-reload 1` sent SIGHUP to init. PID 1 and a process
// that is not a fabricmon (this test itself: were it signalled, SIGHUP
// would end it) are refused, exit 1, with the reason.
TEST_F(DaemonTest, SignalReloadRefusesWhatIsNotAFabricmon) {
  Process init({"--signal-reload", "1"});
  EXPECT_EQ(init.Wait(), 1);
  EXPECT_THAT(init.Stderr(), HasSubstr("refusing to send SIGHUP: PID 1 is "
                                       "the init process"));
  const std::string self = std::to_string(::getpid());
  Process test({"--signal-reload", self});
  EXPECT_EQ(test.Wait(), 1);
  EXPECT_THAT(test.Stderr(), HasSubstr("PID " + self + " is \""));
  EXPECT_THAT(test.Stderr(), HasSubstr("not a fabricmon"));
}

TEST_F(DaemonTest, ExplicitMissingConfigIsAnError) {
  Process daemon({"--once", "--config", (dir_ / "absent.yaml").string()});
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_THAT(daemon.Stderr(), HasSubstr("cannot read"));
}

TEST_F(DaemonTest, BadFlagValueIsAConfigError) {
  Process daemon({"--once", "--config", "/dev/null", "--log.level", "loud"});
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_THAT(daemon.Stderr(), HasSubstr("--log.level"));
}

TEST_F(DaemonTest, OnceOnEmptyTreePrintsSelfMetrics) {
  fs::create_directories(dir_ / "sys/class/infiniband");
  fs::create_directories(dir_ / "sys/class/net");
  Process once({"--once", "--config", "/dev/null", "--sysfs.root",
                (dir_ / "sys").string()});
  ASSERT_EQ(once.Wait(), 0) << once.Stderr();
  std::string out = once.Stdout();
  EXPECT_THAT(out, HasSubstr("fabric_build_info{"));
  EXPECT_THAT(out,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1"));
  EXPECT_THAT(out, Not(HasSubstr("fabric_port_state")));
}

TEST_F(DaemonTest, OnceMatchesWhatTheDaemonServes) {
  // Same code path: every family --once prints is served at /metrics.
  Process once({"--once", "--config", "/dev/null", "--sysfs.root", H100()});
  ASSERT_EQ(once.Wait(), 0);
  Process daemon({"--config", "/dev/null", "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; }));
  std::vector<std::string> types;
  std::istringstream in(once.Stdout());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) types.push_back(line);
  }
  // Collectors publish independently (and some need two polls before they
  // export), so wait until every collector has had its first rounds.
  std::string served, missing;
  bool all = WaitFor([&] {
    served = Scrape(daemon.Port());
    missing.clear();
    for (const auto& t : types) {
      if (served.find(t + "\n") == std::string::npos) missing += t + "\n";
    }
    return missing.empty();
  });
  EXPECT_TRUE(all) << "families printed by --once but not served:\n" << missing;
  EXPECT_GT(types.size(), 10u);
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
}

// A copy of the H100 tree in which opening mlx5_0's port_xmit_data blocks,
// like a sysfs read stuck in firmware: the daemon runs with
// tests/preload/hang_open.cc preloaded (`env`), which holds that open for
// as long as `release` exists (forever when it is empty).
struct HungTree {
  std::string root;
  std::vector<std::string> env;
};
constexpr char kHungCounter[] =
    "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data";

HungTree MakeHungTree(const fs::path& dir, const std::string& release = "") {
  fs::path root = dir / "hung-sys";
  fs::copy(H100(), root, fs::copy_options::recursive);
  root = fs::canonical(root);
  HungTree tree{root.string(),
                {"LD_PRELOAD=" + testing::Binary("libfabric_hang_open.so"),
                 "FABRICMON_TEST_HANG_PATH=" + (root / kHungCounter).string(),
                 // A sanitizer build would refuse a preload ahead of it.
                 "ASAN_OPTIONS=verify_asan_link_order=0"}};
  if (!release.empty()) {
    tree.env.push_back("FABRICMON_TEST_HANG_WHILE=" + release);
  }
  return tree;
}

TEST_F(DaemonTest, OnceReportsHungCollectorAndExits) {
  const HungTree hung = MakeHungTree(dir_);
  WriteFile(config_, "collectors:\n  ib_port:\n    timeout: 300ms\n");
  Process once({"--once", "--config", config_, "--sysfs.root", hung.root},
               hung.env);
  ASSERT_EQ(once.Wait(), 0) << once.Stderr();
  std::string out = once.Stdout();
  EXPECT_THAT(out,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 0"));
  EXPECT_THAT(
      out,
      HasSubstr(
          "fabric_collector_duration_seconds{collector=\"ib_port\"} 0.3\n"));
  EXPECT_THAT(
      out, HasSubstr("fabric_collector_success{collector=\"hw_counters\"} 1"));
  EXPECT_THAT(out, HasSubstr("fabric_hw_counters_total{"));
  EXPECT_THAT(out, Not(HasSubstr("fabric_port_state{")));
  EXPECT_THAT(once.Stderr(), HasSubstr("ib_port: collection overran"));
}

TEST_F(DaemonTest, DaemonReportsHungCollectorKeepsServingAndStops) {
  const HungTree hung = MakeHungTree(dir_);
  WriteFile(config_,
            "collectors:\n  ib_port:\n    interval: 100ms\n"
            "    timeout: 300ms\n");
  Process daemon({"--config", config_, "--sysfs.root", hung.root,
                  "--web.listen-address", "127.0.0.1:0"},
                 hung.env);
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    return text.find("fabric_collector_success{collector=\"ib_port\"} 0") !=
           std::string::npos;
  })) << text
      << daemon.Stderr();
  EXPECT_THAT(
      text, HasSubstr("fabric_collector_success{collector=\"hw_counters\"} 1"));
  EXPECT_THAT(text, Not(HasSubstr("fabric_port_state{")));
  // Still serving while the collection stays stuck.
  EXPECT_THAT(Scrape(daemon.Port()), HasSubstr("fabric_hw_counters_total{"));
  // Never a second ib_port collection while the first is stuck.
  EXPECT_EQ(daemon.Stderr().find("late collection returned"),
            std::string::npos);
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("exiting anyway"));
}

// A bound unix datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = (fs::temp_directory_path() /
             ("daemon_test_notify." + std::to_string(getpid())))
                .string();
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

  // Next datagram, or "" if none arrives within `patience`.
  std::string Receive(std::chrono::milliseconds patience = kPatience) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, patience.count()) <= 0) {
      return "";
    }
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, n) : "";
  }
  // Reads what is queued without waiting. A test that waits on something
  // else must drain as systemd does: a unix datagram queue holds only ~10
  // messages, and a full one blocks the daemon's sd_notify (its event loop,
  // logs and all) until read.
  void Drain() {
    while (!Receive(std::chrono::milliseconds(0)).empty()) {
    }
  }
  // Receives until a datagram containing `want` arrives; returns everything
  // received on the way (including that datagram), "" on timeout.
  std::string ReceiveUntil(const std::string& want) {
    std::string all;
    for (;;) {
      std::string msg = Receive();
      if (msg.empty()) return "";
      all += msg + "\n";
      if (msg.find(want) != std::string::npos) return all;
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool ok_ = false;
};

TEST_F(DaemonTest, NotifiesSystemdReadyWatchdogStopping) {
  NotifySocket notify;
  ASSERT_TRUE(notify.ok());
  Process daemon({"--config", "/dev/null", "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"},
                 {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000"});
  std::string before_ready = notify.ReceiveUntil("READY=1");
  ASSERT_THAT(before_ready, HasSubstr("READY=1")) << daemon.Stderr();
  // READY comes after the listener is bound: the port is already logged
  // and answers.
  ASSERT_GT(daemon.Port(), 0);
  EXPECT_THAT(Scrape(daemon.Port()), HasSubstr("fabric_build_info"));
  // Watchdog pings keep coming from the event loop (period 100ms).
  EXPECT_THAT(notify.ReceiveUntil("WATCHDOG=1"), HasSubstr("WATCHDOG=1"));
  EXPECT_THAT(notify.ReceiveUntil("WATCHDOG=1"), HasSubstr("WATCHDOG=1"));
  daemon.Signal(SIGTERM);
  EXPECT_THAT(notify.ReceiveUntil("STOPPING=1"), HasSubstr("STOPPING=1"));
  EXPECT_EQ(daemon.Wait(), 0);
}

TEST_F(DaemonTest, NoWatchdogWithoutWatchdogUsec) {
  NotifySocket notify;
  ASSERT_TRUE(notify.ok());
  Process daemon({"--config", "/dev/null", "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"},
                 {"NOTIFY_SOCKET=" + notify.path()});
  std::string ready = notify.ReceiveUntil("READY=1");
  ASSERT_THAT(ready, HasSubstr("READY=1"));
  daemon.Signal(SIGTERM);
  std::string rest = notify.ReceiveUntil("STOPPING=1");
  EXPECT_THAT(rest, HasSubstr("STOPPING=1"));
  EXPECT_THAT(ready + rest, Not(HasSubstr("WATCHDOG=1")));
  EXPECT_EQ(daemon.Wait(), 0);
}

// A daemon whose every collection is wedged stops feeding the watchdog, so
// systemd restarts it; its event loop still serves and reports the stuck
// collector.
TEST_F(DaemonTest, StopsFeedingTheWatchdogWhenEveryCollectionIsStuck) {
  NotifySocket notify;
  ASSERT_TRUE(notify.ok());
  const HungTree hung = MakeHungTree(dir_);
  std::string yaml =
      "collectors:\n  ib_port:\n    interval: 100ms\n    timeout: 300ms\n";
  for (const auto& name : CollectorNames()) {
    if (name != "ib_port") yaml += "  " + name + ": {enabled: false}\n";
  }
  WriteFile(config_, yaml);
  std::vector<std::string> env = hung.env;
  env.push_back("NOTIFY_SOCKET=" + notify.path());
  env.push_back("WATCHDOG_USEC=200000");
  Process daemon({"--config", config_, "--sysfs.root", hung.root,
                  "--web.listen-address", "127.0.0.1:0"},
                 env);
  ASSERT_THAT(notify.ReceiveUntil("READY=1"), HasSubstr("READY=1"))
      << daemon.Stderr();
  ASSERT_TRUE(WaitFor([&] {
    notify.Drain();
    return daemon.Stderr().find("no longer feeding the systemd watchdog") !=
           std::string::npos;
  })) << daemon.Stderr();
  // Drain what was sent before; from here on no ping may come (period
  // 100 ms, so ten would have come in this second).
  notify.Drain();
  std::string later;
  for (std::string msg;
       !(msg = notify.Receive(std::chrono::milliseconds(1000))).empty();) {
    later += msg + "\n";
  }
  EXPECT_THAT(later, Not(HasSubstr("WATCHDOG=1")));
  std::string text = Scrape(daemon.Port());
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_stuck{collector=\"ib_port\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 0"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

// A UDP port on loopback that was free a moment ago (the kernel's pick).
int FreeUdpPort() {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// fabric_probe_sent_total of the series with peer="`peer`", -1 if absent.
double ProbesSent(const std::string& text, const std::string& peer) {
  std::istringstream in(text);
  const std::string label = "peer=\"" + peer + "\"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("fabric_probe_sent_total{", 0) == 0 &&
        line.find(label) != std::string::npos) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return -1;
}

// SIGHUP re-reads collectors.probe.peers_file even when the file looks
// unchanged (same inode, size and mtime, so the collector's change poll
// cannot see it): the operator's way to force a re-read.
TEST_F(DaemonTest, SighupRereadsProbePeersFile) {
  const std::string key = dir_ / "probe.key", peers = dir_ / "peers.txt";
  WriteFile(key, std::string(64, 'a') + "\n");
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  const int listen = FreeUdpPort(), dead = FreeUdpPort();
  ASSERT_GT(listen, 0);
  ASSERT_GT(dead, 0);
  // Nobody answers on these: sent_total counts, the probes are lost. Same
  // length, so the rewrite keeps the file's size.
  const std::string old_peer = "127.0.0.2:" + std::to_string(dead);
  const std::string new_peer = "127.0.0.3:" + std::to_string(dead);
  WriteFile(peers, old_peer + "\n");
  WriteFile(config_,
            "collectors:\n  probe:\n    enabled: true\n"
            "    interval: 100ms\n"
            "    listen_address: \"127.0.0.1:" +
                std::to_string(listen) + "\"\n    key_file: " + key +
                "\n    peers_file: " + peers + "\n");
  Process daemon({"--config", config_, "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const int port = daemon.Port();
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(port);
    return ProbesSent(text, old_peer) > 0;
  })) << text
      << daemon.Stderr();

  // Rewrite in place, then put the old mtime back. (A change poll that ran
  // between the two calls, microseconds apart once a second, would re-read
  // early and fail the check before SIGHUP below.)
  struct stat before {};
  ASSERT_EQ(stat(peers.c_str(), &before), 0);
  {
    std::fstream f(peers, std::ios::in | std::ios::out);
    f << new_peer << "\n";
  }
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, peers.c_str(), times, 0), 0);
  struct stat after {};
  ASSERT_EQ(stat(peers.c_str(), &after), 0);
  ASSERT_EQ(after.st_ino, before.st_ino);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);

  // Two more snapshots (the count grows twice): the second was collected
  // after the rewrite, and still probes the old peer. Without this the
  // check below could pass on the change poll alone.
  for (int i = 0; i < 2; ++i) {
    double seen = ProbesSent(Scrape(port), old_peer);
    ASSERT_TRUE(WaitFor([&] {
      text = Scrape(port);
      return ProbesSent(text, old_peer) > seen;
    })) << text;
  }
  EXPECT_LT(ProbesSent(text, new_peer), 0) << text;

  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(port);
    return ProbesSent(text, new_peer) > 0 && ProbesSent(text, old_peer) < 0;
  })) << text
      << daemon.Stderr();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

// The value of the first exposition line starting with `series` ("name" or
// "name{labels}"), -1 if there is none.
double Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// Sends SIGHUP with `yaml` as the config and waits for the reload to finish
// (the `n`th "reload done").
::testing::AssertionResult Reload(Process& daemon, const std::string& config,
                                  const std::string& yaml, std::size_t n) {
  WriteFile(config, yaml);
  daemon.Signal(SIGHUP);
  if (WaitFor([&] { return Count(daemon.Stderr(), "reload done") >= n; })) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << daemon.Stderr();
}

// A node with 20 RDMA devices under `ulimit -n 1024` (systemd's default
// soft limit; the hard limit too here, so raising it cannot help): the sysfs
// readers keep descriptors only within their budget, so /metrics answers,
// and the descriptors in use are exported.
TEST_F(DaemonTest, TwentyDevicesUnderAThousandDescriptorsServe) {
  const fs::path root = dir_ / "sys";
  fs::copy(H100(), root, fs::copy_options::recursive);
  const fs::path ib = root / "class/infiniband";
  std::size_t devices = 0;
  for (const auto& entry : fs::directory_iterator(ib)) {
    (void)entry;
    ++devices;
  }
  std::string last;
  for (int i = 100; devices < 20; ++i, ++devices) {
    last = "mlx5_" + std::to_string(i);
    fs::copy(ib / "mlx5_0", ib / last, fs::copy_options::recursive);
  }
  ASSERT_FALSE(last.empty());
  Process daemon({"--config", "/dev/null", "--sysfs.root", root.string(),
                  "--web.listen-address", "127.0.0.1:0"},
                 {}, 1024);
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    return text.find("fabric_port_state{device=\"" + last + "\"") !=
               std::string::npos &&
           text.find(
               "fabric_hw_counters_total{counter=\"duplicate_request\","
               "device=\"" +
               last + "\"") != std::string::npos;
  })) << text.substr(0, 2000)
      << daemon.Stderr();
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1"));
  EXPECT_EQ(Value(text, "fabric_daemon_max_fds"), 1024);
  EXPECT_EQ(Value(text, "fabric_daemon_kept_fds_budget"), 1024 - 256);
  const double open = Value(text, "fabric_daemon_open_fds");
  EXPECT_GT(open, 0);
  EXPECT_LT(open, 1024);
  EXPECT_LE(Value(text, "fabric_daemon_kept_fds"), 1024 - 256);
  EXPECT_THAT(daemon.Stderr(), HasSubstr("descriptor limit 1024"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

// A counter file replaced by a FIFO fails to read instead of blocking the
// collection; reloads that restart ib_port then leave no collection behind
// holding descriptors, and once the FIFO is gone every collector reading
// that counter (ib_port, congestion) recovers.
TEST_F(DaemonTest, FifoCounterFileNeitherBlocksNorLeaksDescriptors) {
  const fs::path root = dir_ / "sys";
  fs::copy(H100(), root, fs::copy_options::recursive);
  const fs::path fifo = root / kHungCounter;
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  auto yaml = [](int interval_ms) {
    return "collectors:\n  ib_port:\n    interval: " +
           std::to_string(interval_ms) +
           "ms\n    timeout: 300ms\n  congestion:\n    interval: 100ms\n";
  };
  WriteFile(config_, yaml(100));
  Process daemon({"--config", config_, "--sysfs.root", root.string(),
                  "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const std::string ib_port_ran =
      "fabric_collector_duration_seconds{collector=\"ib_port\"}";
  // The baseline is taken once every collector has collected and the
  // descriptors the readers keep have settled (the same on two scrapes a
  // second apart): on a loaded machine ib_port can finish its first
  // collection long before the others open theirs.
  std::string text, previous;
  ASSERT_TRUE(WaitFor([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    previous = std::move(text);
    text = Scrape(daemon.Port());
    const auto collected = [](const std::string& t) {
      return Count(t, "fabric_collector_duration_seconds{");
    };
    return text.find(ib_port_ran) != std::string::npos &&
           text.find("fabric_port_state{device=\"mlx5_0\"") !=
               std::string::npos &&
           collected(text) == collected(previous) &&
           Value(text, "fabric_daemon_kept_fds") ==
               Value(previous, "fabric_daemon_kept_fds");
  })) << daemon.Stderr();
  const double before = Value(text, "fabric_daemon_open_fds");
  const double kept_before = Value(text, "fabric_daemon_kept_fds");
  ASSERT_GT(before, 0) << text.substr(0, 2000);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(Reload(daemon, config_, yaml(100 + 10 * i), i));
  }
  // The same collectors on the same tree: the same descriptors, give or
  // take a collection or a scrape in flight. (A reload may land while
  // ib_port collects and abandon that collection; it returns at once and
  // gives its descriptors back.)
  double after = -1;
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    after = Value(text, "fabric_daemon_open_fds");
    return after > 0 && after <= before + 16 &&
           text.find("fabric_port_state{device=\"mlx5_0\"") !=
               std::string::npos;
  })) << "open descriptors "
      << before << " before the reloads, " << after << " after (kept "
      << kept_before << ", " << Value(text, "fabric_daemon_kept_fds") << ")\n"
      << daemon.Stderr();
  EXPECT_EQ(Value(text, "fabric_collector_stuck{collector=\"ib_port\"}"), 0);

  fs::remove(fifo);
  WriteFile(fifo.string(), "1000\n");
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    return Value(text,
                 "fabric_port_transmit_bytes_total{device=\"mlx5_0\","
                 "port=\"1\"}") == 4000 &&
           Value(text, "fabric_collector_success{collector=\"ib_port\"}") ==
               1 &&
           Value(text, "fabric_collector_success{collector=\"congestion\"}") ==
               1;
  })) << text.substr(0, 2000)
      << daemon.Stderr();
  EXPECT_EQ(Value(text, "fabric_collector_stuck{collector=\"congestion\"}"), 0);
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

// A collection stuck in the kernel is abandoned by the first reload that
// changes its collector, and the collector is not started again onto the
// same hung file while it stays stuck: however many reloads, one thread and
// one set of descriptors. When the read returns, its descriptors are given
// back and the collector starts again.
TEST_F(DaemonTest, StuckCollectorRestartsOnlyOnceItsCollectionReturns) {
  const std::string release = (dir_ / "hold").string();
  WriteFile(release, "");
  const HungTree hung = MakeHungTree(dir_, release);
  auto yaml = [](int interval_ms) {
    std::string text = "collectors:\n  ib_port:\n    interval: " +
                       std::to_string(interval_ms) + "ms\n    timeout: 300ms\n";
    for (const auto& name : CollectorNames()) {
      if (name != "ib_port") text += "  " + name + ": {enabled: false}\n";
    }
    return text;
  };
  WriteFile(config_, yaml(100));
  Process daemon({"--config", config_, "--sysfs.root", hung.root,
                  "--web.listen-address", "127.0.0.1:0"},
                 hung.env);
  ASSERT_TRUE(WaitFor([&] {
    return daemon.Stderr().find("ib_port: collection overran") !=
           std::string::npos;
  })) << daemon.Stderr();
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(Reload(daemon, config_, yaml(100 + 10 * i), i));
  }
  std::string log = daemon.Stderr();
  EXPECT_EQ(Count(log, "its running collection is abandoned"), 1u) << log;
  EXPECT_THAT(log, HasSubstr("ib_port: not started while its abandoned "
                             "collection is stuck"));
  std::string text = Scrape(daemon.Port());
  EXPECT_EQ(Value(text, "fabric_collector_stuck{collector=\"ib_port\"}"), 1)
      << text;

  fs::remove(release);
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape(daemon.Port());
    return Value(text, "fabric_collector_success{collector=\"ib_port\"}") == 1;
  })) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(),
              HasSubstr("ib_port: its abandoned collection returned"));
  EXPECT_THAT(text, HasSubstr("fabric_port_transmit_bytes_total{device="
                              "\"mlx5_0\",port=\"1\"}"));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), Not(HasSubstr("exiting anyway")));
}

// A daemon whose /metrics listener is gone (destroyed from outside with
// `ss -K`, as a descriptor shortage or a broken network stack could leave
// it) stops feeding the watchdog although its event loop and collections
// still run, and logs why.
TEST_F(DaemonTest, StopsFeedingTheWatchdogWhenMetricsDoesNotAnswer) {
  if (std::system("ss -V >/dev/null 2>&1") != 0) {
    MISSING_DEPENDENCY("ss (iproute2) not found");
  }
  NotifySocket notify;
  ASSERT_TRUE(notify.ok());
  Process daemon({"--config", "/dev/null", "--sysfs.root", H100(),
                  "--web.listen-address", "127.0.0.1:0"},
                 {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000"});
  ASSERT_THAT(notify.ReceiveUntil("READY=1"), HasSubstr("READY=1"))
      << daemon.Stderr();
  ASSERT_THAT(notify.ReceiveUntil("WATCHDOG=1"), HasSubstr("WATCHDOG=1"));
  const int port = daemon.Port();
  const std::string kill =
      "ss -K -t state listening sport = :" + std::to_string(port) +
      " >/dev/null 2>&1";
  ASSERT_EQ(std::system(kill.c_str()), 0);
  if (!Scrape(port).empty()) {
    MISSING_DEPENDENCY(
        "ss -K cannot destroy sockets here "
        "(CONFIG_INET_DIAG_DESTROY, CAP_NET_ADMIN)");
  }
  ASSERT_TRUE(WaitFor([&] {
    notify.Drain();
    return daemon.Stderr().find("the /metrics self-check got no answer") !=
           std::string::npos;
  })) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("no longer feeding the systemd "
                                         "watchdog"));
  // From here on no ping may come (period 100 ms: ten would in a second).
  notify.Drain();
  std::string later;
  for (std::string msg;
       !(msg = notify.Receive(std::chrono::milliseconds(1000))).empty();) {
    later += msg + "\n";
  }
  EXPECT_THAT(later, Not(HasSubstr("WATCHDOG=1")));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Stderr();
}

}  // namespace
}  // namespace fabric
