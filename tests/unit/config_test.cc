// Tests for config/: defaults, every key, durations, and that every error
// names the key and the line.
#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "collectors/congestion.h"
#include "collectors/registry.h"
#include "collectors/roce.h"
#include "config/duration.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The registry rows named, in that order (a build with fewer collectors).
std::vector<CollectorKeys> Specs(std::vector<std::string> names) {
  std::vector<CollectorKeys> out;
  for (const auto& name : names) {
    for (const auto& spec : CollectorSpecs()) {
      if (spec.name == name) out.push_back(spec);
    }
  }
  return out;
}

const std::vector<CollectorKeys> kKnown =
    Specs({"ib_port", "hw_counters", "roce"});

std::string ParseError(std::string_view yaml) {
  std::string error;
  auto config = ParseConfig(yaml, kKnown, &error);
  EXPECT_FALSE(config) << "expected an error for:\n" << yaml;
  return error;
}

TEST(DurationTest, ParsesUnitsAndSequences) {
  struct Row {
    std::string_view text;
    microseconds want;
  } rows[] = {
      {"1s", seconds(1)},
      {"500ms", milliseconds(500)},
      {"2m", seconds(120)},
      {"1h", seconds(3600)},
      {"1m30s", seconds(90)},
      {"250us", microseconds(250)},
      {"1s500ms", milliseconds(1500)},
  };
  for (const auto& row : rows) {
    auto got = ParseDuration(row.text);
    ASSERT_TRUE(got) << row.text;
    EXPECT_EQ(*got, row.want) << row.text;
  }
}

TEST(DurationTest, RejectsGarbage) {
  for (std::string_view text :
       {"", "fast", "1", "s", "-1s", "1.5s", "0s", "1 s", "1sec", "1d",
        "99999999999999999999s", "9223372036854775807h", " 1s"}) {
    EXPECT_FALSE(ParseDuration(text)) << "'" << text << "'";
  }
}

