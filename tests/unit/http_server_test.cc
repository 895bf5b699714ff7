// Tests for http/server: the /metrics server on an io_context thread in
// this process, talked to over loopback. Plain HTTP, HEAD, 404/405, gzip,
// IPv6, basic auth, TLS with a CA generated here, required client
// certificates, plain HTTP refused on a TLS port, truncated, malformed and
// oversized requests, a slowloris client, the connection bound's eviction
// policy (waiting, then writing connections; per source), slow pipelining
// readers, write timeouts, TCP_NODELAY, rendering off the event loop and
// password floods, each refusal counted in
// fabric_http_requests_rejected_total. No timed assertions: limits are set
// short and the tests only wait for outcomes. Sources are told apart by
// connecting from different loopback addresses (127.0.0.x).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "core/metric_sink.h"
#include "exporters/exposition.h"
#include "http/handler.h"
#include "http/server.h"
#include "tests/support/ci.h"
#include "tests/support/http_client.h"

namespace fabric::http {
namespace {

using testing::Fetch;
using testing::FetchOptions;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace asio = boost::asio;

const BuildInfo kBuild{"9.9.9", "abc123"};

// A server on its own io_context thread, serving one ib_port snapshot.
class Harness {
 public:
  Harness(const std::string& address, Security security,
          ServerLimits limits = {},
          std::vector<std::shared_ptr<prometheus::Collectable>> extra = {})
      : store_(std::make_shared<SnapshotStore>()),
        work_(asio::make_work_guard(io_)) {
    MetricSink sink;
    sink.Counter("fabric_port_transmit_bytes_total", "tx",
                 {{"device", "mlx5_0"}, {"port", "1"}}, 42);
    auto snap = std::make_shared<Snapshot>();
    snap->collector = "ib_port";
    snap->success = true;
    snap->families = sink.Take();
    store_->Publish(snap);
    extra.insert(extra.begin(),
                 std::make_shared<SnapshotCollectable>(store_, kBuild));
    server_ = Server::Start(io_, address, std::move(security), std::move(extra),
                            std::make_shared<ServerMetrics>(), &error_, limits);
    // Read before the loop runs: the acceptor belongs to the io thread.
    if (server_) {
      port_ = server_->port();
      bound_ = server_->BoundAddress();
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Harness() {
    asio::post(io_, [this] {
      server_.reset();
      work_.reset();
      io_.stop();
    });
    thread_.join();
  }
  bool started() const { return server_ != nullptr; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  const std::string& bound() const { return bound_; }
  // Runs `task` on the server's event loop.
  void Post(std::function<void()> task) { asio::post(io_, std::move(task)); }
  void Reconfigure(Security security) {
    std::promise<void> done;
    asio::post(io_, [&] {
      server_->Reconfigure(std::move(security));
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  asio::io_context io_;
  std::shared_ptr<SnapshotStore> store_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<Server> server_;
  std::string error_;
  int port_ = 0;
  std::string bound_;
  std::thread thread_;
};

Security Plain() {
  std::string error;
  return *MakeSecurity(WebConfig{}, &error);
}

FetchOptions At(int port, const std::string& target = "/metrics") {
  FetchOptions o;
  o.port = port;
  o.target = target;
  return o;
}

// fabric_http_requests_rejected_total{reason} from a fresh scrape (-1 when
// the scrape fails); `o` carries the credentials/TLS the server needs.
double Rejected(FetchOptions o, const std::string& reason) {
  o.target = "/metrics";
  o.method = "GET";
  auto r = Fetch(o);
  if (!r || r->status != 200) return -1;
  std::smatch m;
  const std::regex re("fabric_http_requests_rejected_total\\{reason=\"" +
                      reason + "\"\\} ([0-9.e+]+)");
  if (!std::regex_search(r->body, m, re)) return -1;
  return std::stod(m[1]);
}

TEST(HttpServerTest, ServesMetricsLandingPageAndRefusesTheRest) {
  Harness h("127.0.0.1:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  EXPECT_EQ(h.bound(), "127.0.0.1:" + std::to_string(h.port()));
  auto r = Fetch(At(h.port()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], kMetricsContentType);
  EXPECT_THAT(r->body, HasSubstr("fabric_port_transmit_bytes_total{"
                                 "device=\"mlx5_0\",port=\"1\"} 42\n"));
  EXPECT_THAT(r->body, HasSubstr("fabric_build_info{"));
  // Every reason exported from the start, at 0.
  for (const auto& reason : ServerMetrics::Reasons()) {
    EXPECT_THAT(r->body, HasSubstr("fabric_http_requests_rejected_total{"
                                   "reason=\"" +
                                   reason + "\"} 0\n"));
  }
  EXPECT_THAT(r->body, HasSubstr("# TYPE fabric_http_connections gauge\n"));

  FetchOptions head = At(h.port());
  head.method = "HEAD";
  auto hr = Fetch(head);
  ASSERT_TRUE(hr);
  EXPECT_EQ(hr->status, 200);
  EXPECT_TRUE(hr->body.empty());
  EXPECT_GT(std::stoul(hr->headers["content-length"]), 100u);

  auto landing = Fetch(At(h.port(), "/"));
  ASSERT_TRUE(landing);
  EXPECT_EQ(landing->status, 200);
  EXPECT_THAT(landing->body, HasSubstr("href=\"/metrics\""));

  auto missing = Fetch(At(h.port(), "/debug/pprof"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  FetchOptions post = At(h.port());
  post.method = "DELETE";
  auto refused = Fetch(post);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 405);
  EXPECT_EQ(refused->headers["allow"], "GET, HEAD");
  EXPECT_EQ(Rejected(At(h.port()), "not_found"), 1);
  EXPECT_EQ(Rejected(At(h.port()), "method_not_allowed"), 1);
}

TEST(HttpServerTest, GzipWhenTheClientAcceptsIt) {
  Harness h("127.0.0.1:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions o = At(h.port());
  o.headers = {{"Accept-Encoding", "gzip"}};
  auto r = Fetch(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-encoding"], "gzip");
  auto text = testing::Gunzip(r->body);
  ASSERT_TRUE(text);
  EXPECT_THAT(*text, HasSubstr("device=\"mlx5_0\",port=\"1\"} 42\n"));
  auto plain = Fetch(At(h.port()));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->headers.count("content-encoding"), 0u);
}

TEST(HttpServerTest, BindFailureIsAnError) {
  Harness first("127.0.0.1:0", Plain());
  ASSERT_TRUE(first.started()) << first.error();
  Harness second("127.0.0.1:" + std::to_string(first.port()), Plain());
  EXPECT_FALSE(second.started());
  EXPECT_THAT(second.error(), HasSubstr("cannot listen on 127.0.0.1:"));
  EXPECT_THAT(second.error(), HasSubstr("in use"));
}

TEST(HttpServerTest, Ipv6Loopback) {
  Harness h("[::1]:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  EXPECT_EQ(h.bound(), "[::1]:" + std::to_string(h.port()));
  FetchOptions o = At(h.port());
  o.host = "::1";
  auto r = Fetch(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("fabric_build_info{"));
}

TEST(HttpServerTest, BasicAuth) {
  WebConfig web;
  web.users["prometheus"] = testing::BcryptHash("s3cr3t");
  std::string error;
  auto security = MakeSecurity(web, &error);
  ASSERT_TRUE(security) << error;
  Harness h("127.0.0.1:0", *security);
  ASSERT_TRUE(h.started()) << h.error();

  auto none = Fetch(At(h.port()));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->headers["www-authenticate"], StartsWith("Basic realm="));
  EXPECT_THAT(none->body, ::testing::Not(HasSubstr("fabric_")));
  FetchOptions wrong = At(h.port());
  wrong.user = "prometheus";
  wrong.password = "guess";
  EXPECT_EQ(Fetch(wrong)->status, 401);
  FetchOptions right = At(h.port());
  right.user = "prometheus";
  right.password = "s3cr3t";
  auto ok = Fetch(right);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Rejected(right, "unauthorized"), 2);

  // Reconfigured without users: open to everyone, no restart.
  h.Reconfigure(Plain());
  EXPECT_EQ(Fetch(At(h.port()))->status, 200);
}

TEST(HttpServerTest, PasswordGuessingDoesNotStopAuthorizedScrapes) {
  WebConfig web;
  web.users["prometheus"] = testing::BcryptHash("s3cr3t");
  std::string error;
  auto security = MakeSecurity(web, &error);
  ASSERT_TRUE(security) << error;
  Harness h("127.0.0.1:0", *security);
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions right = At(h.port());
  right.user = "prometheus";
  right.password = "s3cr3t";
  ASSERT_EQ(Fetch(right)->status, 200);  // verified once, then cached
  // 32 guesses at once: more than the 8 bcrypt checks allowed in flight.
  std::vector<std::future<int>> guesses;
  for (int i = 0; i < 32; ++i) {
    guesses.push_back(std::async(std::launch::async, [&, i] {
      FetchOptions o = At(h.port());
      o.user = i % 2 ? "prometheus" : "nobody";
      o.password = "guess" + std::to_string(i);
      auto r = Fetch(o);
      return r ? r->status : 0;
    }));
  }
  auto ok = Fetch(right);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  for (auto& g : guesses) EXPECT_EQ(g.get(), 401);
  EXPECT_EQ(Rejected(right, "unauthorized"), 32);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      MISSING_DEPENDENCY("openssl CLI not installed");
    }
    dir_ =
        ::testing::TempDir() + "/http_server_test." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    std::string error;
    ASSERT_TRUE(testing::MakeTestCa(dir_, &error)) << error;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Security Tls(ClientAuth auth, bool with_ca,
               std::vector<std::string> allowed_sans = {}) {
    WebConfig web;
    web.tls.emplace();
    web.tls->cert_file = dir_ + "/server.crt";
    web.tls->key_file = dir_ + "/server.key";
    web.tls->client_auth = auth;
    web.tls->client_allowed_sans = std::move(allowed_sans);
    if (with_ca) web.tls->client_ca_file = dir_ + "/ca.crt";
    std::string error;
    auto security = MakeSecurity(web, &error);
    EXPECT_TRUE(security) << error;
    return security.value_or(Security{});
  }
  FetchOptions Client(int port, const std::string& cert = "") {
    FetchOptions o = At(port);
    o.tls = true;
    o.ca_file = dir_ + "/ca.crt";
    if (!cert.empty()) {
      o.cert_file = dir_ + "/" + cert + ".crt";
      o.key_file = dir_ + "/" + cert + ".key";
    }
    return o;
  }
  std::string dir_;
};

TEST_F(TlsTest, ServesTlsAndRefusesPlainHttp) {
  Harness h("127.0.0.1:0", Tls(ClientAuth::kNoClientCert, false));
  ASSERT_TRUE(h.started()) << h.error();
  auto r = Fetch(Client(h.port()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("port=\"1\"} 42\n"));
  // Plain HTTP gets no answer at all on the TLS port.
  EXPECT_FALSE(Fetch(At(h.port())));
  auto raw =
      testing::RawExchange(h.port(), "GET /metrics HTTP/1.1\r\n\r\n", true);
  ASSERT_TRUE(raw);
  EXPECT_THAT(*raw, ::testing::Not(HasSubstr("fabric_")));
  EXPECT_EQ(Rejected(Client(h.port()), "tls_handshake"), 2);
}

TEST_F(TlsTest, ClientCertificateRequired) {
  Harness h("127.0.0.1:0", Tls(ClientAuth::kRequireAndVerifyClientCert, true));
  ASSERT_TRUE(h.started()) << h.error();
  EXPECT_FALSE(Fetch(Client(h.port())));              // no certificate
  EXPECT_FALSE(Fetch(Client(h.port(), "stranger")));  // not from the CA
  auto r = Fetch(Client(h.port(), "client"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_GE(Rejected(Client(h.port(), "client"), "tls_handshake"), 2);
}

TEST_F(TlsTest, ClientAllowedSansAdmitsOnlyThoseNames) {
  // The client certificate carries DNS:prometheus.example, IP:10.0.0.7 and
  // a URI; each kind admits it, written as the config would write it.
  for (const char* san : {"prometheus.example", "10.0.0.7",
                          "spiffe://fabricmon-test/prometheus"}) {
    Harness h("127.0.0.1:0", Tls(ClientAuth::kRequireAndVerifyClientCert, true,
                                 {"other.example", san}));
    ASSERT_TRUE(h.started()) << h.error();
    auto r = Fetch(Client(h.port(), "client"));
    ASSERT_TRUE(r) << san;
    EXPECT_EQ(r->status, 200);
  }
  // A certificate from the CA without an allowed name is refused, and so
  // is a name that only differs in case or a prefix of one.
  Harness h("127.0.0.1:0", Tls(ClientAuth::kRequireAndVerifyClientCert, true,
                               {"other.example", "Prometheus.example",
                                "prometheus", "10.0.0.8"}));
  ASSERT_TRUE(h.started()) << h.error();
  EXPECT_FALSE(Fetch(Client(h.port(), "client")));
  EXPECT_FALSE(Fetch(Client(h.port(), "stranger")));
}

TEST_F(TlsTest, RequireAnyClientCertAcceptsAStranger) {
  Harness h("127.0.0.1:0", Tls(ClientAuth::kRequireAnyClientCert, false));
  ASSERT_TRUE(h.started()) << h.error();
  EXPECT_FALSE(Fetch(Client(h.port())));
  auto r = Fetch(Client(h.port(), "stranger"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(TlsTest, BadFilesNameTheKeyAndLine) {
  const std::string path = dir_ + "/web.yml";
  std::ofstream(path) << "tls_server_config:\n  cert_file: absent.crt\n"
                         "  key_file: server.key\n";
  std::string error;
  EXPECT_FALSE(LoadSecurity(path, &error));
  EXPECT_THAT(error, HasSubstr("web config error: tls_server_config.cert_file "
                               "(line 2): cannot load certificate " +
                               dir_ + "/absent.crt"));
  std::ofstream(path) << "tls_server_config:\n  cert_file: server.crt\n"
                         "  key_file: client.key\n";
  EXPECT_FALSE(LoadSecurity(path, &error));
  EXPECT_THAT(error, HasSubstr("tls_server_config.key_file (line 3): "));
  std::ofstream(path) << "tls_server_config:\n  cert_file: server.crt\n"
                         "  key_file: server.key\n";
  auto security = LoadSecurity(path, &error);
  ASSERT_TRUE(security) << error;
  EXPECT_EQ(Describe(*security), "TLS");
}

TEST(HttpServerTest, MalformedTruncatedAndOversizedRequests) {
  Harness h("127.0.0.1:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  auto truncated = testing::RawExchange(
      h.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: te", true);
  ASSERT_TRUE(truncated);
  EXPECT_THAT(*truncated, StartsWith("HTTP/1.1 400"));
  auto garbage = testing::RawExchange(
      h.port(), std::string("\x16\x03\x01\x00\xff junk\r\n\r\n", 13), true);
  ASSERT_TRUE(garbage);
  EXPECT_THAT(*garbage, StartsWith("HTTP/1.1 400"));
  auto oversized = testing::RawExchange(
      h.port(),
      "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') +
          "\r\n\r\n",
      false);
  ASSERT_TRUE(oversized);
  EXPECT_THAT(*oversized, StartsWith("HTTP/1.1 431"));
  auto with_body = testing::RawExchange(
      h.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
      true);
  ASSERT_TRUE(with_body);
  EXPECT_THAT(*with_body, StartsWith("HTTP/1.1 400"));
  // Scrapes unaffected, every refusal counted.
  EXPECT_EQ(Fetch(At(h.port()))->status, 200);
  EXPECT_EQ(Rejected(At(h.port()), "truncated"), 1);
  EXPECT_EQ(Rejected(At(h.port()), "bad_request"), 2);
  EXPECT_EQ(Rejected(At(h.port()), "header_too_large"), 1);
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// RFC 9112 section 6.3: a Transfer-Encoding the server does not implement
// gets 400 and the connection ends, so its body is never read as a second
// request (it used to be: `xchunked` was taken as no body, and the body's
// "GET /secret" was answered 404 on the same connection).
TEST(HttpServerTest, UnimplementedTransferEncodingIsRefusedAndItsBodyNotRead) {
  Harness h("127.0.0.1:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string te :
       {"xchunked", "gzip", "chunked, identity", "gzip, chunked"}) {
    SCOPED_TRACE(te);
    auto answer = testing::RawExchange(
        h.port(),
        "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te +
            "\r\n\r\n" + smuggled,
        true);
    ASSERT_TRUE(answer);
    EXPECT_THAT(*answer, StartsWith("HTTP/1.1 400"));
    EXPECT_EQ(CountOf(*answer, "HTTP/1.1 "), 1) << *answer;
    EXPECT_THAT(*answer, HasSubstr("Connection: close"));
  }
  // Transfer-Encoding with Content-Length (request smuggling): refused.
  auto both = testing::RawExchange(
      h.port(),
      "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
          smuggled,
      true);
  ASSERT_TRUE(both);
  EXPECT_THAT(*both, StartsWith("HTTP/1.1 400"));
  EXPECT_EQ(CountOf(*both, "HTTP/1.1 "), 1) << *both;
  // A chunked request with no data is a framing the server reads: both
  // requests answered, in order.
  auto chunked = testing::RawExchange(
      h.port(),
      "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n" +
          smuggled,
      true);
  ASSERT_TRUE(chunked);
  EXPECT_THAT(*chunked, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(*chunked, HasSubstr("HTTP/1.1 404"));
  EXPECT_EQ(Rejected(At(h.port()), "bad_request"), 5);
  EXPECT_EQ(Rejected(At(h.port()), "not_found"), 1);
}

// Sends a request head one header line at a time, forever; returns once
// the server has closed the connection (false if it never did, or answered).
bool SlowlorisUntilClosed(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return false;
  }
  send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
  bool closed = false;
  for (int i = 0; i < 600 && !closed; ++i) {  // up to a minute
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[256];
      closed = recv(fd, buf, sizeof(buf), 0) <= 0;
      if (!closed) break;  // the server answered a partial request
    } else if (send(fd, "X-a: b\r\n", 8, MSG_NOSIGNAL) < 0) {
      closed = true;
    }
  }
  close(fd);
  return closed;
}

TEST(HttpServerTest, SlowlorisIsClosedWhileScrapesGoOn) {
  ServerLimits limits;
  limits.request_timeout = std::chrono::milliseconds(500);
  Harness h("127.0.0.1:0", Plain(), limits);
  ASSERT_TRUE(h.started()) << h.error();
  auto slow = std::async(std::launch::async, SlowlorisUntilClosed, h.port());
  auto r = Fetch(At(h.port()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(slow.get());
  EXPECT_EQ(Rejected(At(h.port()), "timeout"), 1);
}

// True once `fd` reads EOF or an error (the server closed it).
bool Closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

TEST(HttpServerTest, BoundEvictsTheOldestWaitingConnection) {
  ServerLimits limits;
  limits.max_connections = 4;
  Harness h("127.0.0.1:0", Plain(), limits);
  ASSERT_TRUE(h.started()) << h.error();
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(h.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  // A real scrape gets through (it evicts the oldest idle connection).
  auto r = Fetch(At(h.port()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // The scrape was accepted after all ten: 7 evictions, oldest first.
  for (int i = 0; i < 7; ++i) {
    pollfd p{idle[i], POLLIN, 0};
    poll(&p, 1, 10'000);  // the FIN is on its way; bounded wait
    EXPECT_TRUE(Closed(idle[i])) << i;
  }
  for (int i = 7; i < 10; ++i) EXPECT_FALSE(Closed(idle[i])) << i;
  EXPECT_GE(Rejected(At(h.port()), "evicted"), 7);
  for (int fd : idle) close(fd);
}

// A socket to 127.0.0.1:`port` from `source` (a 127.0.0.x address), with
// a small receive buffer when `rcvbuf` > 0 (so the server's writes stall).
// -1 on failure.
int ConnectFrom(const char* source, int port, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True once `fd` has something to read (bounded wait: 10 s).
bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 10'000) > 0;
}

// `series` gauges with long label values: a big exposition (~100 bytes a
// series) that does not fit in loopback socket buffers.
class BigCollectable : public prometheus::Collectable {
 public:
  explicit BigCollectable(int series) : series_(series) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    MetricSink sink;
    for (int i = 0; i < series_; ++i) {
      sink.Gauge("fabric_test_big", "filler",
                 {{"peer", "node-" + std::to_string(i) + std::string(40, 'x')}},
                 i);
    }
    return sink.Take();
  }

 private:
  int series_;
};

// A collectable whose Collect() blocks until Release() (or 30 s pass, so a
// server that renders on its event loop fails the test instead of hanging
// it): a render in progress for as long as a test needs.
class GateCollectable : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::unique_lock lock(mu_);
    ++entered_;
    in_collect_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(30), [this] { return released_; });
    in_collect_ = false;
    return {};
  }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30),
                        [this] { return entered_ > 0; });
  }
  bool in_collect() const {
    std::lock_guard lock(mu_);
    return in_collect_;
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int entered_ = 0;
  mutable bool in_collect_ = false;
  bool released_ = false;
};

// The server's accepted sockets to `port` in this process (found through
// /proc/self/fd), with their peer addresses.
std::vector<std::pair<int, std::string>> ServerSockets(int port) {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(entry.path().filename());
    sockaddr_in local{};
    sockaddr_in peer{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port) {
      continue;
    }
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      continue;  // the listener
    }
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &peer.sin_addr, text, sizeof(text));
    out.emplace_back(fd, text);
  }
  return out;
}

// True when the server can write no more to `fd`: its send buffer is full.
bool SendBufferFull(int fd) {
  pollfd p{fd, POLLOUT, 0};
  return poll(&p, 1, 0) == 0;
}

TEST(HttpServerTest, SlowPipelinedReadersDoNotShutOutScrapes) {
  // A ~400 KB exposition; the attackers ask for it 20 times each, in one
  // go, and never read: every one of the 64 slots is stuck writing.
  Harness h("127.0.0.1:0", Plain(), {},
            {std::make_shared<BigCollectable>(4000)});
  ASSERT_TRUE(h.started()) << h.error();
  std::string pipelined;
  for (int i = 0; i < 200; ++i)
    pipelined += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<int> slow;
  // 8 sources x 8: within the per-source share, so only the overall bound
  // and the eviction of writers are at work.
  for (int i = 0; i < 64; ++i) {
    const std::string source = "127.0.0." + std::to_string(2 + i % 8);
    int fd = ConnectFrom(source.c_str(), h.port(), 4096);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, pipelined.data(), pipelined.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(pipelined.size()));
    slow.push_back(fd);
  }
  // Wait until the server is stuck writing to every one of them.
  auto stuck = [&] {
    int n = 0;
    for (const auto& [fd, peer] : ServerSockets(h.port())) {
      if (peer != "127.0.0.1" && SendBufferFull(fd)) ++n;
    }
    return n;
  };
  for (int i = 0; i < 600 && stuck() < 64; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(stuck(), 64);
  int ok = 0;
  for (int i = 0; i < 60; ++i) {
    auto r = Fetch(At(h.port()));
    if (r && r->status == 200) ++ok;
  }
  EXPECT_EQ(ok, 60);
  EXPECT_EQ(Rejected(At(h.port()), "connection_limit"), 0);
  EXPECT_GE(Rejected(At(h.port()), "evicted"), 1);
  for (int fd : slow) close(fd);
}

TEST(HttpServerTest, ASourceOverItsShareDisplacesOnlyItself) {
  ServerLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_source = 3;
  Harness h("127.0.0.1:0", Plain(), limits);
  ASSERT_TRUE(h.started()) << h.error();
  // Another source's idle connections are the oldest...
  std::vector<int> other;
  for (int i = 0; i < 3; ++i)
    other.push_back(ConnectFrom("127.0.0.3", h.port()));
  // ...but the flooder, past its 3, closes its own oldest, not theirs.
  std::vector<int> flood;
  for (int i = 0; i < 6; ++i)
    flood.push_back(ConnectFrom("127.0.0.2", h.port()));
  // Its scrape gets in too, displacing its own oldest idle connection.
  FetchOptions o = At(h.port());
  o.source = "127.0.0.2";
  auto r = Fetch(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Readable(flood[i])) << i;
    EXPECT_TRUE(Closed(flood[i])) << i;
  }
  for (int fd : other) EXPECT_FALSE(Closed(fd));
  EXPECT_EQ(Rejected(At(h.port()), "evicted"), 4);
  for (int fd : other) close(fd);
  for (int fd : flood) close(fd);
}

TEST(HttpServerTest, ASourceWhoseConnectionsAreAllBeingAnsweredIsRefused) {
  ServerLimits limits;
  limits.max_connections_per_source = 1;
  auto gate = std::make_shared<GateCollectable>();
  Harness h("127.0.0.1:0", Plain(), limits, {gate});
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions o = At(h.port());
  o.source = "127.0.0.2";
  auto first = std::async(std::launch::async, [&] { return Fetch(o); });
  ASSERT_TRUE(gate->WaitEntered());  // its answer is being rendered
  EXPECT_FALSE(Fetch(o));            // closed unanswered
  EXPECT_EQ(Fetch(At(h.port(), "/"))->status, 200);  // other sources fine
  gate->Release();
  auto r = first.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Rejected(At(h.port()), "source_limit"), 1);
}

// fabric_http_requests_rejected_total{reason} once it reaches `at_least`
// (polled: the server counts it when its timer fires), or its last value
// after 30 s.
double WaitForRejected(const FetchOptions& o, const std::string& reason,
                       double at_least) {
  double value = -1;
  for (int i = 0; i < 300; ++i) {
    value = Rejected(o, reason);
    if (value >= at_least) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return value;
}

TEST(HttpServerTest, AStalledReaderIsCutOffAndCounted) {
  ServerLimits limits;
  limits.write_timeout = std::chrono::milliseconds(300);
  Harness h("127.0.0.1:0", Plain(), limits,
            {std::make_shared<BigCollectable>(8000)});
  ASSERT_TRUE(h.started()) << h.error();
  // 16 answers of ~700 KB: more than loopback socket buffers take (they
  // grow to a few MB), so the server's writes stall.
  int fd = ConnectFrom("127.0.0.2", h.port(), 4096);
  ASSERT_GE(fd, 0);
  std::string pipelined;
  for (int i = 0; i < 16; ++i) {
    pipelined += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  }
  ASSERT_EQ(send(fd, pipelined.data(), pipelined.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(pipelined.size()));
  ASSERT_TRUE(Readable(fd));  // the answers have begun; now they stall
  EXPECT_EQ(WaitForRejected(At(h.port()), "write_timeout", 1), 1);
  // What the client still gets is cut off, then the close.
  std::string got;
  char buf[65536];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
  close(fd);
  const auto body = got.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(got, m, std::regex("Content-Length: (\\d+)")));
  EXPECT_LT(got.size(), 16 * (body + 4 + std::stoul(m[1])));
}

TEST(HttpServerTest, PipelinedRequestsAreCapped) {
  ServerLimits limits;
  limits.max_pipelined_requests = 4;
  Harness h("127.0.0.1:0", Plain(), limits);
  ASSERT_TRUE(h.started()) << h.error();
  std::string pipelined;
  for (int i = 0; i < 10; ++i) pipelined += "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  auto got = testing::RawExchange(h.port(), pipelined, false);
  ASSERT_TRUE(got);
  // The first, then 4 found already sent; the 5th of those ends it.
  int answers = 0;
  for (auto at = got->find("HTTP/1.1 200"); at != std::string::npos;
       at = got->find("HTTP/1.1 200", at + 1)) {
    ++answers;
  }
  EXPECT_EQ(answers, 5);
  EXPECT_EQ(Rejected(At(h.port()), "pipeline_limit"), 1);
  // One request at a time on a keep-alive connection is not pipelining.
  std::string one_by_one;
  int fd = ConnectFrom("127.0.0.2", h.port());
  ASSERT_GE(fd, 0);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(get.size()));
    // Read until this answer's end (the landing page's closing tag).
    std::string answer;
    char buf[4096];
    while (answer.find("</html>") == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      ASSERT_GT(n, 0) << i;
      answer.append(buf, n);
    }
  }
  close(fd);
  EXPECT_EQ(Rejected(At(h.port()), "pipeline_limit"), 1);
}

TEST(HttpServerTest, AcceptedSocketsSendWithoutNagle) {
  Harness h("127.0.0.1:0", Plain());
  ASSERT_TRUE(h.started()) << h.error();
  int fd = ConnectFrom("127.0.0.2", h.port());
  ASSERT_GE(fd, 0);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(get.size()));
  ASSERT_TRUE(Readable(fd));  // accepted and answered; kept alive
  auto sockets = ServerSockets(h.port());
  ASSERT_EQ(sockets.size(), 1u);
  int nodelay = 0;
  socklen_t len = sizeof(nodelay);
  ASSERT_EQ(
      getsockopt(sockets[0].first, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len),
      0);
  EXPECT_NE(nodelay, 0);
  close(fd);
}

TEST(HttpServerTest, RenderingDoesNotHoldUpTheEventLoop) {
  auto gate = std::make_shared<GateCollectable>();
  Harness h("127.0.0.1:0", Plain(), {}, {gate});
  ASSERT_TRUE(h.started()) << h.error();
  auto scrape =
      std::async(std::launch::async, [&] { return Fetch(At(h.port())); });
  ASSERT_TRUE(gate->WaitEntered());
  // While the render is stuck, other work on the loop runs...
  std::promise<bool> during;
  h.Post([&] { during.set_value(gate->in_collect()); });
  EXPECT_TRUE(during.get_future().get());
  // ...and other clients are answered.
  auto landing = Fetch(At(h.port(), "/"));
  ASSERT_TRUE(landing);
  EXPECT_EQ(landing->status, 200);
  EXPECT_TRUE(gate->in_collect());
  gate->Release();
  auto r = scrape.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("fabric_build_info{"));
}

// Wrong passwords from `source` on `threads` threads until destroyed.
class PasswordFlood {
 public:
  PasswordFlood(int port, const char* source, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, port, source, t] {
        for (int i = 0; !stop_; ++i) {
          FetchOptions o = At(port);
          o.source = source;
          o.user = "prometheus";
          o.password = "guess" + std::to_string(t) + "-" + std::to_string(i);
          auto r = Fetch(o);
          if (r && r->status == 200) ++admitted_;
          if (r && r->status == 401) ++refused_;
        }
      });
    }
  }
  ~PasswordFlood() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  // Until `n` guesses got their 401 (at most 30 s).
  void WaitForRefusals(int n) {
    for (int i = 0; i < 3000 && refused_ < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  int admitted() const { return admitted_; }

 private:
  std::atomic<bool> stop_ = false;
  std::atomic<int> refused_ = 0;
  std::atomic<int> admitted_ = 0;
  std::vector<std::thread> threads_;
};

Security WithUser(const std::string& hash) {
  WebConfig web;
  web.users["prometheus"] = hash;
  std::string error;
  auto security = MakeSecurity(web, &error);
  EXPECT_TRUE(security) << error;
  return security.value_or(Security{});
}

TEST(HttpServerTest, PasswordFloodDoesNotLockOutTheRightPassword) {
  // A real deployment's bcrypt cost, so that the flood keeps checks queued.
  const std::string hash = testing::BcryptHash("s3cr3t", 10);
  Harness h("127.0.0.1:0", WithUser(hash));
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions right = At(h.port());
  right.source = "127.0.0.3";
  right.user = "prometheus";
  right.password = "s3cr3t";
  {
    PasswordFlood flood(h.port(), "127.0.0.2", 32);
    flood.WaitForRefusals(64);
    // Never verified before: needs a check of its own, and gets one.
    auto r = Fetch(right);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(flood.admitted(), 0);
  }
  EXPECT_GE(Rejected(right, "unauthorized"), 64);
}

TEST(HttpServerTest, ReloadDuringAFloodKeepsTheVerifiedPassword) {
  const std::string hash = testing::BcryptHash("s3cr3t", 10);
  Harness h("127.0.0.1:0", WithUser(hash));
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions right = At(h.port());
  right.source = "127.0.0.2";  // the flood's own address
  right.user = "prometheus";
  right.password = "s3cr3t";
  ASSERT_EQ(Fetch(right)->status, 200);  // verified once
  PasswordFlood flood(h.port(), "127.0.0.2", 32);
  flood.WaitForRefusals(64);
  // A reload (SIGHUP) with the same user and hash: a new BasicAuth.
  h.Reconfigure(WithUser(hash));
  auto r = Fetch(right);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}
// Wrong passwords from `sources` addresses (127.0.0.10 on), one thread
// each, while a password is rotated: the scraper that had the old one (a
// trusted source) and a scraper never seen (a cold start) both get in with
// the new one. Before, 8 checks queued in all and a flood from more than 4
// addresses kept every other check out: both got 401 at once.
TEST(HttpServerTest, DistributedFloodDoesNotKeepARotatedPasswordOut) {
  const std::string old_hash = testing::BcryptHash("old-s3cr3t", 10);
  const std::string new_hash = testing::BcryptHash("new-s3cr3t", 10);
  Harness h("127.0.0.1:0", WithUser(old_hash));
  ASSERT_TRUE(h.started()) << h.error();
  FetchOptions scraper = At(h.port());
  scraper.source = "127.0.0.3";
  scraper.user = "prometheus";
  scraper.password = "old-s3cr3t";
  ASSERT_EQ(Fetch(scraper)->status, 200);  // trusted from now on
  std::vector<std::string> addresses;
  for (int i = 0; i < 48; ++i) {
    addresses.push_back("127.0.0." + std::to_string(10 + i));
  }
  std::vector<std::unique_ptr<PasswordFlood>> flood;
  for (const auto& a : addresses) {
    flood.push_back(std::make_unique<PasswordFlood>(h.port(), a.c_str(), 1));
  }
  for (auto& f : flood) f->WaitForRefusals(2);
  h.Reconfigure(WithUser(new_hash));  // the rotation
  scraper.password = "new-s3cr3t";
  auto rotated = Fetch(scraper);
  ASSERT_TRUE(rotated);
  EXPECT_EQ(rotated->status, 200);
  FetchOptions fresh = scraper;
  fresh.source = "127.0.0.4";
  auto cold = Fetch(fresh);
  ASSERT_TRUE(cold);
  EXPECT_EQ(cold->status, 200);
  int admitted = 0;
  for (auto& f : flood) admitted += f->admitted();
  flood.clear();
  EXPECT_EQ(admitted, 0);
}

// The finding: 64 clients re-scraping at full speed, from four addresses,
// hold every slot with a request being answered; an honest scrape from a
// fifth address was refused (connection_limit). Now the source holding the
// most gives up a slot (admission.h). The render is held at a gate so that
// every flood connection is being answered when the honest one arrives.
TEST(HttpServerTest, AFullServerMakesRoomForAnotherSource) {
  ServerLimits limits;
  limits.max_connections = 8;
  limits.max_connections_per_source = 4;
  auto gate = std::make_shared<GateCollectable>();
  Harness h("127.0.0.1:0", Plain(), limits, {gate});
  ASSERT_TRUE(h.started()) << h.error();
  std::vector<std::future<std::optional<testing::FetchResult>>> flood;
  for (int i = 0; i < 8; ++i) {
    FetchOptions o = At(h.port());
    o.source = i % 2 ? "127.0.0.2" : "127.0.0.3";
    flood.push_back(std::async(std::launch::async, [o] { return Fetch(o); }));
  }
  ASSERT_TRUE(gate->WaitEntered());
  // Wait until all 8 are open (each waits for the render).
  ASSERT_TRUE([&] {
    for (int i = 0; i < 3000; ++i) {
      if (ServerSockets(h.port()).size() >= 8) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }());
  FetchOptions honest = At(h.port());
  honest.source = "127.0.0.4";
  auto answer = std::async(std::launch::async, [&] { return Fetch(honest); });
  // Room is made for it at once: a flood connection is closed unanswered.
  auto one_closed = [&] {
    for (auto& f : flood) {
      if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        return true;
      }
    }
    return false;
  };
  for (int i = 0; i < 3000 && !one_closed(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  gate->Release();
  auto r = answer.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  int closed = 0;
  for (auto& f : flood) closed += f.get() ? 0 : 1;
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(Rejected(At(h.port()), "connection_limit"), 0);
  EXPECT_EQ(Rejected(At(h.port()), "evicted"), 1);
}

}  // namespace
}  // namespace fabric::http
