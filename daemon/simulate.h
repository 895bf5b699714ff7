// The seam between the daemon and the built-in fabric simulator, used by
// `fabricmon --simulate[=SCENARIO]`: the simulator renders one simulated
// host's live sysfs tree (and its RoCE netdev's ethtool dumps) into a
// private directory and keeps it moving; the daemon then reads it through
// its normal sysfs path and its file-backed ethtool source. The MAD
// collectors (sm, fabric) get the simulated fabric's MAD view instead of
// libibumad (UseSimulatedMad): the simulated host's IB ports, and MADs
// answered by the model (simulator/mad.h), so the SM and switch-port
// scenarios show in their metrics.
//
// `fabricmon --sim.mad-socket PATH` is the same seam for a daemon reading
// a tree that a separate fabricmon-sim renders (scripts/demo.sh): the model
// lives in that process, so the MADs go to the socket it answers on
// (simulator/mad_socket.h) and the local ports are those of the daemon's
// own tree (AttachSimulatedMad).
//
// Thread-safety: a Simulation runs its own thread; the handle itself is used
// by one thread (the daemon's main). UseSimulatedMad may be called from any
// thread; the transports it hands out lock the simulation per MAD.
#pragma once

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "config/config.h"

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

// --simulate: the jobs collector reads the simulated host's Slurm tasks
// (simulator/slurm.h) below its tree, <config->sysfs_root>/proc, unless the
// config names a proc_root of its own. The collector's code is unchanged:
// only its setting, as --simulate sets sysfs_root and ethtool_dir.
void PointJobsAtSimulation(Config* config);

// While a Simulation runs: sets env->mad and env->local_ports to its MAD
// view and returns true; false (env untouched) otherwise, or in a build
// without the MAD collectors. Process-wide on purpose, like
// mad/sm_directory.h: the daemon builds a new env at every (re)start of its
// pollers, and `--simulate` owns the fabric for the life of the process.
// A transport must not outlive the Simulation (the daemon's collectors end
// before main destroys it).
bool UseSimulatedMad(CollectorEnv* env);

// From now on, while no Simulation runs, UseSimulatedMad hands out the MAD
// view fabricmon-sim serves at `socket_path`: env->mad sends to it, leaving
// by the chosen port of env->sysfs's tree (which must be one of that
// fabricmon-sim's host trees), and env->local_ports lists that tree's IB
// ports (lid, sm_lid, state, GUIDs as the simulator renders them). Set once
// at start (main), process-wide like a Simulation.
void AttachSimulatedMad(const std::string& socket_path);

}  // namespace fabric
