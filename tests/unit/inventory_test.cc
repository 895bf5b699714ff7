// What the jobs and pods collectors share (collectors/inventory.h): the cap
// and its `_over_cap` gauge, and their settings as the registry parses them
// (InventorySpec, PathKey, CapKey). The collectors themselves:
// slurm_jobs_test (jobs), kubelet_pods_test (pods against a kubelet).
#include "collectors/inventory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/registry.h"
#include "config/config.h"
#include "core/metric_sink.h"
#include "tests/support/ci.h"

namespace fabric {
namespace {

// The over-cap gauge's value after one Apply, or -1 when not exported.
double Gauge(SeriesCap& cap, std::size_t limit, std::vector<int>& items) {
  MetricSink sink;
  cap.Apply(limit, items, sink);
  for (const auto& family : sink.Take()) {
    if (family.name == "fabric_test_over_cap") {
      return family.metric.at(0).gauge.value;
    }
  }
  return -1;
}

TEST(SeriesCapTest, KeepsTheFirstAndTheGaugeStaysOnceSeen) {
  SeriesCap cap("fabric_test_over_cap", "help");
  std::vector<int> items = {1, 2, 3};
  EXPECT_EQ(Gauge(cap, 3, items), -1);  // never over: no gauge
  EXPECT_EQ(items, (std::vector<int>{1, 2, 3}));
  items = {1, 2, 3, 4, 5};
  EXPECT_EQ(Gauge(cap, 2, items), 3);
  EXPECT_EQ(items, (std::vector<int>{1, 2}));
  items = {1};
  EXPECT_EQ(Gauge(cap, 2, items), 0);  // back under: kept, at 0
  items = {};
  EXPECT_EQ(Gauge(cap, 2, items), 0);
}

bool HasCollector(const std::string& name) {
  const auto names = CollectorNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Parses `body` under `collectors:`; the error, or "" when accepted.
std::string Error(const std::string& body) {
  std::string error;
  if (ParseConfig("collectors:\n" + body, AllCollectorKeys(), &error)) {
    return "";
  }
  return error;
}

TEST(InventorySettingsTest, JobsKeysNameKeyAndLine) {
  EXPECT_NE(Error("  jobs:\n    max_jobs: 4097\n")
                .find("collectors.jobs.max_jobs (line 3)"),
            std::string::npos);
  EXPECT_NE(Error("  jobs:\n    max_jobs: 0\n").find("in 1..4096"),
            std::string::npos)
      << Error("  jobs:\n    max_jobs: 0\n");
  EXPECT_NE(
      Error("  jobs:\n    proc_root: proc\n").find("must be an absolute path"),
      std::string::npos);
  std::string error;
  auto config =
      ParseConfig("collectors:\n  jobs:\n    max_jobs: 7\n    proc_root: /p\n",
                  AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->Collector("jobs").interval, std::chrono::seconds(30));
}

TEST(InventorySettingsTest, PodsKeysNameKeyAndLine) {
  // setup.sh installs gRPC: under CI a build without it is a failure.
  if (!HasCollector("pods")) MISSING_DEPENDENCY("built without gRPC");
  const std::string relative = Error("  pods:\n    socket: kubelet.sock\n");
  EXPECT_NE(relative.find("collectors.pods.socket (line 3)"), std::string::npos)
      << relative;
  EXPECT_NE(relative.find("must be an absolute path"), std::string::npos);
  EXPECT_NE(Error("  pods:\n    max_series: 0\n").find("in 1..65536"),
            std::string::npos);
  // The List's deadline must end before the collection's timeout.
  const std::string late =
      Error("  pods:\n    timeout: 1s\n    deadline: 2s\n");
  EXPECT_NE(late.find("collectors.pods.deadline (line 4)"), std::string::npos)
      << late;
  EXPECT_EQ(Error("  pods:\n    enabled: false\n    timeout: 1s\n"
                  "    deadline: 2s\n"),
            "");
  EXPECT_NE(Error("  pods:\n    shared: [a]\n").find("collectors.pods.shared"),
            std::string::npos);
  std::string error;
  auto config = ParseConfig(
      "collectors:\n  pods:\n    socket: /run/x.sock\n    max_series: 3\n"
      "    shared: {\"rdma/a\": [mlx5_0, mlx5_1]}\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->Collector("pods").interval, std::chrono::seconds(30));
}

}  // namespace
}  // namespace fabric
