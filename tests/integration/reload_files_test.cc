// SIGHUP reloads that name a file the daemon must not read: a FIFO or
// /dev/zero as the config, the web config or the TLS key, and an empty file
// or a directory as the config. Each is refused with the path and the
// reason while /metrics keeps answering within its timeout, the running
// config stays (its series too), RSS does not grow, and SIGTERM still stops
// the daemon. Also: `interval: 1us` is refused by --check-config with the key
// and line. The names the daemon is given are symlinks, re-pointed between
// reloads the way a config-management tool swaps files. And a web config
// reload never turns TLS or basic auth off unless the file says so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Far above the ~20 MB the daemon uses, far below what /dev/zero read at
// ~1 GB/s reaches.
constexpr long kMaxRssKb = 200 * 1024;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// VmRSS of `pid` in kB, -1 when unknown.
long RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Points the symlink `link` at `target`, replacing it in one rename.
void Repoint(const fs::path& link, const fs::path& target) {
  const fs::path tmp = link.string() + ".new";
  fs::remove(tmp);
  fs::create_symlink(target, tmp);
  fs::rename(tmp, link);
}

class ReloadFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    log_ = dir_ / "fabricmon.log";
    fifo_ = dir_ / "fifo";
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
    // The running config: mlx5_0 excluded, so that a reload that fell back
    // to the defaults would show it again.
    std::ofstream(dir_ / "good.yaml") << "devices:\n  exclude: [mlx5_0]\n"
                                         "collectors:\n  ib_port:\n"
                                         "    interval: 100ms\n";
    config_ = dir_ / "fabricmon.yaml";
    fs::create_symlink(dir_ / "good.yaml", config_);
  }
  void TearDown() override { daemon_.reset(); }

  // Starts the daemon on the H100 fixture; its port, 0 if it did not start.
  int Start(const std::string& extra_args = "") {
    daemon_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + config_.string() +
            " --sysfs.root " + Fixture("real/sysfs-gpud-h100") +
            " --web.listen-address 127.0.0.1:0 " + extra_args,
        log_.string());
    static const std::regex re(R"(listening on [^\s]*:(\d+))");
    int port = 0;
    WaitFor([&] {
      std::smatch m;
      const std::string text = ReadFile(log_);
      if (std::regex_search(text, m, re)) port = std::stoi(m[1]);
      return port > 0 || !daemon_->running();
    });
    return port;
  }

  // Sends SIGHUP and runs `during` while the daemon reloads; true once it
  // has logged one more rejected reload (false if it never does).
  bool ReloadRejected(const std::function<void()>& during = [] {}) {
    const int before = Count(ReadFile(log_), "reload rejected");
    daemon_->Signal(SIGHUP);
    during();
    return WaitFor(
        [&] { return Count(ReadFile(log_), "reload rejected") > before; }, 20s);
  }

  // SIGTERM; true when the daemon exits with status 0.
  bool Stops() {
    daemon_->Signal(SIGTERM);
    const int status = daemon_->Wait(20s);
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  testing::TempDir tmp_{"fabricmon-reload-files"};

  fs::path dir_, log_, fifo_, config_;
  std::unique_ptr<sim::Session> daemon_;
};

// The series ExpectRunningConfig looks for, once ib_port has collected.
bool ServesRunningConfig(int port) {
  return WaitFor([&] {
    auto body = HttpGetOk(port, "/metrics");
    return body &&
           body->find("fabric_port_state{device=\"mlx5_1\"") !=
               std::string::npos &&
           body->find("fabric_collector_success{collector=\"ib_port\"} 1") !=
               std::string::npos;
  });
}

