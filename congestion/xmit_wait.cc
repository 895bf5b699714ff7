#include "congestion/xmit_wait.h"

namespace fabric::congestion {

WaitTick WaitTickFor(std::uint16_t device_id, double fallback_seconds) {
  using Unit = WaitTick::Unit;
  switch (device_id) {
    case 54000:
      return {Unit::kBytesPerPort, 8, "Quantum", true};
    case 54002:
      return {Unit::kBytesPerPort, 8, "Quantum-2", true};
    case 54004:
      return {Unit::kBytesPerPort, 8, "Quantum-3", true};
    case 52000:
      return {Unit::kBytesPerLane, 32, "Switch-IB", true};
    case 53000:
      return {Unit::kBytesPerLane, 32, "Switch-IB 2", true};
    default:
      return {Unit::kSeconds, fallback_seconds, "unknown", false};
  }
}

double WaitSeconds(double ticks, const WaitTick& tick, int lanes,
                   double rate_bytes_per_second) {
  if (ticks < 0) return -1;
  switch (tick.unit) {
    case WaitTick::Unit::kSeconds:
      return ticks * tick.value;
    case WaitTick::Unit::kBytesPerPort:
      if (rate_bytes_per_second <= 0) return -1;
      return ticks * tick.value / rate_bytes_per_second;
    case WaitTick::Unit::kBytesPerLane:
      if (rate_bytes_per_second <= 0 || lanes <= 0) return -1;
      return ticks * tick.value * lanes / rate_bytes_per_second;
  }
  return -1;
}

}  // namespace fabric::congestion
