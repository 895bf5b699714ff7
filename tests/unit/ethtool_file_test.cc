// The file-backed EthtoolSource (sources/ethtool_file.h): a good
// `ethtool -S` dump, a missing file (ENODEV), malformed and truncated
// dumps (lines skipped and counted), names that cannot be a netdev, and
// the roce collector reading PFC counters through it.
#include "sources/ethtool_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "collectors/roce.h"
#include "core/metric_sink.h"
#include "sources/ethtool_parse.h"
#include "sources/sysfs.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

class EthtoolFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::uint64_t Value(const EthtoolResult& r, const std::string& name) {
    for (std::size_t i = 0; i < r->names.size(); ++i) {
      if (r->names[i] == name) return r->values[i];
    }
    ADD_FAILURE() << "no statistic " << name;
    return 0;
  }
  testing::TempDir tmp_{"ethtool_file"};
  fs::path dir_;
};

TEST_F(EthtoolFileTest, GoodDumpIsReadLikeTheIoctl) {
  std::ifstream in(testing::Fixture("ethtool/mlx5-pfc-prio3.txt"));
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  Write("eth2", text.str());
  FileEthtoolSource source(dir_.string());
  const EthtoolResult r = source.Stats("eth2");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->skipped_lines, 0u);
  EXPECT_EQ(r->names.size(), r->values.size());
  EXPECT_TRUE(r->driver.empty());
  EXPECT_TRUE(r->hw_address.empty());
  // The same view the parser gives the recorded dump.
  const EthtoolText expected = ParseEthtoolText(text.str());
  EXPECT_EQ(r->names, expected.stats.names);
  EXPECT_EQ(r->values, expected.stats.values);
  const RoceEthtoolStats s = ParseEthtoolStats(r->names, r->values);
  EXPECT_TRUE(s.prio[3].pause[kRx].has_value());
  EXPECT_GT(s.recognized, 0u);
}

TEST_F(EthtoolFileTest, SimpleDumpValues) {
  Write("bond0",
        "NIC statistics:\n"
        "     rx_prio3_pause: 1234\n"
        "     tx_prio3_pause_duration: 18446744073709551615\n"
        "     tx_pause_storm_error_events: 1\n");
  FileEthtoolSource source(dir_.string());
  const EthtoolResult r = source.Stats("bond0");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->names.size(), 3u);
  EXPECT_EQ(Value(r, "rx_prio3_pause"), 1234u);
  EXPECT_EQ(Value(r, "tx_prio3_pause_duration"), 18446744073709551615u);
  EXPECT_EQ(Value(r, "tx_pause_storm_error_events"), 1u);
}

TEST_F(EthtoolFileTest, MissingFileIsNoSuchDevice) {
  FileEthtoolSource source(dir_.string());
  EXPECT_EQ(source.Stats("bond0").error(), std::errc::no_such_device);
  // The whole directory missing is the same: no dump, no netdev.
  FileEthtoolSource nowhere((dir_ / "absent").string());
  EXPECT_EQ(nowhere.Stats("bond0").error(), std::errc::no_such_device);
  // A dump that appears later is read (no caching of absence).
  Write("bond0", "rx_prio3_pause: 5\n");
  EXPECT_TRUE(source.Stats("bond0").ok());
}

TEST_F(EthtoolFileTest, NamesThatCannotBeANetdevAreNoSuchDevice) {
  Write("ok", "rx_prio3_pause: 5\n");
  fs::create_directories(dir_ / "sub");
  std::ofstream(dir_ / "sub" / "x") << "rx_prio3_pause: 5\n";
  FileEthtoolSource source((dir_ / "sub").string());
  const std::vector<std::string> names = {"",
                                          ".",
                                          "..",
                                          "../ok",
                                          "a/b",
                                          "sixteen_chars_xx",
                                          std::string("o\0k", 3)};
  for (const std::string& name : names) {
    EXPECT_EQ(source.Stats(name).error(), std::errc::no_such_device)
        << "'" << name << "'";
  }
  EXPECT_TRUE(source.Stats("x").ok());
}

