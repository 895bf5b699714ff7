// The fabricmon daemon's /metrics server end to end: --web.config.file with
// TLS and basic auth scraped by a real Prometheus; a bad web config refused
// at start and on SIGHUP (key and line named, the running one kept); an
// IPv6 listen address; a Transfer-Encoding it does not implement refused
// (400, no second request); and 1,000 hostile connections at once (idle,
// slowloris, garbage, oversized) while a real scrape still gets through and
// every refusal is counted. Everything on loopback, each test its own
// daemon (and Prometheus) in its own session, killed at the end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>

#include "core/metric_names.h"
#include "http/server.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The last "listening on HOST:PORT" port in `log`, 0 if none yet.
int LoggedPort(const fs::path& log) {
  const std::string text = ReadFile(log);
  static const std::regex re(R"(listening on [^\s]*:(\d+))");
  int port = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    port = std::stoi((*it)[1]);
  }
  return port;
}

double Rejected(const std::string& body, const std::string& reason) {
  std::smatch m;
  const std::regex re("fabric_http_requests_rejected_total\\{reason=\"" +
                      reason + "\"\\} ([0-9.e+]+)");
  return std::regex_search(body, m, re) ? std::stod(m[1]) : -1;
}

class HttpDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }
  void TearDown() override { daemon_.reset(); }
  // Starts fabricmon on the H100 fixture; returns its port (0 = failed).
  int StartDaemon(const std::string& listen,
                  const std::string& extra_args = "") {
    log_ = dir_ / "fabricmon.log";
    daemon_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config /dev/null --sysfs.root " +
            Fixture("real/sysfs-gpud-h100") + " --web.listen-address '" +
            listen + "' " + extra_args,
        log_.string());
    int port = 0;
    WaitFor([&] {
      port = LoggedPort(log_);
      return port > 0 || !daemon_->running() ||
             ReadFile(log_).find("error") != std::string::npos;
    });
    return port;
  }
  std::string WriteTlsWebConfig(const std::string& users) {
    std::string error;
    EXPECT_TRUE(MakeTestCa(dir_.string(), &error)) << error;
    const fs::path path = dir_ / "web.yml";
    std::ofstream(path) << "tls_server_config:\n"
                           "  cert_file: server.crt\n"
                           "  key_file: server.key\n"
                           "basic_auth_users:\n"
                        << users;
    return path.string();
  }
  FetchOptions Tls(int port, const std::string& user,
                   const std::string& password) {
    FetchOptions o;
    o.port = port;
    o.tls = true;
    o.ca_file = (dir_ / "ca.crt").string();
    o.user = user;
    o.password = password;
    return o;
  }
  testing::TempDir tmp_{"fabricmon-http-daemon"};

  fs::path dir_, log_;
  std::unique_ptr<sim::Session> daemon_;
};

