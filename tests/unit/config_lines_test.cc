// Every config error names the line of the key it is about (issue 39: a
// probe key_file on line 6 was reported on line 3, the line of the probe
// mapping's first key), at every depth: each key of the shipped example
// given a bad value, an unknown key slipped in before each key, the checks
// made after a mapping is read (a required key, two keys that disagree),
// list items, rails, and the web config's TLS keys. And every key the
// parser accepts is shown in config/fabricmon.yaml.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "collectors/registry.h"
#include "config/config.h"
#include "config/credential.h"
#include "http/web_config.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string Example() {
  std::ifstream in(testing::SourceDir() + "/config/fabricmon.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ErrorOf(const std::string& yaml) {
  std::string error;
  auto config = ParseConfig(yaml, AllCollectorKeys(), &error);
  EXPECT_FALSE(config) << "accepted:\n" << yaml;
  return error;
}

// "<key> (line N)": the error names that key path (ending in `key`) and
// line N, 1-based.
std::string KeyAt(const std::string& key, int line) {
  return key + " (line " + std::to_string(line) + ")";
}

// A key line of the example: indentation, the key, what follows the colon.
const std::regex kKeyLine(R"(^(\s*)([a-z_]+):(.*)$)");

// Each key of the shipped example, at every depth, given a value no key
// accepts (a mapping where a scalar or list belongs; a list where a
// mapping belongs): the error names that key and its line.
TEST(ConfigLinesTest, EveryKeyOfTheExampleWithABadValue) {
  const auto lines = Lines(Example());
  int checked = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, kKeyLine)) continue;
    std::string rest = m[3].str();
    rest = std::regex_replace(rest, std::regex(R"(\s+#.*$)"), "");
    const bool block = std::regex_match(rest, std::regex(R"(\s*)"));
    auto bad = lines;
    bad[i] = m[1].str() + m[2].str() + (block ? ": [1, 2]" : ": {x: [1]}");
    if (block) {
      // Drop the block under it: blank and comment lines, and lines
      // indented deeper than the key.
      std::size_t j = i + 1;
      for (; j < bad.size(); ++j) {
        const auto start = bad[j].find_first_not_of(' ');
        if (start != std::string::npos && bad[j][start] != '#' &&
            start <= m[1].length()) {
          break;
        }
      }
      bad.erase(bad.begin() + i + 1, bad.begin() + j);
    }
    EXPECT_THAT(ErrorOf(Join(bad)), HasSubstr(KeyAt(m[2].str(), i + 1)))
        << lines[i];
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

// An unknown key before each key of the example, in the same mapping.
TEST(ConfigLinesTest, AnUnknownKeyBeforeEveryKeyOfTheExample) {
  const auto lines = Lines(Example());
  int checked = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, kKeyLine)) continue;
    auto bad = lines;
    bad.insert(bad.begin() + i, m[1].str() + "no_such_key: 1");
    const std::string error = ErrorOf(Join(bad));
    EXPECT_THAT(error, HasSubstr(KeyAt("no_such_key", i + 1))) << lines[i];
    // A mistyped collector name is a collector error, not a key error.
    EXPECT_THAT(error, ::testing::AnyOf(HasSubstr("unknown key"),
                                        HasSubstr("unknown collector")));
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

class ConfigKeyFileLinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    key_ = dir_.path() + "/probe.key";
    std::ofstream(key_) << std::string(64, 'a') << "\n";
    ::chmod(key_.c_str(), 0600);
    ::unsetenv("CREDENTIALS_DIRECTORY");
  }
  void TearDown() override { ::unsetenv("CREDENTIALS_DIRECTORY"); }

  testing::TempDir dir_;
  std::string key_;
};

// The issue's file: the key on line 6, the mapping starting on line 3.
TEST_F(ConfigKeyFileLinesTest, ProbeKeyFileErrorsNameTheKeyFileLine) {
  const std::string head =
      "collectors:\n"                      // 1
      "  probe:\n"                         // 2
      "    enabled: true\n"                // 3
      "    interval: 1s\n"                 // 4
      "    listen_address: \":10916\"\n";  // 5
  for (const std::string value :
       {"/no/such/probe.key", "${CREDENTIALS_DIRECTORY}/probe.key",
        "credential:probe.key", "credential:../probe.key"}) {
    EXPECT_THAT(ErrorOf(head + "    key_file: " + value + "\n"),
                HasSubstr(KeyAt("collectors.probe.key_file", 6)))
        << value;
  }
  // Not written at all: the line that enabled it.
  EXPECT_THAT(ErrorOf(head), HasSubstr(KeyAt("collectors.probe.key_file", 3) +
                                       ": is required"));
  const std::string bench =
      "collectors:\n  bench_agent:\n    enabled: true\n"
      "    listen_address: \":10917\"\n    key_file: /no/such/key\n";
  EXPECT_THAT(ErrorOf(bench),
              HasSubstr(KeyAt("collectors.bench_agent.key_file", 5)));
}

