// `collectors.probe.trace_interval` (issue 29 item 4): the default (5 m),
// 0 for off, a duration, and bad values rejected naming the key.
#include <gtest/gtest.h>

#include "collectors/probe.h"
#include "collectors/registry.h"
#include "config/config.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

std::optional<std::chrono::microseconds> TraceInterval(const std::string& v,
                                                       std::string* error) {
  const std::string yaml =
      v.empty() ? "" : "collectors:\n  probe:\n    trace_interval: " + v + "\n";
  auto config = ParseConfig(yaml, AllCollectorKeys(), error);
  if (!config) return std::nullopt;
  return SettingsAs<ProbeSettings>(config->Collector("probe")).trace_interval;
}

TEST(ProbeTraceConfig, DefaultZeroAndDurations) {
  std::string error;
  EXPECT_EQ(TraceInterval("", &error), std::chrono::microseconds(5min));
  EXPECT_EQ(TraceInterval("0s", &error), std::chrono::microseconds(0));
  EXPECT_EQ(TraceInterval("0", &error), std::chrono::microseconds(0));
  EXPECT_EQ(TraceInterval("30s", &error), std::chrono::microseconds(30s));
  for (const char* bad : {"soon", "-1s", "[1]"}) {
    error.clear();
    EXPECT_FALSE(TraceInterval(bad, &error)) << bad;
    EXPECT_NE(error.find("collectors.probe.trace_interval"), std::string::npos)
        << bad << ": " << error;
  }
}

}  // namespace
}  // namespace fabric
