// Tests for http/web_config: the exporter-toolkit web config parsed from
// strings into a struct, and every kind of bad input rejected with the key
// path and line.
#include "http/web_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fabric::http {
namespace {

using ::testing::HasSubstr;

constexpr const char* kHash =
    "$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRjnGs7Ef8BGvWb6";

std::string Error(const std::string& yaml) {
  std::string error;
  auto config = ParseWebConfig(yaml, &error);
  EXPECT_FALSE(config) << yaml;
  return error;
}

// A file with nothing in it, or cut short right after a section's key,
// must not turn TLS or auth off: refused, saying how to state it.
TEST(WebConfigTest, EmptyCommentOnlyOrCutShortIsRefused) {
  for (const char* yaml : {"", "\n  \n", "# nothing\n# at all\n", "---\n"}) {
    EXPECT_THAT(Error(yaml),
                HasSubstr("web config error: the file has no settings (empty, "
                          "only comments, or cut short); write `{}`"))
        << yaml;
  }
  EXPECT_THAT(Error("tls_server_config:\n"),
              HasSubstr("tls_server_config (line 1): has nothing under it (a "
                        "file cut short?); write `tls_server_config: {}` to "
                        "serve without TLS on purpose"));
  EXPECT_THAT(Error(std::string("tls_server_config:\n  cert_file: a\n"
                                "  key_file: b\nbasic_auth_users:\n")),
              HasSubstr("basic_auth_users (line 4): has nothing under it"));
}

TEST(WebConfigTest, StatedEmptyIsPlainHttpWithoutAuth) {
  std::string error;
  for (const char* yaml :
       {"{}", "tls_server_config: {}\n", "basic_auth_users: {}\n",
        "tls_server_config: {}\nbasic_auth_users: {}\n"}) {
    auto config = ParseWebConfig(yaml, &error);
    ASSERT_TRUE(config) << yaml << ": " << error;
    EXPECT_FALSE(config->tls);
    EXPECT_TRUE(config->users.empty());
  }
  auto config =
      ParseWebConfig("tls_server_config: {}\nbasic_auth_users: {}\n", &error);
  ASSERT_TRUE(config);
  EXPECT_TRUE(config->no_tls_stated);
  EXPECT_TRUE(config->no_auth_stated);
  config = ParseWebConfig("{}", &error);
  ASSERT_TRUE(config);
  EXPECT_FALSE(config->no_tls_stated);
  EXPECT_FALSE(config->no_auth_stated);
}

SecurityLevel Level(const std::string& yaml) {
  std::string error;
  auto config = ParseWebConfig(yaml, &error);
  EXPECT_TRUE(config) << yaml << ": " << error;
  return config ? LevelOf(*config) : SecurityLevel{};
}

TEST(WebConfigTest, DowngradeMustBeStated) {
  const std::string users =
      std::string("basic_auth_users:\n  p: ") + kHash + "\n";
  const std::string tls = "tls_server_config:\n  cert_file: a\n  key_file: b\n";
  const std::string verify = tls +
                             "  client_auth_type: RequireAndVerifyClientCert\n"
                             "  client_ca_file: ca\n";
  std::vector<std::string> off;
  // Nothing turned off: fine, nothing named.
  EXPECT_EQ(Downgrade(Level(tls + users), Level(tls + users), &off), "");
  EXPECT_TRUE(off.empty());
  EXPECT_EQ(Downgrade(Level("{}"), Level(tls + users), &off), "");
  // TLS dropped by omission (the key removed, or a file of users only).
  EXPECT_THAT(Downgrade(Level(tls + users), Level(users), &off),
              HasSubstr("it would turn TLS off without saying so (write "
                        "`tls_server_config: {}` to do it on purpose)"));
  EXPECT_THAT(Downgrade(Level(tls + users), Level(tls), &off),
              HasSubstr("it would turn basic auth off without saying so"));
  EXPECT_THAT(Downgrade(Level(tls + users), Level("{}"), &off),
              HasSubstr("TLS off without saying so (write `tls_server_config: "
                        "{}` to do it on purpose); it would turn basic auth"));
  // Stated: allowed, and named.
  EXPECT_EQ(
      Downgrade(Level(tls + users),
                Level("tls_server_config: {}\nbasic_auth_users: {}\n"), &off),
      "");
  EXPECT_EQ(off, (std::vector<std::string>{"TLS", "basic auth"}));
  // Client certificates: the type must be written out to stop verifying.
  EXPECT_THAT(Downgrade(Level(verify), Level(tls), &off),
              HasSubstr("client certificate verification off"));
  EXPECT_EQ(Downgrade(Level(verify),
                      Level(tls + "  client_auth_type: NoClientCert\n"), &off),
            "");
  EXPECT_EQ(off, std::vector<std::string>{"client certificate verification"});
}

TEST(WebConfigTest, FullExample) {
  std::string error;
  auto config = ParseWebConfig(std::string("tls_server_config:\n"
                                           "  cert_file: /etc/f/server.crt\n"
                                           "  key_file: /etc/f/server.key\n"
                                           "  client_auth_type: "
                                           "RequireAndVerifyClientCert\n"
                                           "  client_ca_file: /etc/f/ca.crt\n"
                                           "  min_version: TLS13\n"
                                           "  client_allowed_sans:\n"
                                           "    - prom.example\n"
                                           "    - 10.0.0.1\n"
                                           "basic_auth_users:\n"
                                           "  prometheus: ") +
                                   kHash + "\n  'other': '" + kHash + "'\n",
                               &error);
  ASSERT_TRUE(config) << error;
  ASSERT_TRUE(config->tls);
  EXPECT_EQ(config->tls->cert_file, "/etc/f/server.crt");
  EXPECT_EQ(config->tls->key_file, "/etc/f/server.key");
  EXPECT_EQ(config->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(config->tls->client_ca_file, "/etc/f/ca.crt");
  EXPECT_EQ(config->tls->min_version, 0x0304);
  EXPECT_EQ(config->tls->max_version, 0x0304);
  EXPECT_EQ(config->tls->lines.at("tls_server_config.min_version"), 6);
  EXPECT_EQ(config->tls->client_allowed_sans,
            (std::vector<std::string>{"prom.example", "10.0.0.1"}));
  EXPECT_EQ(config->users.size(), 2u);
  EXPECT_EQ(config->users.at("prometheus"), kHash);
}

TEST(WebConfigTest, DefaultsFollowExporterToolkit) {
  std::string error;
  auto config = ParseWebConfig(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n", &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->tls->client_auth, ClientAuth::kNoClientCert);
  EXPECT_EQ(config->tls->min_version, 0x0303);  // TLS12
  // A CA without a type: verify every client.
  config = ParseWebConfig(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n"
      "  client_ca_file: c\n",
      &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
}

TEST(WebConfigTest, ErrorsNameKeyAndLine) {
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  min_version: TLS9\n"),
              HasSubstr("web config error: tls_server_config.min_version "
                        "(line 4): \"TLS9\" is not a TLS version"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  client_auth_type: Maybe\n"),
              HasSubstr("tls_server_config.client_auth_type (line 4): "
                        "\"Maybe\" is not a client_auth_type"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n"),
              HasSubstr("tls_server_config.key_file (line 2): is required"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  client_auth_type: RequireAndVerifyClientCert\n"),
              HasSubstr("tls_server_config.client_ca_file (line 4): is "
                        "required"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  client_auth_type: RequireAnyClientCert\n"
                    "  client_ca_file: c\n"),
              HasSubstr("does not verify client certificates"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  min_version: TLS13\n  max_version: TLS12\n"),
              HasSubstr("is above max_version"));
  EXPECT_THAT(Error("basic_auth_users:\n  alice: hunter2\n"),
              HasSubstr("basic_auth_users.alice (line 2): is not a bcrypt"));
  // The rejected value is never echoed (it may be a password).
  EXPECT_THAT(Error("basic_auth_users:\n  alice: hunter2\n"),
              ::testing::Not(HasSubstr("hunter2")));
  EXPECT_THAT(Error("tls_config:\n  cert_file: a\n"),
              HasSubstr("tls_config (line 1): unknown key"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"),
              HasSubstr("cipher_suites (line 4): is not supported"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  client_allowed_sans: [x.example]\n"),
              HasSubstr("client_allowed_sans (line 4): needs a "
                        "client_auth_type that verifies"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                    "  client_ca_file: c\n  client_allowed_sans: x\n"),
              HasSubstr("client_allowed_sans (line 5): must be a non-empty "
                        "list"));
  EXPECT_THAT(Error("http_server_config:\n  http2: false\n"),
              HasSubstr("http_server_config (line 1): is not supported"));
  EXPECT_THAT(Error("tls_server_config: [a, b]\n"),
              HasSubstr("tls_server_config (line 1): expected a mapping"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: [a]\n  key_file: b\n"),
              HasSubstr("tls_server_config.cert_file (line 2): expected a "
                        "single value"));
  EXPECT_THAT(Error("tls_server_config:\n  cert_file: ''\n  key_file: b\n"),
              HasSubstr("tls_server_config.cert_file (line 2): is empty"));
  EXPECT_THAT(Error(std::string("basic_auth_users:\n  'a:b': ") + kHash),
              HasSubstr("cannot contain ':'"));
  EXPECT_THAT(Error("- a\n- b\n"), HasSubstr("expected a mapping"));
  EXPECT_THAT(Error("tls_server_config: {cert_file: a\n"),
              HasSubstr("web config error: (line"));
}

TEST(WebConfigTest, LoadResolvesRelativePathsAgainstTheFile) {
  const std::string dir = ::testing::TempDir() + "/web_config_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/web.yml";
  {
    std::ofstream out(path);
    out << "tls_server_config:\n  cert_file: server.crt\n"
           "  key_file: /abs/server.key\n";
  }
  std::string error;
  auto config = LoadWebConfigFile(path, &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->tls->cert_file, dir + "/server.crt");
  EXPECT_EQ(config->tls->key_file, "/abs/server.key");
  EXPECT_FALSE(LoadWebConfigFile(dir + "/absent.yml", &error));
  EXPECT_THAT(error, HasSubstr("cannot read " + dir + "/absent.yml"));
  std::filesystem::remove_all(dir);
}

// Read as a bounded regular file: a FIFO, /dev/zero or a directory is
// refused at once, never waited on or read without end.
TEST(WebConfigTest, LoadRefusesNonRegularFiles) {
  const std::string dir = ::testing::TempDir() + "/web_config_test_fifo." +
                          std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/web.yml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string error;
  EXPECT_FALSE(LoadWebConfigFile(fifo, &error));
  EXPECT_THAT(error, HasSubstr("web config error: cannot read " + fifo +
                               ": not a regular file"));
  EXPECT_FALSE(LoadWebConfigFile("/dev/zero", &error));
  EXPECT_THAT(error, HasSubstr("/dev/zero: not a regular file"));
  EXPECT_FALSE(LoadWebConfigFile(dir, &error));
  EXPECT_THAT(error, HasSubstr(dir + ": not a regular file"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fabric::http