TEST_F(HttpDaemonTest, PrometheusScrapesOverTlsWithBasicAuth) {
  if (!fs::exists("/usr/bin/prometheus")) {
    MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
  }
  const std::string web =
      WriteTlsWebConfig("  prometheus: " + BcryptHash("scrape-pw") + "\n");
  const int port =
      StartDaemon("127.0.0.1:0", "--web.config.file '" + web + "'");
  ASSERT_GT(port, 0) << ReadFile(log_);
  EXPECT_THAT(ReadFile(log_), HasSubstr("(TLS, basic auth)"));

  auto ok = Fetch(Tls(port, "prometheus", "scrape-pw"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_THAT(ok->body, HasSubstr("fabric_build_info{"));
  EXPECT_EQ(Fetch(Tls(port, "prometheus", "wrong"))->status, 401);
  EXPECT_EQ(Fetch(Tls(port, "", ""))->status, 401);
  FetchOptions plain;
  plain.port = port;
  EXPECT_FALSE(Fetch(plain));  // no plain HTTP on a TLS listener

  // A real Prometheus, configured the way an operator would.
  std::ofstream(dir_ / "password") << "scrape-pw";
  std::ofstream(dir_ / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n"
      << "scrape_configs:\n  - job_name: fabricmon\n"
      << "    scheme: https\n"
      << "    tls_config:\n      ca_file: " << (dir_ / "ca.crt").string()
      << "\n    basic_auth:\n      username: prometheus\n"
      << "      password_file: " << (dir_ / "password").string() << "\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << port << "']\n";
  const int prom_port = FreeLoopbackPort();
  const auto prometheus = sim::StartPrometheus(dir_, prom_port);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = sim::PromQuery(prom_port,
                                "fabric_collector_success{job=\"fabricmon\","
                                "collector=\"ib_port\"}");
        return r && r->size() == 1 && r->front().value == 1;
      },
      60s))
      << ReadFile(dir_ / "prometheus.log");
  auto up = sim::PromQuery(prom_port, "up{job=\"fabricmon\"}");
  ASSERT_TRUE(up && up->size() == 1);
  EXPECT_EQ(up->front().value, 1);
  // Its scrapes were authenticated: only our three bad attempts counted.
  auto body = Fetch(Tls(port, "prometheus", "scrape-pw"));
  ASSERT_TRUE(body);
  EXPECT_EQ(Rejected(body->body, "unauthorized"), 2);
  EXPECT_EQ(Rejected(body->body, "tls_handshake"), 1);
}

TEST_F(HttpDaemonTest, BadWebConfigRejectedAtStartAndOnReload) {
  const fs::path web = dir_ / "web.yml";
  std::ofstream(web) << "basic_auth_users:\n  alice: plaintext\n";
  sim::Session bad(Binary("fabricmon") +
                       " --config /dev/null --web.listen-address 127.0.0.1:0"
                       " --web.config.file " +
                       web.string(),
                   (dir_ / "bad.log").string());
  const int status = bad.Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(ReadFile(dir_ / "bad.log"),
              HasSubstr("web config error: basic_auth_users.alice (line 2): "
                        "is not a bcrypt hash"));
  // --check-config checks it too.
  auto check = sim::Session(Binary("fabricmon") +
                                " --check-config --config /dev/null"
                                " --web.config.file " +
                                web.string(),
                            (dir_ / "check.log").string())
                   .Wait(30s);
  EXPECT_EQ(WEXITSTATUS(check), 1);

  std::ofstream(web) << "basic_auth_users:\n  alice: " << BcryptHash("a-pw")
                     << "\n";
  const int port =
      StartDaemon("127.0.0.1:0", "--web.config.file " + web.string());
  ASSERT_GT(port, 0) << ReadFile(log_);
  FetchOptions alice;
  alice.port = port;
  alice.user = "alice";
  alice.password = "a-pw";
  EXPECT_EQ(Fetch(alice)->status, 200);

  // A bad file on SIGHUP: rejected with key and line; alice still works.
  std::ofstream(web) << "basic_auth_users:\n  alice: " << BcryptHash("a-pw")
                     << "\ntls_server_config:\n"
                     << "  cert_file: x\n  key_file: y\n"
                        "  min_version: SSL3\n";
  daemon_->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(log_).find("reload rejected") != std::string::npos;
  })) << ReadFile(log_);
  EXPECT_THAT(ReadFile(log_),
              HasSubstr("tls_server_config.min_version (line 6): \"SSL3\" "
                        "is not a TLS version"));
  EXPECT_EQ(Fetch(alice)->status, 200);

  // A good one takes effect without a restart: now only bob.
  std::ofstream(web) << "basic_auth_users:\n  bob: " << BcryptHash("b-pw")
                     << "\n";
  daemon_->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(log_).find("reload done") != std::string::npos;
  })) << ReadFile(log_);
  EXPECT_EQ(Fetch(alice)->status, 401);
  FetchOptions bob = alice;
  bob.user = "bob";
  bob.password = "b-pw";
  EXPECT_EQ(Fetch(bob)->status, 200);
}

