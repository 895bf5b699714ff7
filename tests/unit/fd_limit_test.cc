// daemon/fd_limit: the soft descriptor limit raised to the hard one (or
// kept, logged, when that is refused), and the descriptor gauges served
// with the other families, all through injected OS entry points.
#include "daemon/fd_limit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <map>

namespace fabric {
namespace {

struct FakeOs {
  rlimit limit{1024, 4096};
  int set_error = 0;
  int sets = 0;
  FdOs Os() {
    FdOs os;
    os.get_limit = [this](rlimit* out) {
      *out = limit;
      return 0;
    };
    os.set_limit = [this](const rlimit& next) {
      ++sets;
      if (set_error != 0) return set_error;
      limit = next;
      return 0;
    };
    os.count_open = [] { return std::optional<std::size_t>(42); };
    return os;
  }
};

TEST(FdLimitTest, RaisesTheSoftLimitToTheHardOne) {
  FakeOs fake;
  EXPECT_EQ(RaiseFdLimit(fake.Os()), 4096u);
  EXPECT_EQ(fake.limit.rlim_cur, 4096u);
  EXPECT_EQ(fake.limit.rlim_max, 4096u);
  // Already there: nothing to set.
  EXPECT_EQ(RaiseFdLimit(fake.Os()), 4096u);
  EXPECT_EQ(fake.sets, 1);
}

TEST(FdLimitTest, KeepsTheLimitWhenRaisingIsRefused) {
  FakeOs fake;
  fake.set_error = EPERM;  // SystemCallFilter=~@resources
  EXPECT_EQ(RaiseFdLimit(fake.Os()), 1024u);
  EXPECT_EQ(fake.limit.rlim_cur, 1024u);
}

TEST(FdLimitTest, BudgetLeavesTheReserve) {
  EXPECT_EQ(FdBudgetFor(1024), 768u);
  EXPECT_EQ(FdBudgetFor(65536), 65536u - 256);
  EXPECT_EQ(FdBudgetFor(256), 0u);
  EXPECT_EQ(FdBudgetFor(64), 0u);
  FdBudget budget(2);
  EXPECT_TRUE(budget.TryTake());
  EXPECT_TRUE(budget.TryTake());
  EXPECT_FALSE(budget.TryTake());
  budget.Give();
  EXPECT_EQ(budget.used(), 1u);
  budget.Resize(1);
  EXPECT_FALSE(budget.TryTake());
}

class OneFamily : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f;
    f.name = "fabric_build_info";
    return {f};
  }
};

TEST(FdLimitTest, MetricsServeTheGaugesAfterTheOtherFamilies) {
  FakeOs fake;
  auto budget = std::make_shared<FdBudget>(768);
  ASSERT_TRUE(budget->TryTake());
  FdMetrics metrics(fake.Os(), budget, std::make_shared<OneFamily>());
  std::map<std::string, double> got;
  const auto families = metrics.Collect();
  ASSERT_FALSE(families.empty());
  EXPECT_EQ(families.front().name, "fabric_build_info");
  for (const auto& f : families) {
    if (f.name == "fabric_build_info") continue;
    ASSERT_EQ(f.metric.size(), 1u) << f.name;
    EXPECT_EQ(f.type, prometheus::MetricType::Gauge);
    got[f.name] = f.metric[0].gauge.value;
  }
  EXPECT_EQ(got, (std::map<std::string, double>{
                     {"fabric_daemon_open_fds", 42},
                     {"fabric_daemon_max_fds", 1024},
                     {"fabric_daemon_kept_fds", 1},
                     {"fabric_daemon_kept_fds_budget", 768}}));
}

TEST(FdLimitTest, RealCountSeesANewDescriptor) {
  const FdOs os = RealFdOs();
  const auto before = os.count_open();
  ASSERT_TRUE(before);
  const int fd = ::dup(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(os.count_open(), *before + 1);
  ::close(fd);
}

}  // namespace
}  // namespace fabric
