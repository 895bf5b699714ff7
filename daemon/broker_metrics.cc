#include "daemon/broker_metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <string>

#if FABRICMON_WITH_RDMA
#include "sources/mad/broker_client.h"
#endif

namespace fabric {
namespace {

prometheus::MetricFamily Counter(const char* name, const char* help) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Counter;
  return family;
}

void Add(prometheus::MetricFamily* family, double value,
         std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  family->metric.push_back(std::move(metric));
}

}  // namespace

std::vector<prometheus::MetricFamily> BrokerMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out =
      also_ ? also_->Collect() : std::vector<prometheus::MetricFamily>();
#if FABRICMON_WITH_RDMA
  namespace broker = mad::broker;
  const broker::Counters& c = broker::ProcessCounters();
  if (!c.used) return out;
  auto refused = Counter(
      "fabric_mad_broker_refused_total",
      "Requests of this daemon the MAD broker refused and did not send, by "
      "reason (the broker's journal has every refusal).");
  for (std::size_t i = 1; i < c.refused.size(); ++i) {
    Add(&refused, static_cast<double>(c.refused[i].load()),
        {{"reason",
          std::string(broker::RefusalName(static_cast<broker::Refusal>(i)))}});
  }
  out.push_back(std::move(refused));
  auto failures = Counter("fabric_mad_broker_connect_failures_total",
                          "Times the daemon could not reach (spawn or "
                          "connect to) its MAD broker.");
  Add(&failures, static_cast<double>(c.connect_failures.load()));
  out.push_back(std::move(failures));
  auto lost = Counter("fabric_mad_broker_connections_lost_total",
                      "Broker connections that broke (the broker exited or "
                      "stopped reading); the next collection connects again.");
  Add(&lost, static_cast<double>(c.connections_lost.load()));
  out.push_back(std::move(lost));
#endif
  return out;
}

}  // namespace fabric
