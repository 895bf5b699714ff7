// The duplicate-series check every exposition-reading test applies
// (tests/support/exposition.h): the same name and label set twice is found
// whatever the label order; different values of one label, or a label that
// only differs by an escaped quote, are different series.
#include <gtest/gtest.h>

#include "tests/support/exposition.h"

namespace fabric::testing {
namespace {

TEST(ExpositionCheck, FindsASeriesWrittenTwice) {
  const std::string text =
      "# HELP a_total x\n"
      "# TYPE a_total counter\n"
      "a_total 1\n"
      "a_total 2\n"
      "b{x=\"1\",y=\"2\"} 1\n"
      "b{y=\"2\",x=\"1\"} 1\n"
      "b{x=\"1\",y=\"3\"} 1\n";
  EXPECT_EQ(DuplicateSeries(text),
            (std::vector<std::string>{"a_total{}", "b{x=\"1\",y=\"2\"}"}));
}

TEST(ExpositionCheck, DistinctSeriesPass) {
  const std::string text =
      "c{node=\"a \\\"q\\\" b\"} 1\n"
      "c{node=\"a \\\"q\\\"\"} 1\n"
      "c{node=\"a,b\"} 1\n"
      "c 1\n"
      "d_bucket{le=\"+Inf\"} 3 1700000000000\n";
  EXPECT_TRUE(DuplicateSeries(text).empty());
  EXPECT_EQ(DuplicateSeries("e{x=\"1} 1\n"),
            (std::vector<std::string>{"unparsable: e{x=\"1} 1"}));
}

}  // namespace
}  // namespace fabric::testing