TEST(DurationTest, FormatRoundTrips) {
  for (auto d : {microseconds(seconds(1)), microseconds(milliseconds(500)),
                 microseconds(seconds(90)), microseconds(seconds(7200)),
                 microseconds(250)}) {
    auto back = ParseDuration(FormatDuration(d));
    ASSERT_TRUE(back) << FormatDuration(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(FormatDuration(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDuration(seconds(90)), "1m30s");
}

TEST(ConfigTest, EmptyDocumentGivesDefaults) {
  std::string error;
  auto config = ParseConfig("", kKnown, &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->listen_address, ":10915");
  EXPECT_EQ(config->sysfs_root, "/sys");
  EXPECT_EQ(config->ethtool_dir, "");  // the kernel's ethtool ioctl
  EXPECT_EQ(config->log_level, "info");
  EXPECT_TRUE(config->devices.include().empty());
  EXPECT_TRUE(config->devices.exclude().empty());
  CollectorConfig c = config->Collector("ib_port");
  EXPECT_TRUE(c.enabled);
  // Raw counters every 5 s (kCounterPollInterval), read every 15-30 s.
  EXPECT_EQ(c.interval, seconds(5));
  EXPECT_EQ(config->Collector("hw_counters").interval, seconds(5));
  EXPECT_EQ(config->Collector("roce").interval, seconds(5));
  EXPECT_EQ(c.timeout, seconds(5));
  EXPECT_TRUE(
      SettingsAs<RoceSettings>(config->Collector("roce")).netdevs.empty());
  // Every collector the parser was given has its effective settings; a
  // name it was not given is disabled.
  EXPECT_EQ(config->collectors.size(), kKnown.size());
  EXPECT_FALSE(config->Collector("congestion").enabled);
}

TEST(ConfigTest, CongestionPollsFasterByDefault) {
  std::string error;
  auto config = ParseConfig("collectors:\n  congestion:\n    enabled: true\n",
                            kKnown, &error);
  // Not in kKnown: rejected; with it known, the default is 100ms.
  EXPECT_FALSE(config);
  config = ParseConfig("collectors:\n  congestion:\n    enabled: true\n",
                       Specs({"congestion"}), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->Collector("congestion").interval, milliseconds(100));
  auto defaults = ParseConfig("", AllCollectorKeys(), &error);
  EXPECT_EQ(defaults->Collector("congestion").interval, milliseconds(100));
  EXPECT_EQ(defaults->Collector("congestion").timeout, seconds(1));
}

TEST(ConfigTest, CongestionWindowAndTick) {
  const std::vector<CollectorKeys> known = Specs({"congestion", "ib_port"});
  std::string error;
  auto config = ParseConfig(
      "collectors:\n  congestion:\n    window: 30s\n"
      "    xmit_wait_tick_ns: 32\n",
      known, &error);
  ASSERT_TRUE(config) << error;
  const CongestionSettings got =
      SettingsAs<CongestionSettings>(config->Collector("congestion"));
  EXPECT_DOUBLE_EQ(got.window_seconds, 30);
  EXPECT_DOUBLE_EQ(got.xmit_wait_tick_seconds, 32e-9);
  // Defaults (docs/congestion.md): 60 s, 256 ns.
  EXPECT_EQ(SettingsAs<CongestionSettings>(
                ParseConfig("", known, &error)->Collector("congestion")),
            CongestionSettings{});
  EXPECT_DOUBLE_EQ(CongestionSettings{}.window_seconds, 60);
  EXPECT_DOUBLE_EQ(CongestionSettings{}.xmit_wait_tick_seconds, 256e-9);
  ASSERT_TRUE(
      ParseConfig("collectors:\n  congestion:\n    xmit_wait_tick_ns: 2.5\n",
                  known, &error))
      << error;

  auto bad = [&](std::string_view yaml) {
    std::string e;
    EXPECT_FALSE(ParseConfig(yaml, known, &e)) << yaml;
    return e;
  };
  for (std::string_view tick :
       {"0", "-4", "fast", "1e7", "nan", "inf", "256ns", "", "0x10"}) {
    EXPECT_THAT(bad("collectors:\n  congestion:\n    xmit_wait_tick_ns: \"" +
                    std::string(tick) + "\"\n"),
                HasSubstr("collectors.congestion.xmit_wait_tick_ns (line 3): "))
        << tick;
  }
  EXPECT_THAT(bad("collectors:\n  congestion:\n    window: 1m30\n"),
              HasSubstr("collectors.congestion.window (line 3): "));
  EXPECT_THAT(bad("collectors:\n  congestion:\n    interval: 1s\n"
                  "    window: 1500ms\n"),
              HasSubstr("collectors.congestion.window (line 4): must be at "
                        "least two poll intervals"));
  std::string e;
  EXPECT_TRUE(
      ParseConfig("collectors:\n  congestion:\n    enabled: false\n"
                  "    interval: 10m\n",
                  known, &e))
      << e;
  // Only the congestion collector has them.
  EXPECT_THAT(bad("collectors:\n  ib_port:\n    window: 30s\n"),
              HasSubstr("collectors.ib_port.window (line 3): unknown key "
                        "(expected enabled, interval, timeout, devices, "
                        "include, exclude)"));
  EXPECT_THAT(bad("collectors:\n  congestion:\n    windows: 30s\n"),
              HasSubstr("collectors.congestion.windows (line 3): unknown key "
                        "(expected enabled, interval, timeout, devices, "
                        "window, xmit_wait_tick_ns, fast_read_ratio)"));
}

// collectors.congestion.fast_read_ratio: which counters a 100 ms sample
// reads (collectors/congestion_window.h); 0 turns the choice off.
TEST(ConfigTest, CongestionFastReadRatio) {
  const std::vector<CollectorKeys> known = Specs({"congestion"});
  std::string error;
  EXPECT_DOUBLE_EQ(CongestionSettings{}.quiet_ratio, 0.05);
  for (const auto& [text, want] : std::vector<std::pair<std::string, double>>{
           {"0", 0}, {"0.2", 0.2}, {"1", 1}}) {
    auto config = ParseConfig(
        "collectors:\n  congestion:\n    fast_read_ratio: " + text + "\n",
        known, &error);
    ASSERT_TRUE(config) << error;
    EXPECT_DOUBLE_EQ(
        SettingsAs<CongestionSettings>(config->Collector("congestion"))
            .quiet_ratio,
        want);
  }
  for (std::string_view bad : {"-0.1", "1.5", "fast", "nan", ""}) {
    std::string e;
    EXPECT_FALSE(
        ParseConfig("collectors:\n  congestion:\n    "
                    "fast_read_ratio: \"" +
                        std::string(bad) + "\"\n",
                    known, &e))
        << bad;
    EXPECT_THAT(e, HasSubstr("collectors.congestion.fast_read_ratio (line 3)"))
        << bad;
  }
}

TEST(ConfigTest, EveryKey) {
  std::string error;
  auto config = ParseConfig(R"(
listen_address: "127.0.0.1:9999"
sysfs_root: /host/sys
ethtool_dir: /dev/shm/sim/host0/ethtool
log_level: debug
devices:
  include: [mlx5_0, "mlx5_[0-9]+"]
  exclude: [mlx5_bond_0]
collectors:
  ib_port:
    enabled: false
    interval: 250ms
    timeout: 2s
  hw_counters:
    devices:
      include: ["mlx5_1"]
  roce:
    netdevs: [eth0, eth1]
)",
                            kKnown, &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->listen_address, "127.0.0.1:9999");
  EXPECT_EQ(config->sysfs_root, "/host/sys");
  EXPECT_EQ(config->ethtool_dir, "/dev/shm/sim/host0/ethtool");
  EXPECT_EQ(config->log_level, "debug");
  EXPECT_THAT(config->devices.include(),
              ::testing::ElementsAre("mlx5_0", "mlx5_[0-9]+"));
  EXPECT_THAT(config->devices.exclude(), ::testing::ElementsAre("mlx5_bond_0"));

  CollectorConfig ib = config->Collector("ib_port");
  EXPECT_FALSE(ib.enabled);
  EXPECT_EQ(ib.interval, milliseconds(250));
  EXPECT_EQ(ib.timeout, seconds(2));
  EXPECT_THAT(SettingsAs<RoceSettings>(config->Collector("roce")).netdevs,
              ::testing::ElementsAre("eth0", "eth1"));

  // hw_counters replaces include but inherits the global exclude.
  DeviceFilter hw = config->Collector("hw_counters").devices;
  EXPECT_THAT(hw.include(), ::testing::ElementsAre("mlx5_1"));
  EXPECT_THAT(hw.exclude(), ::testing::ElementsAre("mlx5_bond_0"));
  EXPECT_TRUE(hw.Allows("mlx5_1"));
  EXPECT_FALSE(hw.Allows("mlx5_0"));
  DeviceFilter ibf = config->Collector("ib_port").devices;
  EXPECT_TRUE(ibf.Allows("mlx5_7"));
  EXPECT_FALSE(ibf.Allows("mlx5_bond_0"));
}

TEST(ConfigTest, BadDurationNamesKeyAndLine) {
  std::string error = ParseError(R"(log_level: info
collectors:
  ib_port:
    enabled: true
    interval: fast
)");
  EXPECT_THAT(error, HasSubstr("config error: collectors.ib_port.interval "
                               "(line 5): \"fast\" is not a duration"));
}

// Below the floor a collector only burns CPU (`interval: 1us` ran at 174%
// of a core); the error names the key, the line and the floor.
TEST(ConfigTest, IntervalsAndTimeoutsBelowTheFloorNameKeyAndLine) {
  EXPECT_THAT(ParseError("collectors:\n  ib_port:\n    interval: 1us\n"),
              HasSubstr("config error: collectors.ib_port.interval (line 3): "
                        "\"1us\" is below the minimum of 10ms"));
  EXPECT_THAT(ParseError("collectors:\n  roce: {interval: 9ms}\n"),
              HasSubstr("collectors.roce.interval (line 2): \"9ms\" is below "
                        "the minimum of 10ms"));
  EXPECT_THAT(ParseError("collectors:\n  ib_port:\n    timeout: 999us\n"),
              HasSubstr("collectors.ib_port.timeout (line 3): \"999us\" is "
                        "below the minimum of 1ms"));
  std::string error;
  EXPECT_TRUE(
      ParseConfig("collectors:\n  ib_port: {interval: 10ms, timeout: 1ms}\n",
                  kKnown, &error))
      << error;
}

// The probe interval is its send rate: 1 ms is a supported setting.
TEST(ConfigTest, ProbeIntervalFloorIsOneMillisecond) {
  const auto specs = Specs({"probe"});
  ASSERT_EQ(specs.size(), 1u);
  std::string error;
  auto config =
      ParseConfig("collectors:\n  probe:\n    interval: 1ms\n", specs, &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->Collector("probe").interval, milliseconds(1));
  EXPECT_FALSE(ParseConfig("collectors:\n  probe:\n    interval: 999us\n",
                           specs, &error));
  EXPECT_THAT(error, HasSubstr("collectors.probe.interval (line 3): \"999us\" "
                               "is below the minimum of 1ms"));
}

TEST(ConfigTest, UnknownKeysNameKeyAndLine) {
  EXPECT_THAT(ParseError("listen_adress: \":1\"\n"),
              HasSubstr("listen_adress (line 1): unknown key"));
  EXPECT_THAT(ParseError("collectors:\n  ib_port:\n    intervall: 1s\n"),
              HasSubstr("collectors.ib_port.intervall (line 3): unknown key"));
  EXPECT_THAT(ParseError("devices:\n  includes: [a]\n"),
              HasSubstr("devices.includes (line 2): unknown key"));
  EXPECT_THAT(ParseError("\ncollectors:\n  nosuch:\n    enabled: true\n"),
              HasSubstr("collectors.nosuch (line 3): unknown collector "
                        "(known: ib_port, hw_counters, roce)"));
}

TEST(ConfigTest, BadTypesNameKeyAndLine) {
  EXPECT_THAT(ParseError("collectors:\n  ib_port:\n    enabled: maybe\n"),
              HasSubstr("collectors.ib_port.enabled (line 3): \"maybe\" is "
                        "not a boolean"));
  EXPECT_THAT(ParseError("devices:\n  include: mlx5_0\n"),
              HasSubstr("devices.include (line 2): expected a list"));
  EXPECT_THAT(ParseError("listen_address: [a, b]\n"),
              HasSubstr("listen_address (line 1): expected a single value"));
  EXPECT_THAT(ParseError("listen_address: \"10915\"\n"),
              HasSubstr("listen_address (line 1): \"10915\" is not HOST:PORT"));
  EXPECT_THAT(ParseError("listen_address: \":99999\"\n"),
              HasSubstr("listen_address (line 1)"));
  EXPECT_THAT(ParseError("log_level: loud\n"),
              HasSubstr("log_level (line 1): \"loud\" is not a log level"));
  EXPECT_THAT(ParseError("collectors:\n  ib_port: 5\n"),
              HasSubstr("collectors.ib_port (line 2): expected a mapping"));
  EXPECT_THAT(ParseError("- a\n- b\n"),
              HasSubstr("(line 1): expected a mapping"));
  EXPECT_THAT(ParseError("collectors:\n  roce:\n    netdevs: eth0\n"),
              HasSubstr("collectors.roce.netdevs (line 3): expected a list"));
  // netdevs is roce's own key.
  EXPECT_THAT(ParseError("collectors:\n  ib_port:\n    netdevs: [eth0]\n"),
              HasSubstr("collectors.ib_port.netdevs (line 3): unknown key"));
}

TEST(ConfigTest, BadRegexNamesKeyAndLine) {
  std::string error = ParseError(R"(devices:
  include:
    - mlx5_0
    - "mlx5_[0-9"
)");
  EXPECT_THAT(error, HasSubstr("config error: devices.include (line 4): "
                               "\"mlx5_[0-9\" is not a valid regex"));
  error = ParseError(
      "collectors:\n  hw_counters:\n    devices:\n      exclude: [\"(\"]\n");
  EXPECT_THAT(error,
              HasSubstr("collectors.hw_counters.devices.exclude (line 4)"));
}

TEST(ConfigTest, YamlSyntaxErrorNamesLine) {
  std::string error = ParseError("collectors:\n  ib_port: {enabled: true\n");
  EXPECT_THAT(error, HasSubstr("config error: line "));
}

TEST(ConfigTest, ListenAddressForms) {
  for (std::string_view ok :
       {":10915", "0.0.0.0:1", "127.0.0.1:0", "[::1]:10915", "localhost:80"}) {
    EXPECT_TRUE(ValidListenAddress(ok)) << ok;
  }
  for (std::string_view bad :
       {"", "10915", ":", ":x", "::1:80", "[::1]", "host:65536", "[]:1"}) {
    EXPECT_FALSE(ValidListenAddress(bad)) << bad;
  }
}

TEST(ConfigTest, LoadFileMissingAndPresent) {
  std::string error;
  const std::string missing = ::testing::TempDir() + "/no-such-fabricmon.yaml";
  auto defaults =
      LoadConfigFile(missing, /*missing_is_default=*/true, kKnown, &error);
  ASSERT_TRUE(defaults) << error;
  EXPECT_EQ(defaults->listen_address, ":10915");

  EXPECT_FALSE(LoadConfigFile(missing, false, kKnown, &error));
  EXPECT_THAT(error, HasSubstr("cannot read " + missing));

  const std::string path = ::testing::TempDir() + "/config_test.yaml";
  {
    std::ofstream out(path);
    out << "log_level: warn\ncollectors:\n  roce:\n    timeout: soon\n";
  }
  EXPECT_FALSE(LoadConfigFile(path, true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr("collectors.roce.timeout (line 4)"));
  EXPECT_THAT(error, HasSubstr(path));
  std::remove(path.c_str());
}

// An empty file is most likely one cut short while being written: an error
// (at start and on reload alike), not the defaults. /dev/null is the way to
// ask for them. A directory, FIFO, device or oversized file is refused
// without blocking.
TEST(ConfigTest, LoadFileRefusesEmptyAndNonRegularFiles) {
  const std::string dir =
      ::testing::TempDir() + "/config_test_files." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string error;
  const std::string empty = dir + "/empty.yaml";
  std::ofstream(empty).close();
  EXPECT_FALSE(LoadConfigFile(empty, true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr("config error: " + empty + " is empty"));

  auto defaults = LoadConfigFile("/dev/null", false, kKnown, &error);
  ASSERT_TRUE(defaults) << error;
  EXPECT_EQ(defaults->listen_address, ":10915");
  const std::string comments = dir + "/comments.yaml";
  std::ofstream(comments) << "# all defaults\n";
  EXPECT_TRUE(LoadConfigFile(comments, false, kKnown, &error)) << error;

  EXPECT_FALSE(LoadConfigFile(dir, true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr("config error: cannot read " + dir +
                               ": not a regular file"));
  const std::string fifo = dir + "/fifo.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(LoadConfigFile(fifo, true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr(fifo + ": not a regular file"));
  EXPECT_FALSE(LoadConfigFile("/dev/zero", true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr("/dev/zero: not a regular file"));
  const std::string big = dir + "/big.yaml";
  std::ofstream(big) << "# " << std::string(kMaxConfigBytes, 'x') << "\n";
  EXPECT_FALSE(LoadConfigFile(big, true, kKnown, &error));
  EXPECT_THAT(error, HasSubstr(big + ": larger than 1 MiB"));
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, EthtoolDirIsAnAbsolutePathOrEmpty) {
  std::string error;
  for (const char* ok : {"ethtool_dir: /var/lib/dumps\n", "ethtool_dir:\n",
                         "ethtool_dir: \"\"\n", "ethtool_dir: /\n"}) {
    auto config = ParseConfig(ok, kKnown, &error);
    ASSERT_TRUE(config) << ok << error;
  }
  EXPECT_EQ(ParseConfig("ethtool_dir:\n", kKnown, &error)->ethtool_dir, "");
  EXPECT_THAT(ParseError("log_level: info\nethtool_dir: sim/host0/ethtool\n"),
              HasSubstr("config error: ethtool_dir (line 2): "
                        "\"sim/host0/ethtool\" is not an absolute directory "
                        "path"));
  EXPECT_THAT(ParseError("ethtool_dir: [/a, /b]\n"),
              HasSubstr("ethtool_dir (line 1): expected a single value"));
  EXPECT_THAT(ParseError("ethtool_dir: {dir: /a}\n"),
              HasSubstr("ethtool_dir (line 1): expected a single value"));
  // Not a per-collector key.
  EXPECT_THAT(ParseError("collectors:\n  roce:\n    ethtool_dir: /a\n"),
              HasSubstr("collectors.roce.ethtool_dir (line 3): unknown key"));
  EXPECT_TRUE(ValidEthtoolDir(""));
  EXPECT_TRUE(ValidEthtoolDir("/x"));
  EXPECT_FALSE(ValidEthtoolDir("x"));
  EXPECT_FALSE(ValidEthtoolDir("./x"));
  EXPECT_FALSE(ValidEthtoolDir(std::string_view("/a\0b", 4)));
}

TEST(ConfigTest, ShippedExampleIsValidAndMatchesDefaults) {
  // config/fabricmon.yaml documents every key with its default; loading it
  // must give exactly the built-in defaults.
  std::string error;
  auto example = LoadConfigFile(testing::SourceDir() + "/config/fabricmon.yaml",
                                false, AllCollectorKeys(), &error);
  ASSERT_TRUE(example) << error;
  auto parsed = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(parsed) << error;
  const Config& defaults = *parsed;
  EXPECT_EQ(example->listen_address, defaults.listen_address);
  EXPECT_EQ(example->sysfs_root, defaults.sysfs_root);
  EXPECT_EQ(example->ethtool_dir, defaults.ethtool_dir);
  EXPECT_EQ(example->log_level, defaults.log_level);
  EXPECT_EQ(example->mad_broker, defaults.mad_broker);
  EXPECT_EQ(example->devices, defaults.devices);
  for (const auto& [name, c] : example->collectors) {
    EXPECT_TRUE(c == defaults.Collector(name)) << name;
  }
  EXPECT_EQ(example->collectors.size(), defaults.collectors.size());
  EXPECT_TRUE(example->collectors.count("congestion"));
}

}  // namespace
}  // namespace fabric