TEST_F(EthtoolFileTest, MalformedLinesAreSkippedAndCounted) {
  Write("bond0",
        "NIC statistics:\n"
        "     rx_prio3_pause: 10\n"
        "     garbage without colon\n"
        "     rx_prio3_pause_duration: -4\n"
        "     tx_prio3_pause: lots\n"
        "     tx_prio3_pause_duration: 99999999999999999999\n"
        "     : 7\n"
        "\n"
        "     tx_pause_storm_warning_events: 2\n");
  FileEthtoolSource source(dir_.string());
  const EthtoolResult r = source.Stats("bond0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->skipped_lines, 5u);
  ASSERT_EQ(r->names.size(), 2u);
  EXPECT_EQ(Value(r, "rx_prio3_pause"), 10u);
  EXPECT_EQ(Value(r, "tx_pause_storm_warning_events"), 2u);
}

TEST_F(EthtoolFileTest, TruncatedDumpKeepsTheCompleteLines) {
  Write("bond0", "NIC statistics:\n     rx_prio3_pause: 10\n     tx_prio3_pa");
  FileEthtoolSource source(dir_.string());
  const EthtoolResult r = source.Stats("bond0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->skipped_lines, 1u);
  ASSERT_EQ(r->names.size(), 1u);
  EXPECT_EQ(Value(r, "rx_prio3_pause"), 10u);
  // Cut right after the colon: the value is missing.
  Write("bond1", "rx_prio3_pause: 10\ntx_prio3_pause:");
  const EthtoolResult r1 = source.Stats("bond1");
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->skipped_lines, 1u);
  EXPECT_EQ(r1->names.size(), 1u);
  // Empty file: a driver with no statistics, not an error.
  Write("bond2", "");
  const EthtoolResult r2 = source.Stats("bond2");
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->names.empty());
  EXPECT_EQ(r2->skipped_lines, 0u);
}

TEST_F(EthtoolFileTest, BinaryGarbageAndOversizedFiles) {
  const char kGarbage[] = "\0\x01\xff: 3\n\x80\x81\nrx_prio3_pause: 1\n";
  Write("bond0", std::string(kGarbage, sizeof(kGarbage) - 1));
  FileEthtoolSource source(dir_.string());
  const EthtoolResult r = source.Stats("bond0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Value(r, "rx_prio3_pause"), 1u);
  EXPECT_EQ(r->skipped_lines, 1u);  // the line without a colon
  Write("huge", std::string(kMaxEthtoolDumpBytes + 1, 'x'));
  EXPECT_EQ(source.Stats("huge").error(), std::errc::file_too_large);
  // A directory where the dump should be: an error, not a crash.
  fs::create_directories(dir_ / "adir");
  const EthtoolResult d = source.Stats("adir");
  EXPECT_FALSE(d.ok());
}

TEST_F(EthtoolFileTest, RoceCollectorReadsPfcThroughTheFileSource) {
  // A minimal tree: one RoCE port whose netdev has no class/net entry
  // (and a second one that has): the file source is not the kernel, so
  // neither the class/net filter nor the address check applies.
  const fs::path tree = dir_ / "tree";
  const fs::path port = tree / "class/infiniband/mlx5_bond_0/ports/1";
  fs::create_directories(port / "gid_attrs/ndevs");
  std::ofstream(port / "link_layer") << "Ethernet\n";
  std::ofstream(port / "gid_attrs/ndevs/0") << "bond0\n";
  fs::create_directories(dir_ / "dumps");
  std::ofstream(dir_ / "dumps/bond0") << "NIC statistics:\n"
                                         "     tx_prio3_pause: 80000\n"
                                         "     bad line\n";
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(tree.string());
  RoceOptions options;
  options.ethtool_is_kernel = false;
  auto collector = MakeRoceCollector(
      env, options, MakeFileEthtoolSource((dir_ / "dumps").string()), nullptr);
  MetricSink sink;
  EXPECT_TRUE(collector->Collect(sink));
  EXPECT_EQ(sink.skipped(), 1u);  // the bad line
  bool found = false;
  for (const auto& f : sink.Take()) {
    if (f.name != "fabric_pfc_pause_frames_total") continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const auto& p : m.label) l[p.name] = p.value;
      if (l["device"] == "mlx5_bond_0" && l["netdev"] == "bond0" &&
          l["priority"] == "3" && l["direction"] == "tx") {
        EXPECT_EQ(m.counter.value, 80000);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace fabric
