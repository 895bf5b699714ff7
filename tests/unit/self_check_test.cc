// daemon/self_check: the watchdog's question to the daemon's own /metrics
// server, asked of a real http::Server on loopback. Answered by a plain
// server, under basic auth (401), over TLS, with a required client
// certificate (alert), also when the server speaks the other mode than
// asked; not answered by a closed port or a listener that never accepts.
#include "daemon/self_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "http/server.h"
#include "tests/support/ci.h"
#include "tests/support/http_client.h"

namespace fabric {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ::testing::HasSubstr;

// Runs one check on `io` (which also runs the server) until it is done.
SelfCheckResult Check(
    asio::io_context& io, int port, bool tls,
    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  std::optional<SelfCheckResult> result;
  RunSelfCheck(io,
               tcp::endpoint(asio::ip::address_v4::loopback(),
                             static_cast<unsigned short>(port)),
               tls, timeout, [&](SelfCheckResult r) { result = r; });
  while (!result && io.run_one() > 0) {
  }
  return result.value_or(SelfCheckResult{false, tls, "io stopped"});
}

std::unique_ptr<http::Server> Serve(asio::io_context& io,
                                    http::Security security) {
  std::string error;
  auto server = http::Server::Start(io, "127.0.0.1:0", std::move(security), {},
                                    nullptr, &error);
  EXPECT_TRUE(server) << error;
  return server;
}

http::Security Make(const http::WebConfig& web) {
  std::string error;
  auto security = http::MakeSecurity(web, &error);
  EXPECT_TRUE(security) << error;
  return security.value_or(http::Security{});
}

TEST(SelfCheckTest, PlainServerAnswersInEitherFirstMode) {
  asio::io_context io;
  auto server = Serve(io, Make({}));
  ASSERT_TRUE(server);
  auto plain = Check(io, server->port(), false);
  EXPECT_TRUE(plain.answered) << plain.why;
  EXPECT_FALSE(plain.tls);
  // Asked in TLS (a reload switched it off): the plain answer is found.
  auto switched = Check(io, server->port(), true);
  EXPECT_TRUE(switched.answered) << switched.why;
  EXPECT_FALSE(switched.tls);
}

TEST(SelfCheckTest, BasicAuthRefusalIsAnAnswer) {
  http::WebConfig web;
  web.users["prometheus"] = testing::BcryptHash("s3cr3t");
  asio::io_context io;
  auto server = Serve(io, Make(web));
  ASSERT_TRUE(server);
  auto result = Check(io, server->port(), false);
  EXPECT_TRUE(result.answered) << result.why;
}

TEST(SelfCheckTest, ClosedPortIsNoAnswer) {
  asio::io_context io;
  int port = 0;
  {
    auto server = Serve(io, Make({}));
    ASSERT_TRUE(server);
    port = server->port();
  }
  auto result = Check(io, port, false);
  EXPECT_FALSE(result.answered);
  EXPECT_THAT(result.why, HasSubstr("connect"));
}

TEST(SelfCheckTest, ListenerThatNeverAcceptsIsNoAnswer) {
  // The kernel completes the connection, nothing reads it: a wedged server.
  asio::io_context io;
  tcp::acceptor wedged(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  auto result = Check(io, wedged.local_endpoint().port(), false,
                      std::chrono::milliseconds(200));
  EXPECT_FALSE(result.answered);
  EXPECT_THAT(result.why, HasSubstr("timeout"));
}

class SelfCheckTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      MISSING_DEPENDENCY("openssl CLI not installed");
    }
    dir_ =
        ::testing::TempDir() + "/self_check_test." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    std::string error;
    ASSERT_TRUE(testing::MakeTestCa(dir_, &error)) << error;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  http::WebConfig Tls(http::ClientAuth auth) {
    http::WebConfig web;
    web.tls.emplace();
    web.tls->cert_file = dir_ + "/server.crt";
    web.tls->key_file = dir_ + "/server.key";
    web.tls->client_auth = auth;
    if (auth == http::ClientAuth::kRequireAndVerifyClientCert) {
      web.tls->client_ca_file = dir_ + "/ca.crt";
    }
    return web;
  }
  std::string dir_;
};

TEST_F(SelfCheckTlsTest, TlsServerAnswersInEitherFirstMode) {
  asio::io_context io;
  auto server = Serve(io, Make(Tls(http::ClientAuth::kNoClientCert)));
  ASSERT_TRUE(server);
  auto tls = Check(io, server->port(), true);
  EXPECT_TRUE(tls.answered) << tls.why;
  EXPECT_TRUE(tls.tls);
  // Asked in plain (a reload switched TLS on): the server closes that
  // unanswered, and the TLS answer is found.
  auto switched = Check(io, server->port(), false);
  EXPECT_TRUE(switched.answered) << switched.why;
  EXPECT_TRUE(switched.tls);
}

TEST_F(SelfCheckTlsTest, RequiredClientCertificateRefusalIsAnAnswer) {
  asio::io_context io;
  auto server =
      Serve(io, Make(Tls(http::ClientAuth::kRequireAndVerifyClientCert)));
  ASSERT_TRUE(server);
  auto result = Check(io, server->port(), true);
  EXPECT_TRUE(result.answered) << result.why;
  EXPECT_TRUE(result.tls);
}

TEST(SelfCheckEndpointTest, WildcardBindsAreReachedOnLoopback) {
  EXPECT_EQ(SelfCheckEndpoint("0.0.0.0:10915"),
            tcp::endpoint(asio::ip::address_v4::loopback(), 10915));
  EXPECT_EQ(SelfCheckEndpoint("[::]:10915"),
            tcp::endpoint(asio::ip::address_v6::loopback(), 10915));
  EXPECT_EQ(SelfCheckEndpoint("10.1.2.3:80"),
            tcp::endpoint(asio::ip::make_address("10.1.2.3"), 80));
  EXPECT_EQ(SelfCheckEndpoint("[fe80::1]:80"),
            tcp::endpoint(asio::ip::make_address("fe80::1"), 80));
  EXPECT_EQ(SelfCheckEndpoint(""), std::nullopt);  // no listener
  EXPECT_EQ(SelfCheckEndpoint("10.1.2.3:x"), std::nullopt);
  EXPECT_EQ(SelfCheckEndpoint("10.1.2.3:0"), std::nullopt);
}

}  // namespace
}  // namespace fabric
