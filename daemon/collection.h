// One collection: build the enabled collectors from a Config, and run a
// collector once into a Snapshot (timing, success, skipped inputs). Used by
// both `--once` and the background Poller, so both export the same thing.
//
// Thread-safety: BuildCollectors is pure apart from the collectors it
// constructs; RunCollection runs on the calling thread and must not be
// called concurrently for the same collector instance.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "config/config.h"
#include "core/snapshot.h"

namespace fabric {

struct NamedCollector {
  std::string name;
  CollectorConfig config;
  std::shared_ptr<Collector> collector;
};

// The enabled collectors of `config`, in registry order, reading through
// `sysfs`. Names the registry cannot build are skipped with a warning.
std::vector<NamedCollector> BuildCollectors(const Config& config,
                                            std::shared_ptr<const Sysfs> sysfs);

// Runs `collector` once. `last_success_seconds` is carried over from the
// previous snapshot (0 = never) and updated on success.
std::shared_ptr<Snapshot> RunCollection(const std::string& name,
                                        Collector& collector,
                                        double last_success_seconds);

// Unix time now, in seconds.
double UnixNow();

}  // namespace fabric
