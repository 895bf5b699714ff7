// The table of collectors the daemon can run: one row (CollectorSpec) per
// collector, keyed by the name used in the config file
// (`collectors.<name>`). Adding a collector = one row in registry.cc; see
// docs/adding-a-collector.md.
//
// Thread-safety: the table is immutable; functions are safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"

namespace fabric {

// Every collector this build knows, in a stable order (the exposition and
// `--once` follow it).
const std::vector<CollectorSpec>& CollectorSpecs();

// Their config halves, in the same order: what ParseConfig and
// LoadConfigFile (config/config.h) take.
const std::vector<CollectorKeys>& AllCollectorKeys();

// Their names, in the same order.
std::vector<std::string> CollectorNames();

// A new instance of collector `name` with `config` (default: enabled, all
// devices, its default settings), or nullptr for an unknown name.
std::unique_ptr<Collector> MakeCollector(std::string_view name,
                                         const CollectorEnv& env,
                                         const CollectorConfig& config = {});

}  // namespace fabric
