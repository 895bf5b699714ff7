// The SM LIDs the fabric collector's last discovery found (ports whose
// PortInfo CapabilityMask has IsSM), for the sm collector of the same
// process: with them it queries every SM, standbys included, and can say
// how many answered MASTER (fabric_sm_masters).
//
// Process-wide on purpose, not in CollectorEnv: the daemon builds a new env
// at every (re)start of pollers, and a SIGHUP that changes only one of the
// two collectors keeps the other instance with the env it was made with, so
// an env-held directory would split (the kept sm collector would never see
// the new fabric collector's SM LIDs). It can move into CollectorEnv once
// the daemon keeps the env's shared services across reloads (the umad
// transport factory's per-env port sharing needs the same).
//
// Thread-safety: all functions are safe from any thread (one mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace fabric::mad {

void PublishSmLids(std::vector<std::uint16_t> lids);
// nullopt until a discovery published (no fabric collector here).
std::optional<std::vector<std::uint16_t>> DiscoveredSmLids();
// Forget what was published (tests). A fabric collector that is retired
// does not call it: its last list stays until another discovery replaces
// it.
void ClearSmLids();

}  // namespace fabric::mad
