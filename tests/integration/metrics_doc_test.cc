// docs/metrics.md against what `fabricmon --once` emits on the fixture trees:
// every emitted family is documented (in a table row "| `name` |"), and every
// metric documented under "## ib_port" and "## hw_counters" is emitted on at
// least one fixture tree.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/metric_names.h"
#include "tests/integration/fabricmon_run.h"

namespace fabric {
namespace {

// Family names from "# TYPE <name> <type>" lines.
std::set<std::string> EmittedFamilies() {
  std::set<std::string> names;
  for (const auto& tree : testing::FixtureTrees()) {
    auto run = testing::RunOnce(tree);
    EXPECT_EQ(run.exit_code, 0) << tree;
    std::istringstream in(run.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# TYPE ", 0) != 0) continue;
      std::string rest = line.substr(7);
      names.insert(rest.substr(0, rest.find(' ')));
    }
  }
  return names;
}

// section -> metric names in its table rows (core/metric_names.h).
std::map<std::string, std::set<std::string>> DocumentedBySection() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& m : DocumentedMetrics()) {
    out[std::string(m.section)].emplace(m.name);
  }
  return out;
}

TEST(MetricsDocTest, EveryEmittedMetricIsDocumented) {
  auto emitted = EmittedFamilies();
  ASSERT_FALSE(emitted.empty());
  std::set<std::string> documented;
  for (const auto& [section, names] : DocumentedBySection()) {
    documented.insert(names.begin(), names.end());
  }
  for (const auto& name : emitted) {
    EXPECT_TRUE(documented.count(name))
        << name << " is emitted but not in a docs/metrics.md table";
  }
}

TEST(MetricsDocTest, IbPortAndHwCountersDocsAreEmitted) {
  auto emitted = EmittedFamilies();
  auto documented = DocumentedBySection();
  for (const char* section : {"ib_port", "hw_counters"}) {
    ASSERT_FALSE(documented[section].empty())
        << "no table under ## " << section;
    for (const auto& name : documented[section]) {
      EXPECT_TRUE(emitted.count(name))
          << name << " is documented under ## " << section
          << " but not emitted on any fixture tree";
    }
  }
  EXPECT_GE(documented["ib_port"].size(), 20u);
  EXPECT_GE(documented["hw_counters"].size(), 11u);
}

}  // namespace
}  // namespace fabric
