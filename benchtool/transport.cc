#include "benchtool/transport.h"

namespace fabric::bench {

std::string TransportError::Message() const {
  if (peer.empty()) return what;
  return "peer " + peer + " (rank " + std::to_string(rank) + "): " + what;
}

}  // namespace fabric::bench
