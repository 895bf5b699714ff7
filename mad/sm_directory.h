// The SM LIDs the fabric collector's last discovery found (ports whose
// PortInfo CapabilityMask has IsSM), for the sm collector of the same
// process: with them it queries every SM, standbys included, and can say
// how many answered MASTER (fabric_sm_masters). Process-wide because the
// two collectors share nothing else; a candidate for CollectorEnv.
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
// Forget (tests; a fabric collector that is retired).
void ClearSmLids();

}  // namespace fabric::mad
