// Runs N in-process collections of a sysfs tree by ib_port + hw_counters
// (the poll path of the daemon: Collect + MetricSink::Take) and, with
// --text, also serialises the exposition each time. With --congestion it
// runs the congestion collector's fast polls instead (default options), on a
// clock that advances 100 ms per collection so its windows fill as in the
// daemon (600 intervals per port at the default 60 s window: run 1000 to
// see the steady state). Made for callgrind, whose instruction counts are
// stable on a shared machine where wall/CPU timings are not:
//
//   valgrind --tool=callgrind <build>/bench/collect_profile 10
//   -> divide the Ir of fabric::(anonymous)::Run by N
//   (--congestion: compare two N, e.g. 1000 and 2000, to get the steady
//   state per collection without the first 600's filling windows)
//
// With --congestion --sample it runs the congestion collector as the
// daemon does: Sample() at the ticks between two publishes and Collect()
// (+ Take) every 10th tick (the default 100 ms interval, 1 s publish), so
// the Ir per collection is the daemon's average per 100 ms tick.
//
// With --pause MS it sleeps MS milliseconds between collections, as the
// daemon's poll interval does, and reports the thread CPU time per
// collection: caches go cold between polls, which a tight loop hides.
//
// --sysfs-mode reads the tree as the reader reads real sysfs (kept
// descriptors, one stat() per directory per collection), to count a real
// host's syscalls on a recorded tree (strace -c).
//
// Usage: collect_profile [N] [--text] [--congestion [--sample]] [--pause MS]
//                        [--sysfs-mode] [TREE]
//   (TREE defaults to the H100 tree)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "collectors/congestion.h"
#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "core/metric_sink.h"
#include "sources/sysfs.h"

namespace fabric {
namespace {

// `spare`: the families of the collection before, recycled as the daemon
// recycles a snapshot no scrape holds any more (daemon/collection.cc).
std::size_t Run(Collector& ib, Collector* hw, SampleOrder& order, bool text,
                bool sample, std::vector<prometheus::MetricFamily>& spare) {
  if (sample) {
    ib.Sample();
    return 0;
  }
  MetricSink sink;
  sink.Recycle(std::move(spare));
  ib.Collect(sink);
  if (hw) hw->Collect(sink);
  auto families = sink.Take(&order);
  std::size_t n = 0;
  for (const auto& f : families) n += f.metric.size();
  if (text) n += ToText(families).size();
  spare = std::move(families);
  return n;
}

int Main(int argc, char** argv) {
  int runs = 10;
  bool text = false;
  bool congestion = false;
  bool sample = false;
  SysfsCacheMode mode = SysfsCacheMode::kAuto;
  int pause_ms = 0;
  std::string tree =
      FABRICMON_SOURCE_DIR "/tests/fixtures/real/sysfs-gpud-h100";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--text") {
      text = true;
    } else if (arg == "--congestion") {
      congestion = true;
    } else if (arg == "--sample") {
      sample = true;
    } else if (arg == "--sysfs-mode") {
      mode = SysfsCacheMode::kSysfs;
    } else if (arg == "--pause" && i + 1 < argc) {
      pause_ms = std::atoi(argv[++i]);
    } else if (!arg.empty() && arg[0] >= '0' && arg[0] <= '9') {
      runs = std::atoi(arg.c_str());
    } else {
      tree = arg;
    }
  }
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(tree, mode);
  double fake_now = 1000.0;  // --congestion's clock, seconds
  auto ib = congestion ? std::make_unique<CongestionCollector>(
                             env, CongestionOptions{}, [&] { return fake_now; })
                       : MakeIbPortCollector(env, CollectorConfig{});
  auto hw =
      congestion ? nullptr : MakeHwCountersCollector(env, CollectorConfig{});
  SampleOrder order;  // kept across runs, as next to a daemon's collector
  std::vector<prometheus::MetricFamily> spare;
  std::size_t check = 0;
  auto thread_us = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
  };
  double cpu_us = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    if (pause_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    const double before = thread_us();
    check += Run(*ib, hw.get(), order, text,
                 congestion && sample && (i + 1) % 10 != 0, spare);
    fake_now += 0.1;
    cpu_us += thread_us() - before;
  }
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  std::printf(
      "%d collections, %.1f us each (wall, pauses included), "
      "%.1f us CPU each, checksum %zu\n",
      runs, us / runs, cpu_us / runs, check);
  return 0;
}

}  // namespace
}  // namespace fabric

int main(int argc, char** argv) { return fabric::Main(argc, argv); }
