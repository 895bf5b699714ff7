// The table of collectors the daemon can run, keyed by the name used in the
// config file (`collectors.<name>`). Adding a collector = one line in
// registry.cc.
//
// Thread-safety: the table is immutable; functions are safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"

namespace fabric {

// Names of all collectors this build knows, in a stable order.
std::vector<std::string> CollectorNames();

// A new instance of collector `name`, or nullptr for an unknown name.
std::unique_ptr<Collector> MakeCollector(std::string_view name,
                                         const CollectorEnv& env);

}  // namespace fabric
