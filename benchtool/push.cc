#include "benchtool/push.h"

#include <prometheus/family.h>
#include <prometheus/gateway.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace fabric::bench {

int PushResults(const std::string& gateway_url, const Results& r,
                std::string run, std::string* error) {
  if (run.empty()) run = r.label.empty() ? "default" : r.label;
  // http://host:port[/]
  std::string url = gateway_url;
  std::string scheme = "http://";
  if (url.rfind("http://", 0) == 0) {
    url = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    url = url.substr(8);
    scheme = "https://";
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  auto colon = url.rfind(':');
  if (url.empty() || colon == std::string::npos || colon + 1 == url.size() ||
      url.find('/') != std::string::npos) {
    *error = "--gateway '" + gateway_url + "' is not http://host:port";
    return -1;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  auto& busbw = prometheus::BuildGauge()
                    .Name("fabric_bench_busbw_bytes_per_second")
                    .Help("fabricmon-bench bus bandwidth (nccl-tests busbw).")
                    .Register(*registry);
  auto& algbw = prometheus::BuildGauge()
                    .Name("fabric_bench_algbw_bytes_per_second")
                    .Help("fabricmon-bench algorithm bandwidth (size/time).")
                    .Register(*registry);
  auto& time = prometheus::BuildGauge()
                   .Name("fabric_bench_time_seconds")
                   .Help("fabricmon-bench time per operation (median).")
                   .Register(*registry);
  for (const auto& row : r.results) {
    prometheus::Labels l = {
        {"pattern", r.pattern},
        {"size", std::to_string(row.size_bytes)},
        {"transport", r.transport},
        {"run", run},
        // The host set's class (fabric_guard.h), so
        // dashboards put classes side by side.
        {"class",
         r.info.fabric_class.empty() ? "unknown" : r.info.fabric_class}};
    busbw.Add(l).Set(row.busbw_bytes_per_second);
    algbw.Add(l).Set(row.algbw_bytes_per_second);
    time.Add(l).Set(row.time_seconds);
  }
  prometheus::Gateway gateway(scheme + url.substr(0, colon),
                              url.substr(colon + 1), "fabricmon_bench",
                              {{"run", run}, {"pattern", r.pattern}});
  gateway.RegisterCollectable(registry);
  int status = gateway.Push();
  if (status < 200 || status >= 300) {
    *error =
        "pushgateway " + gateway_url + " answered " + std::to_string(status);
    return status < 0 ? -1 : status;
  }
  return status;
}

}  // namespace fabric::bench