// `credential:NAME` is the file systemd hands over in
// $CREDENTIALS_DIRECTORY; the errors say what is missing.
TEST_F(ConfigKeyFileLinesTest, CredentialResolvesAgainstCredentialsDirectory) {
  const std::string yaml =
      "collectors:\n  probe:\n    enabled: true\n"
      "    key_file: credential:probe.key\n";
  std::string error;
  EXPECT_THAT(ErrorOf(yaml), HasSubstr("needs $CREDENTIALS_DIRECTORY"));
  ::setenv("CREDENTIALS_DIRECTORY", dir_.path().c_str(), 1);
  auto config = ParseConfig(yaml, AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_TRUE(config->Collector("probe").enabled);
  const std::string other =
      "collectors:\n  probe:\n    enabled: true\n"
      "    key_file: credential:other.key\n";
  const std::string missing = ErrorOf(other);
  EXPECT_THAT(missing, HasSubstr(KeyAt("collectors.probe.key_file", 4)));
  EXPECT_THAT(missing, HasSubstr("no credential other.key"));
  EXPECT_THAT(missing, HasSubstr("LoadCredential=other.key:"));
  // Shell syntax is refused with the hint, never read literally.
  const std::string shell = ErrorOf(
      "collectors:\n  probe:\n    enabled: true\n"
      "    key_file: ${CREDENTIALS_DIRECTORY}/probe.key\n");
  EXPECT_THAT(shell, HasSubstr("nothing in the config expands"));
  EXPECT_THAT(shell, HasSubstr("credential:NAME"));
  // A disabled probe does not need the credential.
  ::unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_TRUE(
      ParseConfig("collectors:\n  probe:\n    enabled: false\n"
                  "    key_file: credential:probe.key\n",
                  AllCollectorKeys(), &error))
      << error;
}

TEST(CredentialTest, ResolveSecretPath) {
  std::string error;
  EXPECT_EQ(ResolveSecretPath("/etc/k", nullptr, &error), "/etc/k");
  EXPECT_FALSE(ResolveSecretPath("credential:k", "", &error));
  EXPECT_FALSE(ResolveSecretPath("credential:", "/run", &error));
  EXPECT_THAT(error, HasSubstr("a credential name is a file name"));
  EXPECT_FALSE(ResolveSecretPath("credential:a/b", "/run", &error));
  EXPECT_FALSE(ResolveSecretPath("$HOME/k", "/run", &error));
  testing::TempDir dir;
  std::ofstream(dir.path() + "/k") << "x";
  EXPECT_EQ(ResolveSecretPath("credential:k", dir.path().c_str(), &error),
            dir.path() + "/k");
}

// Checks made after a mapping is read name the key they are about.
TEST(ConfigLinesTest, ChecksAfterTheWalkNameTheirKey) {
  // The window too short for the interval: the window's line...
  EXPECT_THAT(ErrorOf("collectors:\n  congestion:\n    enabled: true\n"
                      "    interval: 1s\n    window: 1s\n"),
              HasSubstr(KeyAt("collectors.congestion.window", 5)));
  // ...or the interval's when the window is the default.
  EXPECT_THAT(ErrorOf("collectors:\n  congestion:\n    enabled: true\n"
                      "    timeout: 1s\n    interval: 50s\n"),
              HasSubstr(KeyAt("collectors.congestion.window", 5)));
  // Probe: a top-level key a rail replaces, rails that collide.
  const std::string probe = "collectors:\n  probe:\n    max_peers: 1\n";
  EXPECT_THAT(ErrorOf(probe + "    rails:\n"
                              "      - name: a\n"
                              "        listen_address: \"10.0.0.1:10916\"\n"
                              "    peers_file: /x\n"),
              HasSubstr(KeyAt("collectors.probe.peers_file", 7)));
  EXPECT_THAT(ErrorOf(probe + "    rails:\n"
                              "      - name: a\n"
                              "        listen_address: \"10.0.0.1:10916\"\n"
                              "      - name: b\n"
                              "        listen_address: \"10.0.0.2:10916\"\n"
                              "        peers: [\"h1\", \"h2\"]\n"),
              HasSubstr(KeyAt("collectors.probe.rails[1].peers", 9)));
  EXPECT_THAT(ErrorOf(probe + "    rails:\n"
                              "      - name: a\n"
                              "        listen_address: \"10.0.0.1:10916\"\n"
                              "      - listen_address: \"10.0.0.2:10916\"\n"
                              "        name: a\n"),
              HasSubstr(KeyAt("collectors.probe.rails[1].name", 8)));
  EXPECT_THAT(ErrorOf(probe + "    rails:\n"
                              "      - name: a\n"
                              "        device: mlx5_0\n"
                              "      - name: b\n"
                              "        port: 1\n"
                              "        device: mlx5_0\n"),
              HasSubstr(KeyAt("collectors.probe.rails[1].device", 9)));
  EXPECT_THAT(ErrorOf(probe + "    rails:\n"
                              "      - name: a\n"
                              "        listen_address: \"10.0.0.1:10916\"\n"
                              "        port: 2\n"),
              HasSubstr(KeyAt("collectors.probe.rails[0].port", 7)));
  // A list item: the item's own line.
  EXPECT_THAT(ErrorOf("collectors:\n  probe:\n    peers:\n"
                      "      - \"h1:10916\"\n      - \"h2:notaport\"\n"),
              HasSubstr(KeyAt("collectors.probe.peers", 5)));
  EXPECT_THAT(ErrorOf("devices:\n  include:\n    - mlx5_0\n    - \"mlx5_[\"\n"),
              HasSubstr(KeyAt("devices.include", 4)));
  // An empty value (null): its key's line.
  EXPECT_THAT(ErrorOf("collectors:\n  ib_port:\n    enabled: true\n"
                      "    interval:\n    timeout: 1s\n"),
              HasSubstr(KeyAt("collectors.ib_port.interval", 4)));
}

TEST(ConfigLinesTest, WebConfigTlsChecksNameTheirKey) {
  const std::string head =
      "tls_server_config:\n"        // 1
      "  cert_file: server.crt\n";  // 2
  std::string error;
  EXPECT_FALSE(http::ParseWebConfig(head, &error));
  EXPECT_THAT(error, HasSubstr("tls_server_config.key_file"));
  EXPECT_FALSE(http::ParseWebConfig(head + "  key_file: server.key\n"
                                           "  max_version: TLS12\n"
                                           "  min_version: TLS13\n",
                                    &error));
  EXPECT_THAT(error, HasSubstr(KeyAt("tls_server_config.min_version", 5)));
  EXPECT_FALSE(
      http::ParseWebConfig(head + "  key_file: server.key\n"
                                  "  client_ca_file: ca.crt\n"
                                  "  client_auth_type: RequestClientCert\n",
                           &error));
  EXPECT_THAT(error, HasSubstr(KeyAt("tls_server_config.client_ca_file", 4)));
  EXPECT_FALSE(http::ParseWebConfig(
      head + "  key_file: ${CREDENTIALS_DIRECTORY}/k\n", &error));
  EXPECT_THAT(error, HasSubstr(KeyAt("tls_server_config.key_file", 3)));
}

// Every key path the parser accepts (AcceptedKeyPaths, derived from the
// parser's own tables and each collector's CollectorKeys) is written in
// config/fabricmon.yaml, which says it shows every key with its default.
// Two have no default that can be written, and are shown in a comment:
// a collector's own `devices` lists (written, even empty, they replace the
// global ones) and `rails` (an empty list is refused).
TEST(ConfigLinesTest, ExampleShowsEveryAcceptedKey) {
  const std::string text = Example();
  const YAML::Node root = YAML::Load(text);
  const std::pair<std::regex, std::string> kInComments[] = {
      {std::regex(R"(collectors\.[a-z_]+\.devices\.(include|exclude))"),
       "#   devices:  include/exclude for this collector only"},
      {std::regex(R"(collectors\.probe\.rails)"), "    # rails:\n"},
  };
  const auto paths = AcceptedKeyPaths(AllCollectorKeys());
  EXPECT_GT(paths.size(), 80u);
  for (const auto& path : paths) {
    const auto comment = std::find_if(
        std::begin(kInComments), std::end(kInComments),
        [&](const auto& c) { return std::regex_match(path, c.first); });
    if (comment != std::end(kInComments)) {
      EXPECT_THAT(text, HasSubstr(comment->second)) << path;
      continue;
    }
    YAML::Node node = YAML::Clone(root);
    std::istringstream parts(path);
    bool found = true;
    for (std::string part; std::getline(parts, part, '.');) {
      if (!node.IsMap() || !node[part]) {
        found = false;
        break;
      }
      node = node[part];
    }
    EXPECT_TRUE(found) << path << " is accepted by the parser but not shown "
                       << "in config/fabricmon.yaml";
  }
}

}  // namespace
}  // namespace fabric
