#include "core/metric_sink.h"

#include <gtest/gtest.h>

#include <random>

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

// SortFamilies sorts samples by flat keys, or by the order a SampleOrder
// remembers; it must give exactly what a stable sort by label vector gives:
// prefixes of names and values, label sets of different lengths, equal label
// sets (their order kept), a NUL inside a value (which takes the fallback),
// and a remembered order that no longer fits (a value changed, the samples
// were emitted in another order).
TEST(MetricSinkTest, SampleSortMatchesStableSortByLabels) {
  std::mt19937_64 rng(7);
  auto text = [&](bool nul) {
    const std::string chars = nul ? std::string("ab\0", 3) : "ab";
    std::string s;
    for (std::size_t i = rng() % 4; i > 0; --i)
      s += chars[rng() % 3 % chars.size()];
    return s;
  };
  for (int round = 0; round < 500; ++round) {
    const bool nul = round % 5 == 0;
    std::vector<prometheus::ClientMetric> metrics(rng() % 40);
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      for (std::size_t n = rng() % 3; n > 0; --n) {
        metrics[i].label.push_back({text(false), text(nul)});
      }
      std::sort(metrics[i].label.begin(), metrics[i].label.end());
      metrics[i].gauge.value = static_cast<double>(i);  // identifies it
    }
    // The same samples again (the remembered order fits), then with one
    // value changed or the emission order reversed (it may not).
    std::vector<std::vector<prometheus::ClientMetric>> inputs = {metrics,
                                                                 metrics};
    auto changed = metrics;
    if (!changed.empty() && !changed[0].label.empty()) {
      changed[0].label[0].value = text(nul);
      std::sort(changed[0].label.begin(), changed[0].label.end());
    }
    inputs.push_back(changed);
    inputs.emplace_back(metrics.rbegin(), metrics.rend());
    SampleOrder order;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      auto want = inputs[k];
      std::stable_sort(
          want.begin(), want.end(),
          [](const auto& a, const auto& b) { return a.label < b.label; });
      std::vector<prometheus::MetricFamily> families(1);
      families[0].name = "fabric_x";
      families[0].metric = inputs[k];
      SortFamilies(families, k == 0 ? nullptr : &order);
      ASSERT_EQ(families[0].metric.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(families[0].metric[i].gauge.value, want[i].gauge.value)
            << "round " << round << " input " << k << " position " << i;
      }
    }
  }
}

TEST(MetricSinkTest, SampleOrderIsRememberedPerFamily) {
  auto emit = [](MetricSink& sink) {
    for (const char* device : {"b", "a"}) {
      sink.Gauge("fabric_x", "x", {{"device", device}}, 1);
      sink.Gauge("fabric_y", "y", {{"device", device}, {"port", "1"}}, 1);
    }
  };
  SampleOrder order;
  MetricSink first;
  emit(first);
  first.Take(&order);
  ASSERT_NE(order.Find("fabric_x"), nullptr);
  EXPECT_EQ(*order.Find("fabric_x"), (std::vector<std::uint32_t>{1, 0}));
  EXPECT_EQ(order.Find("fabric_z"), nullptr);
  MetricSink second;
  emit(second);
  auto families = second.Take(&order);
  EXPECT_EQ(families[1].metric[0].label[0].value, "a");
}

// A sink given the previous collection's families (the daemon recycles a
// snapshot nobody reads any more) exposes exactly what a fresh sink does,
// whatever changed between the two: samples added or gone, label sets and
// counts, a family's type, histograms.
TEST(MetricSinkTest, RecycledStorageGivesTheSameExposition) {
  auto emit = [](MetricSink& sink, int round) {
    const int ports = 1 + round % 3;
    for (int p = 0; p < ports; ++p) {
      const std::string port = std::to_string(p);
      sink.Counter("fabric_c_total", "c",
                   LabelRefs{{"device", "mlx5_0"}, {"port", port}}, round + p);
      if ((round + p) % 2 == 0) {
        sink.Gauge("fabric_g", "g",
                   Labels{{"port", port}, {"device", "d"}, {"x", "y"}}, p);
      } else {
        sink.Gauge("fabric_g", "g", LabelRefs{{"port", port}}, -p);
      }
    }
    if (round % 2 == 0) {
      prometheus::ClientMetric::Histogram h;
      h.sample_count = 3;
      h.sample_sum = 1.5;
      h.bucket = {{1, 0.5}, {3, 1.0}};
      sink.Histogram("fabric_h", "h", {{"a", "b"}}, h);
    } else {
      sink.Counter("fabric_h", "h as a counter", {{"a", "b"}}, 7);
    }
  };
  MetricSink fresh_sink;
  std::vector<prometheus::MetricFamily> spare;
  SampleOrder order;
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE(round);
    MetricSink fresh, recycled;
    recycled.Recycle(std::move(spare));
    emit(fresh, round);
    emit(recycled, round);
    const auto want = fresh.Take();
    auto got = recycled.Take(&order);
    EXPECT_EQ(ToText(got), ToText(want));
    spare = std::move(got);
  }
}

}  // namespace
}  // namespace fabric