// The running config's series: mlx5_1 read, mlx5_0 still excluded.
void ExpectRunningConfig(const std::optional<std::string>& body) {
  ASSERT_TRUE(body) << "no answer to a scrape";
  EXPECT_THAT(*body, HasSubstr("fabric_port_state{device=\"mlx5_1\""));
  EXPECT_THAT(*body, Not(HasSubstr("device=\"mlx5_0\"")));
  EXPECT_THAT(*body,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1"));
}

TEST_F(ReloadFilesTest, FifoOrDevZeroAsConfigIsRefusedWhileServing) {
  const int port = Start();
  ASSERT_GT(port, 0) << ReadFile(log_);
  ASSERT_TRUE(ServesRunningConfig(port)) << ReadFile(log_);
  for (const fs::path& target : {fifo_, fs::path("/dev/zero")}) {
    SCOPED_TRACE(target.string());
    Repoint(config_, target);
    // Scrapes answer (each within HttpGet's 5 s) while it reloads ...
    ASSERT_TRUE(ReloadRejected([&] {
      ExpectRunningConfig(HttpGetOk(port, "/metrics"));
    })) << ReadFile(log_);
    EXPECT_THAT(ReadFile(log_), HasSubstr("cannot read " + config_.string() +
                                          ": not a regular file"));
    // ... and after, with the running config.
    ExpectRunningConfig(HttpGetOk(port, "/metrics"));
    const long rss = RssKb(daemon_->pid());
    EXPECT_GT(rss, 0);
    EXPECT_LT(rss, kMaxRssKb);
  }
  EXPECT_THAT(ReadFile(log_), Not(HasSubstr("reload done")));
  EXPECT_TRUE(Stops()) << ReadFile(log_);
}

TEST_F(ReloadFilesTest, EmptyOrDirectoryConfigIsRefusedOldConfigKept) {
  const int port = Start();
  ASSERT_GT(port, 0) << ReadFile(log_);
  ASSERT_TRUE(ServesRunningConfig(port)) << ReadFile(log_);
  std::ofstream(dir_ / "empty.yaml").close();
  fs::create_directories(dir_ / "confdir");
  const struct {
    fs::path target;
    std::string why;
  } cases[] = {
      {dir_ / "empty.yaml", config_.string() + " is empty"},
      {dir_ / "confdir",
       "cannot read " + config_.string() + ": not a regular file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.target.string());
    Repoint(config_, c.target);
    ASSERT_TRUE(ReloadRejected()) << ReadFile(log_);
    EXPECT_THAT(ReadFile(log_), HasSubstr(c.why));
    ExpectRunningConfig(HttpGetOk(port, "/metrics"));
  }
  EXPECT_THAT(ReadFile(log_), Not(HasSubstr("reload done")));
  EXPECT_TRUE(Stops()) << ReadFile(log_);
}

TEST_F(ReloadFilesTest, FifoOrDevZeroAsTlsKeyOrWebConfigIsRefusedWhileServing) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    MISSING_DEPENDENCY("openssl CLI not installed");
  }
  std::string error;
  ASSERT_TRUE(MakeTestCa(dir_.string(), &error)) << error;
  fs::create_symlink(dir_ / "server.key", dir_ / "key.pem");
  std::ofstream(dir_ / "web-good.yml") << "tls_server_config:\n"
                                          "  cert_file: server.crt\n"
                                          "  key_file: key.pem\n";
  const fs::path web = dir_ / "web.yml";
  fs::create_symlink(dir_ / "web-good.yml", web);
  const int port = Start("--web.config.file " + web.string());
  ASSERT_GT(port, 0) << ReadFile(log_);
  FetchOptions tls;
  tls.port = port;
  tls.tls = true;
  tls.ca_file = (dir_ / "ca.crt").string();
  auto scrape_ok = [&] {
    auto r = Fetch(tls);
    return r && r->status == 200 &&
           r->body.find("fabric_build_info{") != std::string::npos;
  };
  ASSERT_TRUE(scrape_ok()) << ReadFile(log_);

  const struct {
    fs::path link, target;
    std::string why;
  } cases[] = {
      {dir_ / "key.pem", fifo_,
       "tls_server_config.key_file (line 3): cannot load private key " +
           (dir_ / "key.pem").string() + ": not a regular file"},
      {dir_ / "key.pem", "/dev/zero",
       "tls_server_config.key_file (line 3): cannot load private key " +
           (dir_ / "key.pem").string() + ": not a regular file"},
      {web, fifo_,
       "web config error: cannot read " + web.string() +
           ": not a regular file"},
      {web, "/dev/zero",
       "web config error: cannot read " + web.string() +
           ": not a regular file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.link.string() + " -> " + c.target.string());
    Repoint(c.link, c.target);
    // Scrapes answer while it reloads ...
    ASSERT_TRUE(ReloadRejected([&] { EXPECT_TRUE(scrape_ok()); }))
        << ReadFile(log_);
    EXPECT_THAT(ReadFile(log_), HasSubstr(c.why));
    EXPECT_TRUE(scrape_ok());  // ... and after, still over TLS
    const long rss = RssKb(daemon_->pid());
    EXPECT_GT(rss, 0);
    EXPECT_LT(rss, kMaxRssKb);
    // Back to the good file for the next case.
    Repoint(c.link,
            c.link == web ? dir_ / "web-good.yml" : dir_ / "server.key");
  }
  EXPECT_TRUE(Stops()) << ReadFile(log_);
}

// Issue 40, finding 1: a zero-byte or comment-only web.yml followed by
// SIGHUP used to turn TLS and basic auth off (logged at info level). Now an
// empty, comment-only or cut-short web config is refused at reload and by
// --check-config, naming the file; a reload that drops TLS or basic auth by
// omission is refused; and one that states it (`tls_server_config: {}`,
// `basic_auth_users: {}`) is applied with a warning naming what went off.
TEST_F(ReloadFilesTest, WebConfigReloadNeverTurnsTlsOrAuthOffSilently) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    MISSING_DEPENDENCY("openssl CLI not installed");
  }
  std::string error;
  ASSERT_TRUE(MakeTestCa(dir_.string(), &error)) << error;
  const std::string tls =
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  const std::string users =
      "basic_auth_users:\n  prometheus: " + BcryptHash("s3cr3t") + "\n";
  std::ofstream(dir_ / "web-good.yml") << tls << users;
  const fs::path web = dir_ / "web.yml";
  fs::create_symlink(dir_ / "web-good.yml", web);
  const int port = Start("--web.config.file " + web.string());
  ASSERT_GT(port, 0) << ReadFile(log_);
  FetchOptions secure;
  secure.port = port;
  secure.tls = true;
  secure.ca_file = (dir_ / "ca.crt").string();
  secure.user = "prometheus";
  secure.password = "s3cr3t";
  auto secure_ok = [&] {
    auto r = Fetch(secure);
    return r && r->status == 200 &&
           r->body.find("fabric_build_info{") != std::string::npos;
  };
  auto plain_ok = [&] {
    FetchOptions plain;
    plain.port = port;
    auto r = Fetch(plain);
    return r && r->status == 200;
  };
  ASSERT_TRUE(secure_ok()) << ReadFile(log_);
  ASSERT_FALSE(plain_ok());

  const std::string cut =
      "the file has no settings (empty, only comments, "
      "or cut short); write `{}`";
  const struct {
    std::string name, text, why;
  } cases[] = {
      {"empty.yml", "", cut},
      {"comments.yml", "# web config\n# (being rewritten)\n\n", cut},
      {"cut-after-key.yml", "tls_server_config:\n",
       "tls_server_config (line 1): has nothing under it (a file cut short?)"},
      {"users-only.yml", users,
       "web config " + web.string() +
           ": it would turn TLS off without saying so (write "
           "`tls_server_config: {}` to do it on purpose)"},
      {"tls-only.yml", tls,
       "it would turn basic auth off without saying so (write "
       "`basic_auth_users: {}` to do it on purpose)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::ofstream(dir_ / c.name) << c.text;
    Repoint(web, dir_ / c.name);
    ASSERT_TRUE(ReloadRejected()) << ReadFile(log_);
    EXPECT_THAT(ReadFile(log_), HasSubstr(c.why));
    EXPECT_TRUE(secure_ok()) << ReadFile(log_);  // TLS and auth kept
    EXPECT_FALSE(plain_ok());
  }
  EXPECT_THAT(ReadFile(log_), Not(HasSubstr("reload done")));
  EXPECT_THAT(ReadFile(log_), Not(HasSubstr("/metrics serves plain HTTP")));

  // --check-config (ExecStartPre, ExecReload) fails on an empty one too,
  // naming the file and the reason.
  const fs::path check_log = dir_ / "check.log";
  sim::Session check(Binary("fabricmon") + " --check-config --config " +
                         config_.string() + " --web.config.file " +
                         (dir_ / "empty.yml").string(),
                     check_log.string());
  const int status = check.Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(ReadFile(check_log),
              HasSubstr("web config error: " + cut.substr(0, 20)));
  EXPECT_THAT(ReadFile(check_log),
              HasSubstr("(in " + (dir_ / "empty.yml").string() + ")"));
  EXPECT_THAT(ReadFile(check_log), Not(HasSubstr("config ok")));

  // Stated on purpose: applied, with a warning naming what went off.
  std::ofstream(dir_ / "open.yml")
      << "tls_server_config: {}\nbasic_auth_users: {}\n";
  Repoint(web, dir_ / "open.yml");
  daemon_->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(log_).find("reload done") != std::string::npos;
  })) << ReadFile(log_);
  EXPECT_THAT(ReadFile(log_),
              HasSubstr("warning reload turns TLS off for /metrics, as " +
                        web.string() + " states"));
  EXPECT_THAT(ReadFile(log_),
              HasSubstr("warning reload turns basic auth off for /metrics"));
  EXPECT_TRUE(WaitFor(plain_ok)) << ReadFile(log_);
  EXPECT_TRUE(Stops()) << ReadFile(log_);
}

TEST(CheckConfigTest, MicrosecondIntervalIsRefusedWithKeyAndLine) {
  const fs::path path = fs::temp_directory_path() /
                        ("reload_files_test_1us." + std::to_string(getpid()));
  std::ofstream(path) << "log_level: info\ncollectors:\n  ib_port:\n"
                         "    interval: 1us\n";
  const fs::path log = path.string() + ".log";
  sim::Session check(
      Binary("fabricmon") + " --check-config --config " + path.string(),
      log.string());
  const int status = check.Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(ReadFile(log),
              HasSubstr("config error: collectors.ib_port.interval (line 4): "
                        "\"1us\" is below the minimum of 10ms"));
  fs::remove(path);
  fs::remove(log);
}

}  // namespace
}  // namespace fabric::testing
