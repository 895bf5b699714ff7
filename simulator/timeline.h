// Scenarios and the timeline that schedules them.
//
// A timeline is a list of events; each event switches one named scenario on
// from `start` for `duration` (0 = until the end), optionally only in bursts
// (`burst_length` every `burst_period`, e.g. 300 ms every 10 s). Events
// compose: several can be active at once. It comes from `--scenario` (one
// event from t=0) or from a small YAML file (see docs/simulator.md).
//
// Thread-safety: value types; pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::sim {

using Duration = std::chrono::nanoseconds;

enum class Scenario {
  kSteady,
  kCongestionHotspot,
  kPfcStorm,
  kLinkFlap,
  kSymbolErrors,
  kLinkDegraded,
  kCounterSaturation,
  kDeviceRemoved,
  kSmFailover,
  kSmHung,
  kProbeLoss,
  kDyingCable,
  kRoceCcOff,
  // Congestion trees (issue 42; docs/simulator.md): traffic routed by the
  // forwarding tables into one egress port that cannot drain it.
  kSlowReceiver,
  kOversubscribedUplink,
  kUnbalancedLinks,
};

// All scenario names, in the order of the enum.
const std::vector<std::string>& ScenarioNames();
std::optional<Scenario> ParseScenario(std::string_view name);
std::string_view ScenarioName(Scenario s);

// "100ms", "1.5s", "2m", "250us", "0". Bare numbers are seconds.
std::optional<Duration> ParseDuration(std::string_view text);

struct Event {
  Scenario scenario = Scenario::kSteady;
  Duration start{0};
  Duration duration{0};      // 0 = open-ended
  Duration burst_length{0};  // 0 = continuously on while the event lasts
  Duration burst_period{0};
  // Optional target override for fault scenarios: host index and device
  // name; empty/negative = the scenario's documented default.
  int host = -1;
  std::string device;

  // True when the event is on at time t; *local is the time since the
  // start of the current on-phase (start of the event, or of the burst).
  bool ActiveAt(Duration t, Duration* local = nullptr) const;
};

// All-reduce traffic: every port offers `load` × line rate for the first
// `duty_cycle` of each `period` (a burst), nothing in between. `size_bytes`,
// when set, overrides `load`: bytes each port sends per burst.
struct Traffic {
  Duration period = std::chrono::seconds(1);
  double duty_cycle = 0.5;
  double load = 0.8;
  double size_bytes = 0;
};

// A Slurm job on simulated hosts (YAML `slurm: jobs:`; simulator/slurm.h
// renders it as slurmd lays a job out). Running from `start` for
// `duration` (0 = until the end), then gone.
struct SimJob {
  std::string id;    // "4711": digits, as Slurm's job IDs
  std::string name;  // SLURM_JOB_NAME
  std::string user;  // SLURM_JOB_USER
  std::uint32_t uid = 1000;
  std::vector<int> hosts;  // host indexes; those past the cluster ignored
  Duration start{0};
  Duration duration{0};
  bool RunningAt(Duration t) const {
    return t >= start && (duration.count() == 0 || t - start < duration);
  }
};

struct Timeline {
  std::vector<Event> events;
  // Slurm (YAML `slurm:`): the jobs it declares, when it has the section
  // (else the default jobs, simulator/slurm.h), and the cgroup layout
  // slurmd uses (`cgroup: v2`, the default, or `v1`).
  bool slurm_declared = false;
  std::vector<SimJob> jobs;
  bool cgroup_v1 = false;
  Traffic traffic;
  // Parallel cables from every IB leaf to the spine (YAML `fabric:
  // uplinks: N`, 1..4): the unbalanced-links scenario needs two.
  int uplinks = 1;
  // The IB switches' ASIC (YAML `fabric: switch_asic:`): "quantum-2"
  // (NodeInfo DeviceID 54002; PortXmitWait in 8-byte ticks, so the 32-bit
  // PortCounters field saturates within a second of waiting) or "generic"
  // (DeviceID 0xb924, an ASIC fabricmon's tick table does not know: the
  // assumed 256 ns tick, as on ibsim). The sweep reads the 64-bit
  // PortCountersExtended PortXmitWait, so the shipped scenarios play
  // Quantum-2 switches (scenarios/congestion-*.yaml, the demo tour).
  bool quantum_switches = true;
};

inline constexpr int kMaxUplinks = 4;

// One event of `scenario` from t=0, open-ended.
Timeline SingleScenario(Scenario scenario);

// Parses the YAML timeline (see docs/simulator.md). On error returns nullopt
// and sets *error naming the key and line.
std::optional<Timeline> ParseTimeline(std::string_view yaml,
                                      std::string* error);

}  // namespace fabric::sim
