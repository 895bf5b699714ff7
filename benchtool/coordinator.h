// The coordinator of one benchmark run (`fabricmon-bench run`): connects to
// every agent over the authenticated control channel, gives each its rank,
// relays the transports' endpoints, then for each size asks every agent to
// run warm-up and measured iterations and gathers their timings and fabric
// counters. The first failure (an agent's error, a control connection that
// closes or goes quiet) ends the run: every other agent is told to stop (its
// transport aborts, so it stops sending) and the error names the failing
// host.
//
// Thread-safety: RunBenchmark is a blocking call on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "auth/key_file.h"
#include "benchtool/fabric_guard.h"
#include "benchtool/patterns.h"
#include "benchtool/progress.h"

namespace fabric::bench {

struct RunOptions {
  Pattern pattern = Pattern::kAllreduceRing;
  int tp = 2;
  std::vector<std::string> hosts;  // agents, host:port, rank order
  std::vector<std::uint64_t> sizes;
  int iterations = 20;
  int warmup = 5;
  std::string transport = "tcp";
  Key key;
  // A bulk link making no progress this long fails (names the peer).
  std::chrono::milliseconds io_timeout{10000};
  // How long one size may take before its agents are considered stuck.
  std::chrono::milliseconds size_timeout{600000};
  // Called as each size starts and as it completes; may be null.
  std::function<void(const SizeProgress&)> progress;
  // When this descriptor becomes readable (a signal handler wrote to a
  // pipe), the run stops its agents and ends with "interrupted", keeping
  // the sizes completed so far; -1: none.
  int interrupt_fd = -1;
  // Run a host set whose rails differ in fabric class or fabric
  // (fabric_guard.h) instead of refusing it; the outcome keeps the warning.
  bool allow_mixed = false;
};

// One size: per measured iteration, the slowest rank's time (an operation
// ends when its last rank ends) and the fabric counters summed over hosts
// (only names some host reported).
struct SizeMeasurement {
  std::uint64_t size_bytes = 0;
  std::vector<double> seconds;
  std::vector<std::map<std::string, std::uint64_t>> counters;
};

struct RunOutcome {
  bool ok = false;
  std::string error;         // names the failing host
  std::string failed_host;   // host:port
  bool interrupted = false;  // by interrupt_fd; `sizes` holds those done
  std::vector<SizeMeasurement> sizes;
  // Each host's rails as its agent reported them (rank order), and the
  // guard's verdict on them (fabric_guard.h).
  std::vector<std::vector<RailSummary>> rails;
  HostSetCheck fabric;
};

RunOutcome RunBenchmark(const RunOptions& options);

// "8:1G:x2" (from:to, times 2), "1K:1M:+256K" (plus a step), or "8,64,1M";
// K/M/G are powers of 1024. Empty with `error` set when malformed.
std::vector<std::uint64_t> ParseSizes(const std::string& text,
                                      std::string* error);

}  // namespace fabric::bench
