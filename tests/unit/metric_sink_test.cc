#include "core/metric_sink.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fabric
