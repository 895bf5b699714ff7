// BrokerMetrics: the daemon's view of its MAD brokers
// (sources/mad/broker_client.h ProcessCounters) as metric families,
// fabric_mad_broker_*; nothing when no broker is in use (in_process, a
// recorded tree, --simulate). Appended to `also`'s families, as FdMetrics
// does.
//
// Thread-safety: Collect() may run on any thread (atomics only).
#pragma once

#include <prometheus/collectable.h>

#include <memory>
#include <vector>

namespace fabric {

class BrokerMetrics final : public prometheus::Collectable {
 public:
  explicit BrokerMetrics(std::shared_ptr<prometheus::Collectable> also)
      : also_(std::move(also)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::shared_ptr<prometheus::Collectable> also_;
};

}  // namespace fabric
