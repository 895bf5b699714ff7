// Collector: the tiny interface every collector implements, and the row
// (CollectorSpec) through which the registry and the daemon know it; the
// row's config half (CollectorKeys: name, defaults, keys, parse) is
// config/collector_config.h, which the config parser sees. One collector per
// file pair (collectors/<name>.{h,cc}); its parsing lives in pure functions
// (<name>_parse.{h,cc}) that are tested on strings. docs/adding-a-collector.md
// is the recipe.
//
// Contract: Collect() never writes to the fabric or resets a counter. An
// exception it throws is caught once, by the daemon's runner
// (daemon/collection.cc: the collection fails, the reason is a skipped
// input), so collectors carry no try/catch of their own. It writes whatever it
// could read into the sink, counts what it had to skip with MetricSink::Skip,
// and returns false only when the source as a whole failed (e.g.
// /sys/class/infiniband unreadable for a reason other than "absent"). A missing
// subsystem is success with no samples.
//
// Lifecycle (daemon; `--once` calls only Collect):
//   Start(io)   once, on the daemon's io_context thread, before the first
//               Collect(). A collector that listens on a socket or keeps a
//               schedule of its own (pushed events, a probe responder) opens
//               it here and runs its handlers on `io`; they must not block.
//               A source that cannot be opened is reported by Collect()
//               (false), which may retry opening it.
//   Collect()   every `interval`, on the collector's own thread. For a
//               polled source it reads and emits; for an event-driven one it
//               emits what accumulated and returns whether its source is
//               healthy (socket bound, responder running), so
//               fabric_collector_success and
//               fabric_collector_last_success_timestamp_seconds say "the
//               source works", and a quiet event source does not look stale.
//   Sample()    instead of Collect() at the ticks between two publishes,
//               for a collector whose PublishInterval() is longer than its
//               interval: it takes its reading without emitting. (The
//               congestion collector samples every 100 ms to find peaks but
//               publishes them every second: building and publishing a
//               snapshot costs more than the sample.)
//   Stop()      once, on the io_context thread, when the collector is
//               retired (reload with changed settings, shutdown). Close
//               sockets and cancel handlers; Collect() may still be running
//               on its thread (a read stuck in the kernel) and may be called
//               no more after it returns.
// A reload that leaves a collector's settings unchanged keeps the instance
// (and its state); any change builds a new one.
//
// Thread-safety: one Collect() at a time per instance. Start/Stop and
// handlers on `io` run on the io_context thread, concurrently with Collect():
// state they share is the collector's to guard. Different instances may run
// concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/collector_config.h"
#include "core/metric_sink.h"
#include "sources/sysfs.h"
#include "sources/text_file.h"

namespace boost::asio {
class io_context;
}

namespace fabric {

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  virtual void Start(boost::asio::io_context& /*io*/) {}
  virtual void Stop() {}
  virtual bool Collect(MetricSink& sink) = 0;
  virtual void Sample() {}
  // Zero: every tick publishes (Collect).
  virtual std::chrono::microseconds PublishInterval() const { return {}; }
  // False when Sample() does nothing (an event-driven collector whose
  // `interval` paces its own schedule, e.g. probes every 1 ms; congestion
  // while every counter is quiet): the poller then wakes only to publish,
  // every PublishInterval(). Asked on the collector's thread after each
  // Collect() or Sample(), so it may change between ticks.
  virtual bool Samples() const { return true; }
};

class EthtoolSource;
class MadTransport;
namespace mad {
struct LocalPort;  // sources/mad/umad_transport.h
}

// Monotonic seconds. Injected in tests.
using MonotonicClock = std::function<double()>;
double SteadySeconds();

// Shared services a collector may use, all injectable; nothing in here
// belongs to one collector.
struct CollectorEnv {
  // The sysfs tree (`sysfs_root`); each collector makes its own
  // SysfsReader from it.
  std::shared_ptr<const Sysfs> sysfs;
  // A new ethtool statistics source (sources keep per-netdev caches, so
  // each collector owns one). Null = no ethtool statistics.
  std::function<std::unique_ptr<EthtoolSource>()> ethtool;
  // True when `ethtool` asks the running kernel (the ioctl); false when it
  // reads dumps that belong to the tree (config `ethtool_dir`), so the
  // kernel-side checks and DCB state do not apply.
  bool ethtool_is_kernel = true;
  // A MAD transport on local HCA `ca`, port `port` (empty/0 = the first
  // active IB port). Null in builds without rdma-core.
  std::function<std::unique_ptr<MadTransport>(const std::string& ca, int port)>
      mad;
  // The local IB ports the MAD collectors choose from
  // (sources/mad/live_ports.h's LocalPortLister). Null = libibumad's list
  // (mad::LocalIbPorts);
  // `--simulate` sets both this and `mad` to the simulated host's.
  std::function<std::vector<mad::LocalPort>(std::string* error)> local_ports;
  MonotonicClock clock = SteadySeconds;
  // The text files a collector's settings name (node-name maps, peers
  // files).
  TextFileReader read_text_file = ReadTextFile;
};

// One registry row: the collector's config half (name, defaults, keys,
// parse: config/collector_config.h) and how to build it.
struct CollectorSpec : CollectorKeys {
  std::function<std::unique_ptr<Collector>(const CollectorEnv&,
                                           const CollectorConfig&)>
      make;
};

}  // namespace fabric
