#include "core/metric_sink.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace fabric {
namespace {

TEST(MetricSinkTest, SortsFamiliesAndSamples) {
  MetricSink sink;
  sink.Gauge("fabric_b", "b", {{"port", "2"}, {"device", "x"}}, 1);
  sink.Gauge("fabric_b", "b", {{"device", "x"}, {"port", "1"}}, 2);
  sink.Counter("fabric_a_total", "a", {}, 3);
  auto families = sink.Take();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "fabric_a_total");
  EXPECT_EQ(families[1].metric[0].label[1].value, "1");
  EXPECT_EQ(families[1].metric[1].gauge.value, 1);
  EXPECT_EQ(ToText(families),
            "# HELP fabric_a_total a\n# TYPE fabric_a_total counter\n"
            "fabric_a_total 3\n# HELP fabric_b b\n# TYPE fabric_b gauge\n"
            "fabric_b{device=\"x\",port=\"1\"} 2\n"
            "fabric_b{device=\"x\",port=\"2\"} 1\n");
}

TEST(MetricSinkTest, TypeConflictIsSkippedNotEmitted) {
  MetricSink sink;
  sink.Gauge("fabric_x", "x", {}, 1);
  sink.Counter("fabric_x", "x", {{"a", "b"}}, 1);
  EXPECT_EQ(sink.skipped(), 1u);
  EXPECT_EQ(sink.Take()[0].metric.size(), 1u);
}

TEST(MetricSinkTest, SortLeavesSortedInputAlone) {
  // The sorted-input shortcut must give what a full sort gives.
  MetricSink sink;
  for (int i = 9; i >= 0; --i) {
    sink.Gauge("fabric_z", "z", {{"port", std::to_string(i)}, {"device", "d"}},
               i);
    sink.Gauge("fabric_y", "y",
               {{"device", "d"}, {"port", std::to_string(9 - i)}}, i);
  }
  auto families = sink.Take();
  ASSERT_EQ(families.size(), 2u);
  for (const auto& family : families) {
    for (std::size_t i = 0; i < family.metric.size(); ++i) {
      EXPECT_EQ(family.metric[i].label[0].name, "device");
      EXPECT_EQ(family.metric[i].label[1].value, std::to_string(i));
    }
  }
}

// ToText is a hand-written copy of prometheus-cpp's TextSerializer (whose
// output the golden files pin); it must agree with it byte for byte on
// anything a collector can produce, odd doubles and label values included.
TEST(MetricSinkTest, ToTextMatchesPrometheusCppSerializer) {
  std::mt19937_64 rng(42);
  auto random_double = [&]() -> double {
    switch (rng() % 8) {
      case 0: {
        std::uint64_t bits = rng();
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        return d;  // any bit pattern: NaN, Inf, subnormal, huge
      }
      case 1:
        return static_cast<double>(rng() >> (rng() % 64));  // counters
      case 2:
        return -static_cast<double>(rng() % 100000);
      case 3:
        return static_cast<double>(rng() % 1000000) / 1000.0;
      case 4:
        return std::ldexp(static_cast<double>(rng() % 1000),
                          -(int)(rng() % 40));
      case 5: {
        const double special[] = {0.0,
                                  -0.0,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::nan(""),
                                  9007199254740992.0,
                                  9007199254740993.0,
                                  1e16,
                                  18446744073709551615.0,
                                  0.1,
                                  1e-300};
        return special[rng() % std::size(special)];
      }
      default:
        return static_cast<double>(rng() % 5000);
    }
  };
  auto random_text = [&](bool allow_special) {
    const std::string chars = allow_special ? "ab_\\\"\n{}= ,x9" : "abc_xyz09";
    std::string s;
    const std::size_t n = rng() % 12;
    for (std::size_t i = 0; i < n; ++i) s += chars[rng() % chars.size()];
    return s;
  };
  const prometheus::MetricType types[] = {
      prometheus::MetricType::Counter, prometheus::MetricType::Gauge,
      prometheus::MetricType::Summary, prometheus::MetricType::Untyped,
      prometheus::MetricType::Histogram};
  for (int round = 0; round < 300; ++round) {
    std::vector<prometheus::MetricFamily> families(1 + rng() % 4);
    for (auto& family : families) {
      family.name = "fabric_" + random_text(false);
      family.help = rng() % 4 == 0 ? "" : random_text(true);
      family.type = types[rng() % std::size(types)];
      family.metric.resize(rng() % 4);
      for (auto& m : family.metric) {
        const std::size_t labels = rng() % 4;
        for (std::size_t i = 0; i < labels; ++i) {
          m.label.push_back({"l" + random_text(false), random_text(true)});
        }
        m.counter.value = random_double();
        m.gauge.value = random_double();
        m.untyped.value = random_double();
        m.timestamp_ms = rng() % 3 == 0 ? static_cast<std::int64_t>(rng()) : 0;
        m.summary.sample_count = rng();
        m.summary.sample_sum = random_double();
        for (std::size_t i = rng() % 3; i > 0; --i) {
          m.summary.quantile.push_back({random_double(), random_double()});
        }
        m.histogram.sample_count = rng();
        m.histogram.sample_sum = random_double();
        for (std::size_t i = rng() % 4; i > 0; --i) {
          m.histogram.bucket.push_back({rng(), random_double()});
        }
      }
    }
    std::ostringstream want;
    prometheus::TextSerializer().Serialize(want, families);
    ASSERT_EQ(ToText(families), want.str()) << "round " << round;
  }
}

}  // namespace
}  // namespace fabric
