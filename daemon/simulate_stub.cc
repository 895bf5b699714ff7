// Placeholder until the simulator lands: --simulate reports it is missing.
// The simulator's daemon/simulate.cc replaces this file.
#include "daemon/simulate.h"

namespace fabric {

std::unique_ptr<Simulation> StartSimulation(const std::string&,
                                            std::string* error) {
  *error = "this build has no simulator";
  return nullptr;
}

}  // namespace fabric
