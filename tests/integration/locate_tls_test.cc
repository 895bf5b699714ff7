// fabricmon-locate against a real Prometheus behind its own web config
// (--web.config.file: TLS with a server certificate, client certificates
// required, basic auth with a bcrypt hash), certificates made in-test with
// the openssl CLI (tests/support/http_client.h MakeTestCa). With the right
// CA, client certificate and credentials its queries are answered (the
// window is empty: exit 4, "no probe data", which only follows five
// successful queries); a wrong password, missing credentials, no CA, a
// wrong server name, no client certificate and plain HTTP each fail with a
// clear message and exit 3, printing no report.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

class LocateTls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/prometheus")) {
      MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
    }
    dir_ = tmp_.path();
    std::string error;
    ASSERT_TRUE(MakeTestCa(dir_.string(), &error)) << error;
    std::ofstream(dir_ / "web.yml")
        << "tls_server_config:\n"
        << "  cert_file: " << (dir_ / "server.crt").string() << "\n"
        << "  key_file: " << (dir_ / "server.key").string() << "\n"
        << "  client_auth_type: RequireAndVerifyClientCert\n"
        << "  client_ca_file: " << (dir_ / "ca.crt").string() << "\n"
        << "basic_auth_users:\n"
        << "  locator: " << BcryptHash("s3cret pw") << "\n";
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1m\n";
    std::ofstream(dir_ / "password") << "s3cret pw\n";
    std::ofstream(dir_ / "wrong") << "guess\n";
    port_ = FreeLoopbackPort();
    prometheus_ = std::make_unique<sim::Session>(
        "/usr/bin/prometheus --config.file=" +
            (dir_ / "prometheus.yml").string() +
            " --storage.tsdb.path=" + (dir_ / "data").string() +
            " --web.config.file=" + (dir_ / "web.yml").string() +
            " --web.listen-address=127.0.0.1:" + std::to_string(port_) +
            " --log.level=warn",
        (dir_ / "prometheus.log").string());
    FetchOptions ready;
    ready.port = port_;
    ready.tls = true;
    ready.ca_file = (dir_ / "ca.crt").string();
    ready.cert_file = (dir_ / "client.crt").string();
    ready.key_file = (dir_ / "client.key").string();
    ready.user = "locator";
    ready.password = "s3cret pw";
    ready.target = "/-/ready";
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto r = Fetch(ready);
          return r && r->status == 200;
        },
        std::chrono::seconds(60)))
        << ReadFile(dir_ / "prometheus.log");
  }
  void TearDown() override { prometheus_.reset(); }

  struct Outcome {
    int exit_code = -1;
    std::string out, err;
  };
  // The locator with the right TLS and auth options, minus `drop` (one of
  // them), plus `extra`.
  Outcome Locate(const std::string& drop, const std::string& extra = "",
                 const std::string& scheme = "https") {
    std::string args = " --prometheus " + scheme +
                       "://127.0.0.1:" + std::to_string(port_) +
                       " --query-timeout-ms 5000";
    const std::vector<std::pair<std::string, std::string>> options = {
        {"--tls-ca-file", (dir_ / "ca.crt").string()},
        {"--tls-cert-file", (dir_ / "client.crt").string()},
        {"--tls-key-file", (dir_ / "client.key").string()},
        {"--basic-auth-user", "locator"},
        {"--basic-auth-password-file", (dir_ / "password").string()}};
    for (const auto& [flag, value] : options) {
      if (flag != drop) args += " " + flag + " " + value;
    }
    const fs::path err = dir_ / "err";
    const CommandResult r =
        RunCommand("timeout 120 " + Binary("fabricmon-locate") + args + " " +
                   extra + " 2>" + err.string());
    return {r.exit_code, r.out, ReadFile(err)};
  }

  void ExpectRefused(const Outcome& o, const std::string& want) {
    std::printf("refused as expected: %s", o.err.c_str());
    EXPECT_EQ(o.exit_code, 3) << o.err;
    EXPECT_NE(o.err.find(want), std::string::npos)
        << "want \"" << want << "\" in: " << o.err;
    EXPECT_EQ(o.out, "");
  }
  testing::TempDir tmp_{"fabricmon-locate-tls"};

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<sim::Session> prometheus_;
};

TEST_F(LocateTls, AnsweredWithTheRightCaCertificateAndCredentials) {
  const Outcome o = Locate("");
  EXPECT_EQ(o.exit_code, 4) << o.err;
  EXPECT_NE(o.err.find("no probe data in the last 30m"), std::string::npos)
      << o.err;
  // Skipping verification needs no CA, still the client certificate.
  const Outcome skip = Locate("--tls-ca-file", "--tls-insecure-skip-verify");
  EXPECT_EQ(skip.exit_code, 4) << skip.err;
}

TEST_F(LocateTls, WrongOrMissingCredentialsAreClearErrors) {
  ExpectRefused(Locate("--basic-auth-user"),
                "HTTP 401 (needs --basic-auth-user?)");
  ExpectRefused(
      Locate("--basic-auth-password-file",
             "--basic-auth-password-file " + (dir_ / "wrong").string()),
      "HTTP 401 (wrong --basic-auth-user or password?)");
  const Outcome missing =
      Locate("--basic-auth-password-file",
             "--basic-auth-password-file " + (dir_ / "nope").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
}

TEST_F(LocateTls, TlsMismatchesAreClearErrors) {
  // No CA: the server is checked against the system's CAs, which do not
  // know the test CA.
  ExpectRefused(Locate("--tls-ca-file"), "Prometheus unreachable: ");
  ExpectRefused(Locate("", "--tls-server-name prometheus.example"),
                "Prometheus unreachable: ");
  ExpectRefused(Locate("--tls-cert-file"), "Prometheus unreachable: ");
  // Plain HTTP to the TLS listener: Prometheus answers 400.
  const Outcome plain = Locate("", "", "http");
  EXPECT_EQ(plain.exit_code, 3) << plain.err;
  EXPECT_NE(plain.err.find("HTTP 400"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.out, "");
}

}  // namespace
}  // namespace fabric::testing
