// The config half of a collector: its effective settings (CollectorConfig,
// with the collector's own part behind CollectorSettings) and what the
// config parser needs to know of it (CollectorKeys: name, defaults of the
// generic keys, its own keys and their parser). config/ reaches every
// collector's settings through these, without including collectors/;
// collectors/collector.h adds the Collector interface and the factory
// (CollectorSpec = CollectorKeys + make).
//
// Thread-safety: plain values; CollectorSettings are immutable once parsed
// and shared between reloads by shared_ptr<const>.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/counter_filter.h"
#include "core/device_filter.h"

namespace YAML {
class Node;
}

namespace fabric {

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
  // `include`/`exclude`: the series it exports (the series budget); empty =
  // all. Only for collectors with CollectorKeys::series.
  CounterFilter series;
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

// Floors of the generic duration keys (config/config.cc).
inline constexpr std::chrono::microseconds kMinInterval =
    std::chrono::milliseconds(10);
inline constexpr std::chrono::microseconds kMinTimeout =
    std::chrono::milliseconds(1);

// The default `interval` of the collectors that poll raw counters
// (ib_port, hw_counters, roce). Prometheus reads them every 15-30 s; 1 s
// polls bought no link-state change a scrape did not see anyway (the
// link_downed counter catches every flap) and a fresher value at scrape of
// ~0.5 s instead of ~2.5 s, for five times the reads (each a firmware query
// on a real HCA). 5 s divides the usual scrape intervals (10, 15, 20, 30,
// 60 s), so consecutive scrapes see values read the same time apart: a
// 10 s poll under a 15 s scrape alternates ages and makes rate() over short
// windows jump by a third. The sub-second peaks are the congestion
// collector's (100 ms). Measured: docs/measurements.md "Poll interval".
inline constexpr std::chrono::microseconds kCounterPollInterval =
    std::chrono::seconds(5);

// What the config parser knows of one collector.
struct CollectorKeys {
  std::string name;
  // Defaults of the generic keys.
  bool enabled = true;
  std::chrono::microseconds interval = std::chrono::seconds(1);
  std::chrono::microseconds timeout = std::chrono::seconds(5);
  // The shortest `interval` accepted: below it a collector only burns CPU
  // (`interval: 1us` ran at 174% of a core). Probes, whose interval is
  // their send rate, go lower.
  std::chrono::microseconds min_interval = kMinInterval;
  // The metric families it can export and the counter names (`counter`/
  // `error` label values) it knows: non-empty = it takes `include` and
  // `exclude` (core/counter_filter.h), and a pattern matching none of these
  // is a config warning (a typo, or a counter of a driver it has not seen).
  std::vector<std::string> series;
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
};

}  // namespace fabric
