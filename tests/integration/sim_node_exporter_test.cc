// node_exporter (the Debian prometheus-node-exporter, started here on
// 127.0.0.1) reads a frozen fabricmon-sim tree without errors and agrees
// with `fabricmon --once` on every counter both export.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/node_exporter_mapping.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(SimNodeExporter, ReadsTheSimTreeAndAgreesWithFabricmon) {
  if (!fs::exists("/usr/bin/prometheus-node-exporter")) {
    MISSING_DEPENDENCY("prometheus-node-exporter not installed");
  }
  testing::TempDir tmp("fabricmon-sim-node-exporter");
  const fs::path dir = tmp.path();
  {
    std::ofstream t(dir / "timeline.yaml");
    t << "events:\n"
         "  - scenario: congestion-hotspot\n"
         "  - scenario: symbol-errors\n"
         "  - scenario: counter-saturation\n"
         "  - scenario: link-degraded\n"
         "  - scenario: link-flap\n"
         "    duration: 20s\n";
  }
  // A frozen tree after 31.5 s of simulated time.
  const auto sim =
      RunCommand(Binary("fabricmon-sim") + " --out " + (dir / "sim").string() +
                 " --hosts 2 --timeline " + (dir / "timeline.yaml").string() +
                 " --warmup 31.5s --duration 0 2>&1");
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  const fs::path host = dir / "sim/host0";
  ASSERT_TRUE(fs::exists(host / "class/infiniband/mlx5_0"));

  const auto once = RunCommand(Binary("fabricmon") +
                               " --once --config /dev/null --sysfs.root " +
                               host.string() + " 2>/dev/null");
  ASSERT_EQ(once.exit_code, 0);
  const auto fm = ParseSamples(once.out);

  const int port = sim::FreePortRange(sim::PidSpread(35915), 1);
  const std::string log = (dir / "node_exporter.log").string();
  sim::Session ne("/usr/bin/prometheus-node-exporter --path.sysfs " +
                      host.string() +
                      " --collector.disable-defaults --collector.infiniband"
                      " --web.listen-address 127.0.0.1:" +
                      std::to_string(port),
                  log);
  std::optional<std::string> text;
  for (int i = 0; i < 100 && !text; ++i) {
    std::this_thread::sleep_for(100ms);
    text = fabric::testing::HttpGetOk(port, "/metrics");
  }
  ASSERT_TRUE(text) << "node_exporter did not answer";
  const auto ne_samples = ParseSamples(*text);
  EXPECT_EQ(
      ne_samples.at("node_scrape_collector_success{collector=\"infiniband\"}"),
      1);

  // Compare every mapped node_exporter sample with fabricmon's.
  const std::regex series(
      R"re(node_infiniband_(\w+)\{device="([^"]+)",port="([^"]+)"\})re");
  int compared = 0;
  std::set<std::string> devices;
  for (const auto& [name, value] : ne_samples) {
    std::smatch m;
    if (!std::regex_match(name, m, series)) continue;
    auto it = Mapping().find(m[1]);
    if (it == Mapping().end()) continue;
    std::string key = it->second.metric + "{device=\"" + m[2].str() + "\",";
    if (!it->second.error.empty()) {
      key += "error=\"" + it->second.error + "\",";
    }
    key += "port=\"" + m[3].str() + "\"}";
    auto f = fm.find(key);
    ASSERT_NE(f, fm.end()) << "fabricmon lacks " << key;
    EXPECT_EQ(f->second, value) << name << " vs " << key;
    devices.insert(m[2]);
    ++compared;
  }
  EXPECT_EQ(devices.size(), 9u);
  EXPECT_GE(compared, 9 * 15);
  // The faults are in the numbers both report.
  EXPECT_GT(ne_samples.at("node_infiniband_port_transmit_wait_total{device="
                          "\"mlx5_0\",port=\"1\"}"),
            0);
  EXPECT_EQ(
      ne_samples.at("node_infiniband_symbol_error_total{device=\"mlx5_6\",port="
                    "\"1\"}"),
      65535);
  EXPECT_EQ(ne_samples.at("node_infiniband_rate_bytes_per_second{device="
                          "\"mlx5_5\",port=\"1\"}"),
            25e9);

  ne.Signal(SIGTERM);
  EXPECT_NE(ne.Wait(10s), -1);
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_EQ(line.find("level=error"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace fabric::testing
