// One in-process collection of the H100 tree (9 devices) by ib_port and
// hw_counters, with and without serialising the exposition text. Reads go to
// the page cache of the recorded tree, so this measures fabricmon's own CPU
// (walk, parse, sample building), not HCA firmware MADs.
//
// Run: <build>/bench/collect_bench
#include <benchmark/benchmark.h>

#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "core/metric_sink.h"
#include "sources/sysfs.h"

namespace fabric {
namespace {

CollectorEnv H100() {
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(FABRICMON_SOURCE_DIR
                            "/tests/fixtures/real/sysfs-gpud-h100");
  return env;
}

// One poll as the daemon runs it: the collector's SampleOrder persists
// across polls, as it does next to a daemon's collector.
template <auto Make>
void BM_Collect(benchmark::State& state) {
  auto collector = Make(H100(), CollectorConfig{});
  SampleOrder order;
  for (auto _ : state) {
    MetricSink sink;
    benchmark::DoNotOptimize(collector->Collect(sink));
    benchmark::DoNotOptimize(sink.Take(&order));
  }
}
BENCHMARK(BM_Collect<MakeIbPortCollector>)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Collect<MakeHwCountersCollector>)->Unit(benchmark::kMicrosecond);

void BM_BothToText(benchmark::State& state) {
  auto ib = MakeIbPortCollector(H100(), CollectorConfig{});
  auto hw = MakeHwCountersCollector(H100(), CollectorConfig{});
  SampleOrder order;
  std::size_t series = 0;
  for (auto _ : state) {
    MetricSink sink;
    ib->Collect(sink);
    hw->Collect(sink);
    auto families = sink.Take(&order);
    series = 0;
    for (const auto& f : families) series += f.metric.size();
    benchmark::DoNotOptimize(ToText(families));
  }
  state.counters["series"] = static_cast<double>(series);
}
BENCHMARK(BM_BothToText)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fabric

BENCHMARK_MAIN();