// Issue 40, finding 7: `Transfer-Encoding: xchunked` was taken as "no
// body" and the body read as a second request. The daemon now answers 400
// and closes (RFC 9112 section 6.3): one answer, the smuggled GET unread.
TEST_F(HttpDaemonTest, UnimplementedTransferEncodingGets400AndNoSecondRequest) {
  const int port = StartDaemon("127.0.0.1:0");
  ASSERT_GT(port, 0) << ReadFile(log_);
  auto answer = RawExchange(
      port,
      "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n"
      "\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
      true);
  ASSERT_TRUE(answer);
  EXPECT_THAT(*answer, ::testing::StartsWith("HTTP/1.1 400"));
  EXPECT_EQ(answer->find("HTTP/1.1 ", 1), std::string::npos) << *answer;
  EXPECT_EQ(answer->find("fabric_build_info"), std::string::npos);
  FetchOptions o;
  o.port = port;
  auto r = Fetch(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(Rejected(r->body, "bad_request"), 1);
}

TEST_F(HttpDaemonTest, Ipv6ListenAddress) {
  const int port = StartDaemon("[::1]:0");
  ASSERT_GT(port, 0) << ReadFile(log_);
  EXPECT_THAT(ReadFile(log_), HasSubstr("listening on [::1]:"));
  FetchOptions o;
  o.host = "::1";
  o.port = port;
  std::optional<FetchResult> r;
  EXPECT_TRUE(WaitFor([&] {
    r = Fetch(o);
    return r && r->status == 200 &&
           r->body.find("fabric_port_state{device=\"mlx5_0\"") !=
               std::string::npos;
  })) << (r ? r->body : "no answer");
}

// Opens a TCP connection to 127.0.0.1:port; -1 on failure.
int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST_F(HttpDaemonTest, ThousandHostileConnectionsAndAScrapeStillWorks) {
  const int port = StartDaemon("127.0.0.1:0");
  ASSERT_GT(port, 0) << ReadFile(log_);
  // 1,000 at once: idle, slowloris (a partial head), garbage, oversized.
  std::vector<int> fds;
  for (int i = 0; i < 1000; ++i) {
    int fd = Connect(port);
    ASSERT_GE(fd, 0) << i;
    std::string bytes;
    switch (i % 4) {
      case 1:
        bytes = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        break;
      case 2:
        bytes = "\x01\x02garbage\r\n\r\n";
        break;
      case 3:
        bytes = "GET / HTTP/1.1\r\nX: " + std::string(10000, 'a');
        break;
      default:
        break;
    }
    if (!bytes.empty()) send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  // While they are all open, a real scrape gets its answer.
  FetchOptions o;
  o.port = port;
  auto r = Fetch(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("fabric_build_info{"));
  for (int fd : fds) close(fd);

  auto after = Fetch(o);
  ASSERT_TRUE(after);
  EXPECT_GT(Rejected(after->body, "evicted"), 0);
  EXPECT_GT(Rejected(after->body, "bad_request"), 0);
  EXPECT_GT(Rejected(after->body, "header_too_large"), 0);
  EXPECT_TRUE(daemon_->running());
  // The server's own families are in docs/metrics.md (metrics_doc_test
  // covers what --once prints; these only exist over HTTP).
  for (const char* name :
       {"fabric_http_requests_rejected_total", "fabric_http_connections"}) {
    EXPECT_THAT(after->body, HasSubstr(std::string("# TYPE ") + name + " "));
    EXPECT_TRUE(IsDocumentedMetric(name)) << name;
  }
  std::printf(
      "after 1000 connections: evicted=%g bad_request=%g "
      "header_too_large=%g\n",
      Rejected(after->body, "evicted"), Rejected(after->body, "bad_request"),
      Rejected(after->body, "header_too_large"));
}

}  // namespace
}  // namespace fabric::testing
