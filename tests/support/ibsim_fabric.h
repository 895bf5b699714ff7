// A private InfiniBand fabric for tests and benches: a real `ibsim -s
// NETFILE` (ibsim-utils) with its console on a pipe, optional real `opensm`
// instances, and the real infiniband-diags tools, every libibumad client
// attached through LD_PRELOAD=libumad2sim.so. Each IbsimFabric owns its own
// IBSIM_SOCKNAME, temp dir and child processes; the destructor kills the
// children (by pid) and removes the temp dir.
//
// Quirks (see issue 11): umad2sim does not intercept directory reads of
// /sys, so clients find their CA through libibumad only; SIM_HOST picks the
// node a client attaches as; never SIGSTOP a client attached to ibsim (it
// wedges the simulator), so only SIGKILL is offered.
//
// Thread-safety: one thread per instance; instances are independent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/support/in_ci.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {

inline constexpr char kUmad2Sim[] =
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

// A 2-level fat tree in ibnetdiscover format: `switches` switches, a quarter
// of them (at least one) spines "spine<i>", the rest leaves "leaf<i>"; each
// leaf has one link to every spine; `hcas` one-port HCAs "hca<i>" spread
// round-robin over the leaves. With one switch it is a single switch
// "leaf0" with every HCA. The first node in the file is hca0.
std::string FatTreeNetfile(int switches, int hcas);

// A random connected fabric in ibnetdiscover format, the same for the same
// `seed`: `switches` switches "sw<i>" joined by a random spanning tree plus
// `extra_links` more switch-to-switch cables (no two between one pair), and
// `hcas` one-port HCAs "hca<i>" on random switches; hca0 comes first.
std::string RandomNetfile(unsigned seed, int switches, int hcas,
                          int extra_links);

// One cable an `ibtracert` route crosses: "leaf0"[3] -> "spine1"[1].
struct TracertHop {
  std::string from;
  int out = 0;
  std::string to;
  int in = 0;
};
// The hops of ibtracert's output (stdout), in order; names are the node
// descriptions it prints in quotes.
std::vector<TracertHop> ParseIbtracert(const std::string& out);

// Tools the harness needs that are not on PATH ("" when all are there).
std::string MissingIbTools();

struct ToolOutput {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr (ibwarn lines from umad2sim land here)
};

class IbsimFabric {
 public:
  struct OpenSmOptions {
    std::string sim_host;  // node the SM attaches as, e.g. "hca0"
    int priority = 0;
    // Seconds between OpenSM's light sweeps; 0 turns them off so that no
    // SM traffic moves the data counters a test reads.
    int sweep_interval = 10;
    // More opensm.conf lines (e.g. "perfmgr TRUE") and environment entries
    // ("LD_LIBRARY_PATH=...") for this instance.
    std::vector<std::string> config_lines = {};
    std::vector<std::string> env = {};
  };

  explicit IbsimFabric(std::string netfile);
  ~IbsimFabric();
  IbsimFabric(const IbsimFabric&) = delete;
  IbsimFabric& operator=(const IbsimFabric&) = delete;

  // Starts ibsim; false with *error when it does not come up.
  bool Start(std::string* error);

  // One console command; returns what ibsim printed in answer (up to its
  // next prompt), e.g. Console("Unlink \"leaf0\"[3]").
  std::string Console(const std::string& command);

  // Starts an opensm with its own config, log and cache dirs; returns its
  // index for KillOpenSm. Fast failover: sminfo_polling_timeout 1000,
  // polling_retry_number 2.
  int StartOpenSm(const OpenSmOptions& options);
  // SIGKILL (never SIGSTOP) and reap.
  void KillOpenSm(int index);
  // Waits until `sminfo` (attached as `sim_host`) reports a MASTER whose
  // GUID is `master_guid` (any master when 0). False after `timeout`.
  bool WaitForMaster(std::chrono::seconds timeout,
                     const std::string& sim_host = "",
                     std::uint64_t master_guid = 0);

  // Runs an infiniband-diags tool (or any libibumad program) attached as
  // `sim_host` under umad2sim; killed after 120 s.
  ToolOutput Run(const std::vector<std::string>& argv,
                 const std::string& sim_host = "") const;
  // Starts a long-running client (e.g. the fabricmon daemon) attached as
  // `sim_host`, stdout+stderr to `log`; stopped by StopClient or the
  // destructor. Returns its pid (-1 on failure).
  pid_t StartClient(const std::vector<std::string>& argv,
                    const std::string& sim_host, const std::string& log);
  // The same for a process that is not a client of the fabric: no
  // umad2sim in its environment (LD_PRELOAD removed).
  pid_t StartProcess(const std::vector<std::string>& argv,
                     const std::string& log);
  // SIGTERM, then SIGKILL after 10 s; reaps it.
  void StopClient(pid_t pid);

  // The environment a libibumad client of this fabric needs, as
  // "NAME=value" entries (LD_PRELOAD, IBSIM_SOCKNAME, SIM_HOST).
  std::vector<std::string> ClientEnv(const std::string& sim_host) const;
  // The same as a shell prefix: "env LD_PRELOAD=... IBSIM_SOCKNAME=... ".
  std::string ShellPrefix(const std::string& sim_host) const;

  const std::string& dir() const { return dir_; }
  const std::string& sockname() const { return sockname_; }

 private:
  std::string netfile_;
  TempDir tmp_{"fabricmon-ibsim"};  // removed after the destructor's kills
  std::string dir_ = tmp_.path();
  std::string sockname_;
  pid_t ibsim_ = -1;
  int console_in_ = -1;   // ibsim's stdin
  int console_out_ = -1;  // ibsim's stdout
  std::vector<pid_t> opensms_;
  std::vector<pid_t> clients_;
};

}  // namespace fabric::testing

// Starts `fabric` (an IbsimFabric) or ends the test: when the tools are
// missing, MISSING_DEPENDENCY (tests/support/ci.h: FAIL under CI=true,
// GTEST_SKIP elsewhere; a test using this macro includes ci.h, which this
// header does not, so that benches can use IbsimFabric without GoogleTest);
// FAIL when ibsim does not come up.
#define FABRIC_START_IBSIM(ibsim_fabric)                              \
  do {                                                                \
    const std::string missing_ = ::fabric::testing::MissingIbTools(); \
    if (!missing_.empty()) {                                          \
      MISSING_DEPENDENCY("not installed: " << missing_);              \
    }                                                                 \
    std::string start_error_;                                         \
    ASSERT_TRUE((ibsim_fabric).Start(&start_error_)) << start_error_; \
  } while (0)
