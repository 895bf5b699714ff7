// Scenario names, durations, YAML timelines and event timing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "simulator/timeline.h"
#include "tests/support/paths.h"

namespace fabric::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(SimTimeline, ParsesDurations) {
  EXPECT_EQ(ParseDuration("100ms"), milliseconds(100));
  EXPECT_EQ(ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(ParseDuration("2"), seconds(2));
  EXPECT_EQ(ParseDuration("2m"), seconds(120));
  EXPECT_EQ(ParseDuration("250us"), std::chrono::microseconds(250));
  EXPECT_EQ(ParseDuration("0"), Duration(0));
  EXPECT_FALSE(ParseDuration(""));
  EXPECT_FALSE(ParseDuration("ms"));
  EXPECT_FALSE(ParseDuration("10 parsecs"));
  EXPECT_FALSE(ParseDuration("-1s"));
  EXPECT_FALSE(ParseDuration("1e400s"));
}

TEST(SimTimeline, KnowsEveryScenarioName) {
  for (const auto& name : ScenarioNames()) {
    const auto s = ParseScenario(name);
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(ScenarioName(*s), name);
  }
  EXPECT_EQ(ScenarioNames().size(), 16u);
  EXPECT_FALSE(ParseScenario("meltdown"));
}

TEST(SimTimeline, EventWindow) {
  Event e;
  e.start = seconds(2);
  e.duration = seconds(3);
  Duration local{0};
  EXPECT_FALSE(e.ActiveAt(milliseconds(1999)));
  EXPECT_TRUE(e.ActiveAt(seconds(2), &local));
  EXPECT_EQ(local, Duration(0));
  EXPECT_TRUE(e.ActiveAt(milliseconds(4999), &local));
  EXPECT_EQ(local, milliseconds(2999));
  EXPECT_FALSE(e.ActiveAt(seconds(5)));
  e.duration = Duration(0);  // open-ended
  EXPECT_TRUE(e.ActiveAt(seconds(1000)));
}

TEST(SimTimeline, BurstsRepeat) {
  Event e;  // 300 ms every 10 s, from t = 1 s
  e.start = seconds(1);
  e.burst_length = milliseconds(300);
  e.burst_period = seconds(10);
  Duration local{0};
  EXPECT_TRUE(e.ActiveAt(seconds(1)));
  EXPECT_TRUE(e.ActiveAt(milliseconds(1299)));
  EXPECT_FALSE(e.ActiveAt(milliseconds(1300)));
  EXPECT_FALSE(e.ActiveAt(seconds(10)));
  EXPECT_TRUE(e.ActiveAt(milliseconds(11100), &local));
  EXPECT_EQ(local, milliseconds(100));
}

TEST(SimTimeline, ParsesYaml) {
  std::string error;
  const auto t = ParseTimeline(R"(
traffic:
  period: 500ms
  duty_cycle: 0.25
  load: 0.5
events:
  - scenario: steady
  - scenario: congestion-hotspot
    start: 10s
    duration: 30s
    burst_length: 300ms
    burst_period: 10s
  - scenario: link-flap
    start: 1m
    host: 2
    device: mlx5_7
)",
                               &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->traffic.period, milliseconds(500));
  EXPECT_DOUBLE_EQ(t->traffic.duty_cycle, 0.25);
  EXPECT_DOUBLE_EQ(t->traffic.load, 0.5);
  ASSERT_EQ(t->events.size(), 3u);
  EXPECT_EQ(t->events[1].scenario, Scenario::kCongestionHotspot);
  EXPECT_EQ(t->events[1].start, seconds(10));
  EXPECT_EQ(t->events[1].duration, seconds(30));
  EXPECT_EQ(t->events[1].burst_length, milliseconds(300));
  EXPECT_EQ(t->events[2].start, seconds(60));
  EXPECT_EQ(t->events[2].host, 2);
  EXPECT_EQ(t->events[2].device, "mlx5_7");
}

TEST(SimTimeline, YamlErrorsNameKeyAndLine) {
  std::string error;
  EXPECT_FALSE(ParseTimeline("events:\n  - scenario: nope\n", &error));
  EXPECT_NE(error.find("unknown scenario 'nope'"), std::string::npos);
  EXPECT_NE(error.find("line 2"), std::string::npos);
  EXPECT_FALSE(ParseTimeline("events:\n  - scenario: steady\n    start: soon\n",
                             &error));
  EXPECT_NE(error.find("'start'"), std::string::npos);
  EXPECT_NE(error.find("line 3"), std::string::npos);
  EXPECT_FALSE(ParseTimeline("events: [", &error));
  EXPECT_FALSE(ParseTimeline("just text", &error));
  EXPECT_FALSE(ParseTimeline("traffic: {load: 2}\nevents: []\n", &error));
  EXPECT_FALSE(ParseTimeline(
      "events:\n  - scenario: steady\n    burst_length: 1s\n", &error));
  EXPECT_NE(error.find("burst_period"), std::string::npos);
}

TEST(SimTimeline, ShippedScenarioFilesParse) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(
           fabric::testing::SourceDir() + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string error;
    const auto t = ParseTimeline(text.str(), &error);
    EXPECT_TRUE(t) << e.path() << ": " << error;
    if (t) {
      EXPECT_FALSE(t->events.empty()) << e.path();
    }
    ++files;
  }
  EXPECT_GE(files, 3);
}

}  // namespace
}  // namespace fabric::sim
