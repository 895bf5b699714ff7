// The fabricmon config a test gives a daemon that reads one of
// fabricmon-sim's host trees (alerts_e2e_test, vm_stack.h): the side files
// the simulator writes beside the tree (ethtool and DCB dumps, module
// EEPROM images), and the polls the scenarios' faults are timed for.
// Thread-safety: a pure function.
#pragma once

#include <filesystem>
#include <string>

namespace fabric::testing {

// YAML text ending inside the `collectors:` mapping, so a test may append
// more collectors at two spaces' indent. Counters every 1 s (the default is
// 5 s): the scenarios' faults and the tests' 1 s scrapes are timed for it.
// The simulated Slurm jobs (simulator/slurm.h): their tasks' /proc files
// below the tree, every 1 s (the default is 30 s), so a job that ends in a
// scenario is gone within a scrape or two.
inline std::string SimHostConfig(const std::filesystem::path& root) {
  return "ethtool_dir: " + (root / "ethtool").string() +
         "\ncollectors:\n"
         "  congestion:\n    interval: 200ms\n"
         "  ib_port:\n    interval: 1s\n"
         "  hw_counters:\n    interval: 1s\n"
         "  roce:\n    interval: 1s\n    dcb_dir: " +
         (root / "dcb").string() +
         "\n  transceiver:\n    interval: 1s\n    eeprom_dir: " +
         (root / "eeprom").string() +
         "\n  jobs:\n    interval: 1s\n    proc_root: " +
         (root / "proc").string() + "\n";
}

}  // namespace fabric::testing
