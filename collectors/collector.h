// Collector: the tiny interface every data source implements, and the row
// (CollectorSpec) through which the registry, the config parser and the
// daemon know it. One collector per file pair (collectors/<name>.{h,cc});
// its parsing lives in pure functions (<name>_parse.{h,cc}) that are tested
// on strings. docs/adding-a-collector.md is the recipe.
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
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_sink.h"
#include "core/sysfs.h"

namespace boost::asio {
class io_context;
}
namespace YAML {
class Node;
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
  // `interval` paces its own schedule, e.g. probes every 1 ms): the poller
  // then wakes only to publish, every PublishInterval().
  virtual bool Samples() const { return true; }
};

// Which RDMA devices a collector looks at. Empty include = all devices.
// Entries are exact device names or ECMAScript regexes anchored at both ends,
// compiled once when the filter is made (config validation has rejected bad
// ones; a bad one here matches its literal name only).
class DeviceFilter {
 public:
  DeviceFilter() = default;
  DeviceFilter(std::vector<std::string> include,
               std::vector<std::string> exclude);
  bool Allows(std::string_view device) const;
  const std::vector<std::string>& include() const { return include_; }
  const std::vector<std::string>& exclude() const { return exclude_; }
  bool operator==(const DeviceFilter& o) const {
    return include_ == o.include_ && exclude_ == o.exclude_;
  }

 private:
  struct Pattern {
    std::string text;
    std::optional<std::regex> re;
  };
  static std::vector<Pattern> Compile(const std::vector<std::string>& p);
  static bool Matches(const std::vector<Pattern>& patterns,
                      std::string_view device);
  std::vector<std::string> include_, exclude_;
  std::vector<Pattern> include_re_, exclude_re_;
};

// A collector's own settings (the keys under `collectors.<name>` besides the
// generic ones). Opaque to config/ and daemon/: they only compare them, to
// tell whether a reload changed the collector. Collectors derive from
// SettingsOf<T> with a plain struct T and read it back with SettingsAs<T>.
class CollectorSettings {
 public:
  virtual ~CollectorSettings() = default;
  virtual bool Equals(const CollectorSettings& other) const = 0;
};

template <typename T>
class SettingsOf final : public CollectorSettings {
 public:
  explicit SettingsOf(T v) : value(std::move(v)) {}
  bool Equals(const CollectorSettings& other) const override {
    auto* o = dynamic_cast<const SettingsOf*>(&other);
    return o && o->value == value;
  }
  T value;
};

// The effective settings of one collector: the generic keys, which mean the
// same for every collector (docs/configuration.md), and its own.
struct CollectorConfig {
  bool enabled = true;
  // How often a collection runs.
  std::chrono::microseconds interval = std::chrono::seconds(1);
  // The deadline of one collection. A collector needing another timeout
  // (per MAD, per probe) gives it a name of its own.
  std::chrono::microseconds timeout = std::chrono::seconds(5);
  // The global `devices` lists, each replaced by the collector's
  // `devices.include`/`.exclude` when written.
  DeviceFilter devices;
  // Null = the collector's defaults.
  std::shared_ptr<const CollectorSettings> settings;

  bool operator==(const CollectorConfig& o) const;
};

// The collector's own settings of type T, or T's defaults when none.
template <typename T>
const T& SettingsAs(const CollectorConfig& config) {
  static const T defaults{};
  auto* s = dynamic_cast<const SettingsOf<T>*>(config.settings.get());
  return s ? s->value : defaults;
}

class EthtoolSource;
class MadTransport;
namespace mad {
struct LocalPort;  // mad/umad_transport.h
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
  // The local IB ports the MAD collectors choose from (mad/live_ports.h's
  // LocalPortLister). Null = libibumad's list (mad::LocalIbPorts);
  // `--simulate` sets both this and `mad` to the simulated host's.
  std::function<std::vector<mad::LocalPort>(std::string* error)> local_ports;
  MonotonicClock clock = SteadySeconds;
};

// One registry row: what the config parser and the daemon know of a
// collector.
// Floors of the generic duration keys (config/config.cc).
inline constexpr std::chrono::microseconds kMinInterval =
    std::chrono::milliseconds(10);
inline constexpr std::chrono::microseconds kMinTimeout =
    std::chrono::milliseconds(1);

struct CollectorSpec {
  std::string name;
  // Defaults of the generic keys.
  bool enabled = true;
  std::chrono::microseconds interval = std::chrono::seconds(1);
  std::chrono::microseconds timeout = std::chrono::seconds(5);
  // The shortest `interval` accepted: below it a collector only burns CPU
  // (`interval: 1us` ran at 174% of a core). Probes, whose interval is
  // their send rate, go lower.
  std::chrono::microseconds min_interval = kMinInterval;
  // The collector's own keys, accepted under `collectors.<name>`.
  std::vector<std::string> keys;
  // Reads the collector's own keys from its mapping `node` (null when the
  // file does not mention the collector; then the defaults) at key path
  // `path` ("collectors.<name>"), given the effective generic settings for
  // cross-checks. Fails with config/yaml_keys.h's Fail (key and line). Null
  // when `keys` is empty.
  std::function<std::shared_ptr<const CollectorSettings>(
      const YAML::Node& node, const std::string& path,
      const CollectorConfig& generic)>
      parse;
  std::function<std::unique_ptr<Collector>(const CollectorEnv&,
                                           const CollectorConfig&)>
      make;
};

}  // namespace fabric
