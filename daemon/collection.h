// One collection: build the enabled collectors from a Config, and run a
// collector once into a Snapshot (timing, success, skipped inputs). Used by
// both `--once` and the background Poller, so both export the same thing.
//
// Thread-safety: BuildCollectors is pure apart from the collectors it
// constructs; RunCollection runs on the calling thread and must not be
// called concurrently for the same collector instance.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "config/config.h"
#include "core/metric_sink.h"
#include "core/snapshot.h"

namespace fabric {

struct NamedCollector {
  std::string name;
  CollectorConfig config;
  std::shared_ptr<Collector> collector;
  // Lives and dies with `collector`: a rebuilt collector starts afresh.
  std::shared_ptr<SampleOrder> order = std::make_shared<SampleOrder>();
  // The collector's include/exclude applied to every sample
  // (core/counter_filter.h); null when it keeps everything. Like `order`,
  // used by one collection at a time.
  std::shared_ptr<CounterGate> gate;
  // The two snapshots RunCollection made last, so that it can recycle the
  // older one's storage once nothing else holds it (MetricSink::Recycle).
  struct Published {
    std::shared_ptr<Snapshot> last, before;
  };
  std::shared_ptr<Published> published = std::make_shared<Published>();
};

// The shared services of `config` for its collectors: `sysfs`, the ethtool
// source (`ethtool_dir`'s dumps, else the kernel's ioctl), the steady clock.
CollectorEnv MakeCollectorEnv(const Config& config,
                              std::shared_ptr<const Sysfs> sysfs);

// The enabled collectors of `config`, in registry order, reading through
// `sysfs`, limited to names `want` accepts when given.
std::vector<NamedCollector> BuildCollectors(
    const Config& config, std::shared_ptr<const Sysfs> sysfs,
    const std::function<bool(const std::string&)>& want = nullptr);

// True when collector `name` runs identically under `a` and `b` (enabled in
// both, the same generic and own settings, sysfs root and ethtool_dir), so
// a reload can keep it running with its state (e.g. congestion windows).
bool SameCollectorSettings(const Config& a, const Config& b,
                           const std::string& name);

// Runs `c` once. `last_success_seconds` is carried over from the previous
// snapshot (0 = never) and updated on success. Reuses the storage of the
// snapshot before the previous one when the store and every scrape have let
// go of it (the store holds the previous one until this one is published).
std::shared_ptr<Snapshot> RunCollection(const NamedCollector& c,
                                        double last_success_seconds);

// The snapshot published for a collection still running at its deadline:
// success 0, no samples, duration = the timeout.
std::shared_ptr<Snapshot> TimedOutSnapshot(const std::string& name,
                                           std::chrono::microseconds timeout,
                                           double last_success_seconds);

// Runs `c` once on a separate thread and waits at most its timeout. On
// overrun returns TimedOutSnapshot and sets *abandoned: the thread is left
// running (detached, keeping the collector alive) and the caller must end
// the process with std::_Exit rather than a normal exit. For --once.
std::shared_ptr<Snapshot> RunCollectionWithTimeout(const NamedCollector& c,
                                                   bool* abandoned);

// Unix time now, in seconds.
double UnixNow();

}  // namespace fabric
