// What the jobs and pods collectors share. Both export an inventory of what
// runs on the node (a Slurm job, a pod's RDMA device) as one info series
// each, every 30 s, bounded by a cap key; past the cap the first series in
// the collector's own order are kept and an `_over_cap` gauge counts the
// rest. SeriesCap does the cutting and the gauge; InventorySpec builds
// their registry row from a reader of one key at a time; PathKey and
// CapKey read the keys both have.
//
// Header only: the pods collector is a library of its own (built only with
// gRPC, collectors/CMakeLists.txt) that fabric_collectors links, not the
// other way round.
//
// Thread-safety: a SeriesCap belongs to one collector and follows
// Collector (one Collect() at a time); the rest are pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/collector.h"
#include "config/yaml_keys.h"

namespace fabric {

class SeriesCap {
 public:
  // `gauge`: the `_over_cap` family's name; `help`: its help text.
  SeriesCap(std::string gauge, std::string help)
      : gauge_(std::move(gauge)), help_(std::move(help)) {}

  // Keeps the first `cap` of `items` (sorted by what should be kept) and
  // exports the gauge: how many were left out. The gauge appears with the
  // first collection that leaves any out and stays, at 0 once back under
  // the cap: an alert or panel reading it sees "none left out", not a
  // series that vanished.
  template <typename T>
  void Apply(std::size_t cap, std::vector<T>& items, MetricSink& sink) {
    std::size_t over = 0;
    if (items.size() > cap) {
      over = items.size() - cap;
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(cap),
                  items.end());
    }
    if (over == 0 && !seen_) return;
    seen_ = true;
    sink.Gauge(gauge_, help_, {}, static_cast<double>(over));
  }

 private:
  std::string gauge_, help_;
  bool seen_ = false;  // the gauge has been exported
};

// One of the collector's own keys, as config/yaml_keys.h's ForEachKey
// hands it over: its name, value, key path and line (for Fail).
struct SettingKey {
  const std::string& name;
  const YAML::Node& value;
  const std::string& path;
  const YAML::Mark& mark;
};
// Reads one key into the collector's settings `S` (failing with Fail).
template <typename S>
using ReadKey = std::function<void(S& settings, const SettingKey& key)>;
// Checks the settings once all keys are read: across keys, or against the
// generic ones (`generic`); `node` and `path` as CollectorKeys::parse.
template <typename S>
using CheckSettings = std::function<void(
    const S& settings, const YAML::Node& node, const std::string& path,
    const CollectorConfig& generic)>;

// The registry row of inventory collector `C` (built from the
// CollectorEnv and its settings `S`), named `name`: polled every 30 s
// (what runs on a node changes in minutes, not seconds), its own `keys`
// read by `read` into `S` (its defaults for keys not written), then
// `check` (may be null).
template <typename C, typename S>
CollectorSpec InventorySpec(std::string name, std::vector<std::string> keys,
                            ReadKey<S> read, CheckSettings<S> check = nullptr) {
  CollectorSpec spec;
  spec.name = std::move(name);
  spec.interval = std::chrono::seconds(30);
  spec.keys = std::move(keys);
  spec.parse = [read = std::move(read), check = std::move(check)](
                   const YAML::Node& node, const std::string& path,
                   const CollectorConfig& generic)
      -> std::shared_ptr<const CollectorSettings> {
    S settings;
    config_keys::ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark& mark) {
          read(settings, SettingKey{key, value, key_path, mark});
        });
    if (check) check(settings, node, path, generic);
    return std::make_shared<SettingsOf<S>>(std::move(settings));
  };
  spec.make = [](const CollectorEnv& env,
                 const CollectorConfig& config) -> std::unique_ptr<Collector> {
    return std::make_unique<C>(env, SettingsAs<S>(config));
  };
  return spec;
}

// An absolute path (a socket, the /proc root); anything else fails.
inline std::string PathKey(const SettingKey& key) {
  std::string path = config_keys::Scalar(key.value, key.path);
  if (path.empty() || path[0] != '/') {
    config_keys::Fail(key.path, key.mark, "must be an absolute path");
  }
  return path;
}

// A cap key: a number of `what` ("jobs", "series") in 1..`max`.
inline int CapKey(const SettingKey& key, int max, std::string_view what) {
  return static_cast<int>(config_keys::Integer(
      key.value, key.path, 1, max,
      "a number of " + std::string(what) + " in 1.." + std::to_string(max)));
}

}  // namespace fabric
