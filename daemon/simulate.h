// The seam between the daemon and the built-in fabric simulator, used by
// `fabricmon --simulate[=SCENARIO]`: the simulator renders one simulated
// host's live sysfs tree (and its RoCE netdev's ethtool dumps) into a
// private directory and keeps it moving; the daemon then reads it through
// its normal sysfs path and its file-backed ethtool source.
//
// Thread-safety: a Simulation runs its own thread; the handle itself is used
// by one thread (the daemon's main).
#pragma once

#include <memory>
#include <string>

namespace fabric {

class Simulation {
 public:
  virtual ~Simulation() = default;  // stops the simulator, removes its files
  // Root to pass as --sysfs.root (contains class/infiniband, class/net).
  virtual std::string sysfs_root() const = 0;
  // Directory of the simulated netdevs' `ethtool -S` dumps (config
  // `ethtool_dir`): <sysfs_root>/ethtool.
  virtual std::string ethtool_dir() const = 0;
};

// Starts scenario `scenario` ("steady" when empty). Returns nullptr and sets
// *error when the scenario is unknown or the simulator is not built.
std::unique_ptr<Simulation> StartSimulation(const std::string& scenario,
                                            std::string* error);

}  // namespace fabric
