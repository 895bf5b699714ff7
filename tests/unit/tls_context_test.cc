// Tests for http/tls_context's file loading: certificate, key and CA files
// are read as bounded regular files and handed to OpenSSL from memory, so a
// FIFO or /dev/zero named as one is refused at once with the key and its
// line; a CA bundle's subjects are advertised to clients.
#include "http/tls_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/ci.h"
#include "tests/support/http_client.h"

namespace fabric::http {
namespace {

using ::testing::HasSubstr;

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      MISSING_DEPENDENCY("openssl CLI not installed");
    }
    dir_ =
        ::testing::TempDir() + "/tls_context_test." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    std::string error;
    ASSERT_TRUE(testing::MakeTestCa(dir_, &error)) << error;
    tls_.cert_file = dir_ + "/server.crt";
    tls_.key_file = dir_ + "/server.key";
    tls_.lines = {{"tls_server_config.cert_file", 2},
                  {"tls_server_config.key_file", 3},
                  {"tls_server_config.client_ca_file", 4}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  TlsConfig tls_;
};

TEST_F(TlsContextTest, LoadsCertificateKeyAndAdvertisesTheClientCas) {
  // A bundle of two CAs: both trusted, both named to clients.
  const std::string bundle = dir_ + "/bundle.crt";
  {
    std::ofstream out(bundle);
    std::ifstream ca(dir_ + "/ca.crt"), stranger(dir_ + "/stranger.crt");
    out << ca.rdbuf() << stranger.rdbuf();
  }
  tls_.client_ca_file = bundle;
  tls_.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  std::string error;
  auto ctx = MakeTlsContext(tls_, &error);
  ASSERT_TRUE(ctx) << error;
  EXPECT_EQ(sk_X509_NAME_num(SSL_CTX_get_client_CA_list(ctx->native_handle())),
            2);
}

TEST_F(TlsContextTest, FifoAsKeyIsRefusedWithKeyAndLine) {
  const std::string fifo = dir_ + "/fifo.key";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  tls_.key_file = fifo;
  std::string error;
  EXPECT_FALSE(MakeTlsContext(tls_, &error));
  EXPECT_THAT(error, HasSubstr("web config error: tls_server_config.key_file "
                               "(line 3): cannot load private key " +
                               fifo + ": not a regular file"));
}

TEST_F(TlsContextTest, DevZeroAndOversizedFilesAreRefused) {
  tls_.cert_file = "/dev/zero";
  std::string error;
  EXPECT_FALSE(MakeTlsContext(tls_, &error));
  EXPECT_THAT(error, HasSubstr("tls_server_config.cert_file (line 2): cannot "
                               "load certificate /dev/zero: not a regular "
                               "file"));
  tls_.cert_file = dir_ + "/server.crt";
  const std::string big = dir_ + "/big.key";
  std::ofstream(big) << std::string(64 * 1024 + 1, '-');
  tls_.key_file = big;
  EXPECT_FALSE(MakeTlsContext(tls_, &error));
  EXPECT_THAT(error, HasSubstr("tls_server_config.key_file (line 3): cannot "
                               "load private key " +
                               big + ": larger than 64 KiB"));
  tls_.key_file = dir_ + "/server.key";
  tls_.client_ca_file = dir_;
  tls_.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  EXPECT_FALSE(MakeTlsContext(tls_, &error));
  EXPECT_THAT(error, HasSubstr("tls_server_config.client_ca_file (line 4): "
                               "cannot load CA certificates " +
                               dir_ + ": not a regular file"));
}

}  // namespace
}  // namespace fabric::http
