// The daemon's descriptor limit: the soft RLIMIT_NOFILE raised to the hard
// one at start, the sysfs readers' FdBudget (core/fd_budget.h) sized from
// it, and the descriptors in use exported at each scrape:
// fabric_daemon_open_fds, fabric_daemon_max_fds, fabric_daemon_kept_fds and
// fabric_daemon_kept_fds_budget (docs/metrics.md).
//
// Thread-safety: RaiseFdLimit from the main thread at start; FdMetrics is
// immutable and its Collect() safe from any thread.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <sys/resource.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "core/fd_budget.h"

namespace fabric {

// The OS entry points, injectable for tests.
struct FdOs {
  // getrlimit/setrlimit(RLIMIT_NOFILE): 0 or the errno.
  std::function<int(rlimit*)> get_limit;
  std::function<int(const rlimit&)> set_limit;
  // Descriptors open in this process (/proc/self/fd), nullopt if unknown.
  std::function<std::optional<std::size_t>()> count_open;
};

FdOs RealFdOs();

// Raises the soft limit to the hard one and returns the soft limit then in
// effect. A refusal (EPERM under the unit's SystemCallFilter=~@resources,
// which is why the unit sets LimitNOFILE= itself) keeps the old limit; both
// outcomes are logged.
std::size_t RaiseFdLimit(const FdOs& os);

// Serves the descriptor gauges, followed by `also`'s families: the daemon
// hands its /metrics server this one collectable, so that every listener
// (also one a reload moves) serves both.
class FdMetrics final : public prometheus::Collectable {
 public:
  FdMetrics(FdOs os, std::shared_ptr<const FdBudget> budget,
            std::shared_ptr<prometheus::Collectable> also);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  FdOs os_;
  std::shared_ptr<const FdBudget> budget_;
  std::shared_ptr<prometheus::Collectable> also_;
};

}  // namespace fabric
