// PortXmitWait ticks -> time a port could not send (issue 42 item 1).
//
// The IBA defines PortXmitWait as the ticks in which the port had data to
// send but sent nothing for the whole tick; the tick is a multiple of the
// symbol time (PortSamplesControl.Tick + 1). NVIDIA's ibdiagnet manual
// ("Congestion Assessment on InfiniBand Links", v2.13.0) gives how each
// switch ASIC counts it, as bytes the port could have sent:
//   Quantum, Quantum-2, Quantum-3: one tick per 8 bytes of the port
//     (Tick = 7): lost bytes = ticks x 8, whatever the width;
//   Switch-IB, Switch-IB 2 (and SwitchX): one tick per 32 bytes per lane
//     (Tick = 31): lost bytes = ticks x 32 x lanes.
// Lost bytes / the port's data rate = seconds it could not send. Device IDs
// (NodeInfo DeviceID) are mstflint's (dev_mgt/tools_dev_types.c): Quantum
// 54000, Quantum-2 54002, Quantum-3 54004, Switch-IB 52000, Switch-IB 2
// 53000. Any other device (ConnectX HCAs included: the manual lists no HCA)
// counts in a fixed time tick, the configured assumption (256 ns default,
// collectors.congestion.xmit_wait_tick_ns); see docs/congestion.md.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace fabric::congestion {

struct WaitTick {
  enum class Unit { kBytesPerPort, kBytesPerLane, kSeconds };
  Unit unit = Unit::kSeconds;
  double value = 256e-9;  // bytes (per port / per lane) or seconds
  const char* asic = "unknown";
  bool known = false;  // false: the assumed fixed tick
};

// The tick of a NodeInfo DeviceID; unknown ones get `fallback_seconds`.
WaitTick WaitTickFor(std::uint16_t device_id, double fallback_seconds);

// Seconds the port could not send over `ticks`. A byte-counting tick needs
// the port's data rate (bytes/s) and lanes; without them (0) it returns -1
// (unknown), never a guess.
double WaitSeconds(double ticks, const WaitTick& tick, int lanes,
                   double rate_bytes_per_second);

}  // namespace fabric::congestion
