// Side by side on one ibsim fabric (default a 2-level fat tree of 32
// switches and 384 HCAs, a real OpenSM as master): the whole-process wall
// time and CPU (user+sys, wait4) of
//   fabricmon --once with only the sm and fabric collectors enabled, its
//   MADs through the MAD broker (the default, `mad_broker: spawn`; the
//   broker's CPU is in the figure: the daemon waits for it), in process
//   (`mad_broker: in_process`), for the broker's cost, and with
//   `collectors.fabric.pesc: false`, for PESC's cost (issue 28: at most
//   1.3x the sweep without it; on ibsim, whose PMAs never answer 0x1F, that
//   is ClassPortInfo plus one unanswered probe per switch, every --once
//   run, since each run discovers afresh)
// against the peer reading the same two attribute sets,
//   ibqueryerrors --switch            (PortCounters of every switch port)
//   + ibqueryerrors --switch --counters
// each attached to ibsim as its own HCA under umad2sim. Runs alternate,
// RUNS rounds; prints medians and the ratios fabricmon / peer.
// Then the steady state the broker is about: a running daemon's own sweep
// duration (fabric_collector_duration_seconds{collector="fabric"}, three
// sweeps after the first, which includes discovery, per round; broker and
// in-process daemons take turns, RUNS rounds), and the CPU and context
// switches of the daemon and its brokers per sweep interval (/proc
// schedstat and status: less at the mercy of a loaded machine than wall
// time). The --once figures include starting the broker processes (under
// ibsim, each also sets up umad2sim), which a daemon pays once; one
// broker's start-up, OPEN and exit is measured on its own.
//
//   sweep_vs_ibqueryerrors FABRICMON [RUNS] [SWITCHES] [HCAS] [BEFORE]
//
// BEFORE: another fabricmon binary (its broker beside it), whose --once
// (defaults, and in process) runs in the same rounds, for a before/after.
//
// MADs by class and attribute (issue 44): when libmad_count.so
// (bench/mad_count.c, an LD_PRELOAD counter over umad_send) sits beside
// this binary, one more run of each --once variant and of each peer
// command, and one running in-process daemon's sweeps, are counted (every
// try on the wire, retries included; fabricmon's brokers are counted with
// it) and printed as a table. MAD counts do not move with the machine's
// load; wall and CPU do.
//
// Numbers are for this machine and ibsim (a single-threaded userspace
// simulator that serialises every MAD), not for a real fabric.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sources/mad/broker_protocol.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"

extern char** environ;

namespace {

struct Cost {
  double wall = 0, cpu = 0;
  long switches = 0;  // context switches (voluntary + not): wake-ups
  int exit_code = -1;
};

// The MAD counter shim and where its processes write (empty: no counting).
struct Counting {
  std::string shim;  // libmad_count.so
  std::string dir;   // MAD_COUNT_DIR
};

// The client environment of `host`, with the counter preloaded after
// umad2sim when `counting` names a directory.
std::vector<std::string> ClientEnv(const fabric::testing::IbsimFabric& fabric,
                                   const std::string& host,
                                   const Counting& counting) {
  std::vector<std::string> env = fabric.ClientEnv(host);
  if (counting.dir.empty()) return env;
  for (auto& e : env) {
    if (e.rfind("LD_PRELOAD=", 0) == 0) e += ":" + counting.shim;
  }
  env.push_back("MAD_COUNT_DIR=" + counting.dir);
  return env;
}

Cost Measure(const fabric::testing::IbsimFabric& fabric,
             std::vector<std::string> argv, const std::string& host,
             const std::string& out = "/dev/null", int fd3 = -1,
             const Counting& counting = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) != 0) env_strings.push_back(entry);
  }
  for (const auto& e : ClientEnv(fabric, host, counting)) {
    env_strings.push_back(e);
  }
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&files, fabric.dir().c_str());
  if (fd3 >= 0) posix_spawn_file_actions_adddup2(&files, fd3, 3);
  Cost c;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid;
  if (posix_spawnp(&pid, args[0], &files, nullptr, args.data(), envp.data()) !=
      0) {
    return c;
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  c.wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  c.cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
          (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  c.switches = ru.ru_nvcsw + ru.ru_nivcsw;
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  posix_spawn_file_actions_destroy(&files);
  return c;
}

// One MAD broker's start-up and exit as a --once pays it (twice: the port
// list's broker and the port's): spawn, libibumad (under ibsim, umad2sim's
// set-up), OPEN of the first active port (umad_open_port, registering the
// classes), then EOF. The OPEN is written before the broker starts and the
// client end closed, so the broker exits right after answering.
Cost BrokerStartup(const fabric::testing::IbsimFabric& fabric,
                   const std::string& broker) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) < 0) return {};
  const auto open = fabric::mad::broker::EncodeRequest(
      fabric::mad::broker::MakeRequest(fabric::mad::broker::Kind::kOpen, 1));
  (void)::send(pair[0], open.data(), open.size(), 0);
  ::close(pair[0]);
  const Cost c =
      Measure(fabric, {broker, "--fd", "3"}, "hca1", "/dev/null", pair[1]);
  ::close(pair[1]);
  return c;
}

// MADs sent, by (class, attribute).
using MadCounts = std::map<std::pair<int, int>, long>;

// What every process that wrote to `dir` sent so far (bench/mad_count.c).
MadCounts ReadCounts(const std::string& dir) {
  MadCounts counts;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().extension() != ".txt") continue;
    std::ifstream in(f.path());
    unsigned mclass = 0, attribute = 0;
    long n = 0;
    for (std::string line; std::getline(in, line);) {
      if (std::sscanf(line.c_str(), "%x %x %ld", &mclass, &attribute, &n) ==
          3) {
        counts[{static_cast<int>(mclass), static_cast<int>(attribute)}] += n;
      }
    }
  }
  return counts;
}

MadCounts Minus(const MadCounts& a, const MadCounts& b) {
  MadCounts out = a;
  for (const auto& [k, n] : b) out[k] -= n;
  return out;
}

// A fresh counting directory under the fabric's.
Counting CountingDir(const fabric::testing::IbsimFabric& fabric,
                     const std::string& shim, const std::string& name) {
  if (shim.empty()) return {};
  const std::string dir = fabric.dir() + "/count-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return {shim, dir};
}

const char* AttributeName(int mclass, int attribute) {
  static const std::map<std::pair<int, int>, const char*> names = {
      {{0x81, 0x10}, "SMP NodeDescription"},
      {{0x81, 0x11}, "SMP NodeInfo"},
      {{0x81, 0x12}, "SMP SwitchInfo"},
      {{0x81, 0x15}, "SMP PortInfo"},
      {{0x81, 0x19}, "SMP LinearForwardingTable"},
      {{0x81, 0x20}, "SMP SMInfo"},
      {{0x81, 0x33}, "SMP PortInfoExtended"},
      {{0x01, 0x20}, "SMP (LID) SMInfo"},
      {{0x01, 0x10}, "SMP (LID) NodeDescription"},
      {{0x01, 0x15}, "SMP (LID) PortInfo"},
      {{0x03, 0x35}, "SA PathRecord"},
      {{0x04, 0x01}, "PMA ClassPortInfo"},
      {{0x04, 0x12}, "PMA PortCounters"},
      {{0x04, 0x1d}, "PMA PortCountersExtended"},
      {{0x04, 0x1f}, "PMA PortExtendedSpeedsCounters"},
  };
  auto it = names.find({mclass, attribute});
  return it == names.end() ? "other" : it->second;
}

// One table: a row per (class, attribute) any column has, and the totals.
void PrintCounts(const std::vector<std::pair<std::string, MadCounts>>& cols) {
  MadCounts keys;
  for (const auto& [name, c] : cols) {
    for (const auto& [k, n] : c) keys[k] += n;
  }
  std::printf("\nMADs sent (every try), by class and attribute:\n| |");
  for (const auto& [name, c] : cols) std::printf(" %s |", name.c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < cols.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [k, total] : keys) {
    if (total == 0) continue;
    std::printf("| %s (0x%02x 0x%04x) |", AttributeName(k.first, k.second),
                k.first, k.second);
    for (const auto& [name, c] : cols) {
      auto it = c.find(k);
      std::printf(" %ld |", it == c.end() ? 0L : it->second);
    }
    std::printf("\n");
  }
  std::printf("| total |");
  for (const auto& [name, c] : cols) {
    long t = 0;
    for (const auto& [k, n] : c) t += n;
    std::printf(" %ld |", t);
  }
  std::printf("\n");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The value of the exposition line that starts with `series` (0 if none).
double Sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::atof(text.c_str() + at + series.size() + 2);
}

// CPU time (ns on CPU, schedstat) and context switches of `root` and its
// children (the brokers it spawned), every thread, so far.
struct Usage {
  double cpu = 0;
  double switches = 0;
};
Usage TreeUsage(pid_t root) {
  Usage u;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(proc.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    std::sscanf(line.c_str() + paren + 1, " %c %d", &state, &ppid);
    if (std::atoi(name.c_str()) != root && ppid != root) continue;
    for (const auto& task : fs::directory_iterator(proc.path() / "task", ec)) {
      double ns = 0;
      std::ifstream(task.path() / "schedstat") >> ns;
      u.cpu += ns * 1e-9;
      std::ifstream status(task.path() / "status");
      for (std::string l; std::getline(status, l);) {
        if (l.find("ctxt_switches:") != std::string::npos) {
          u.switches += std::atof(l.c_str() + l.find(':') + 1);
        }
      }
    }
  }
  return u;
}

// Samples of a running daemon, one per sweep after its first.
struct Steady {
  std::vector<double> sweep;     // the fabric sweep's duration (its metric)
  std::vector<double> cpu;       // CPU between two sweeps' ends, whole tree
  std::vector<double> switches;  // context switches between them
};

// Adds a running daemon's fabric sweeps, `sweeps` of them after the first
// (config `extra` prepended), to `out`: the sweep duration, and the CPU
// and wake-ups of the daemon and its brokers from one sweep's end to the
// next (one sweep plus the 2 s interval's idle time).
void SteadySweep(fabric::testing::IbsimFabric& fabric,
                 const std::string& fabricmon, const std::string& name,
                 const std::string& extra, int sweeps, Steady* out,
                 const Counting& counting = {},
                 std::vector<MadCounts>* per_sweep = nullptr) {
  const int port = fabric::testing::FreeLoopbackPort();
  const std::string config = fabric.dir() + "/" + name + ".yaml";
  std::ofstream(config)
      << "listen_address: \"127.0.0.1:" << port << "\"\n"
      << extra
      << "collectors:\n  ib_port: {enabled: false}\n"
         "  hw_counters: {enabled: false}\n  congestion: {enabled: false}\n"
         "  roce: {enabled: false}\n  nic_identity: {enabled: false}\n"
         "  transceiver: {enabled: false}\n  sm: {enabled: false}\n"
         "  fabric: {enabled: true, interval: 2s, timeout: 60s}\n";
  std::vector<std::string> argv = {fabricmon, "--config", config};
  if (!counting.dir.empty()) {
    // `env` execs the daemon in place (same pid), with the counter
    // preloaded after umad2sim.
    std::vector<std::string> with = {"env"};
    for (const auto& e : ClientEnv(fabric, "hca1", counting)) {
      with.push_back(e);
    }
    argv.insert(argv.begin(), with.begin(), with.end());
  }
  const pid_t pid =
      fabric.StartClient(argv, "hca1", fabric.dir() + "/" + name + ".log");
  MadCounts last_counts;
  std::vector<double> durations;
  double last = 0;
  Usage before;
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (static_cast<int>(durations.size()) <= sweeps &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string text =
        fabric::testing::HttpGetOk(port, "/metrics").value_or("");
    const double at = Sample(text,
                             "fabric_collector_last_success_timestamp_seconds{"
                             "collector=\"fabric\"}");
    if (at > 0 && at != last) {
      last = at;
      const Usage now = TreeUsage(pid);
      if (!durations.empty()) {
        out->cpu.push_back(now.cpu - before.cpu);
        out->switches.push_back(now.switches - before.switches);
      }
      before = now;
      durations.push_back(Sample(
          text, "fabric_collector_duration_seconds{collector=\"fabric\"}"));
      if (per_sweep) {
        // The shim writes its counts within 100 ms of the last send.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const MadCounts now_counts = ReadCounts(counting.dir);
        if (durations.size() > 1) {
          per_sweep->push_back(Minus(now_counts, last_counts));
        }
        last_counts = now_counts;
      }
    }
  }
  fabric.StopClient(pid);
  // The first sweep discovers too.
  if (durations.size() > 1) {
    out->sweep.insert(out->sweep.end(), durations.begin() + 1, durations.end());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: sweep_vs_ibqueryerrors FABRICMON [RUNS] [SWITCHES] "
                 "[HCAS] [BEFORE]\n");
    return 2;
  }
  const std::string fabricmon = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const int switches = argc > 3 ? std::atoi(argv[3]) : 32;
  const int hcas = argc > 4 ? std::atoi(argv[4]) : 384;
  // Another build (e.g. main's), run in the same rounds for a before/after
  // that the machine's load hits alike.
  const std::string before = argc > 5 ? argv[5] : "";
  fabric::testing::IbsimFabric fabric(
      fabric::testing::FatTreeNetfile(switches, hcas));
  std::string error;
  if (!fabric.Start(&error)) {
    std::fprintf(stderr, "ibsim: %s\n", error.c_str());
    return 1;
  }
  fabric.StartOpenSm({.sim_host = "hca0", .priority = 10});
  if (!fabric.WaitForMaster(std::chrono::seconds(300), "hca1")) {
    std::fprintf(stderr, "no master SM\n");
    return 1;
  }
  const auto write_config = [&](const std::string& name,
                                const std::string& fabric_extra) {
    const std::string path = fabric.dir() + "/" + name;
    std::ofstream(path)
        << "collectors:\n  ib_port: {enabled: false}\n"
           "  hw_counters: {enabled: false}\n  congestion: {enabled: false}\n"
           "  roce: {enabled: false}\n  nic_identity: {enabled: false}\n"
           "  sm: {enabled: true}\n"
           "  fabric: {enabled: true, timeout: 120s"
        << fabric_extra << "}\n";
    return path;
  };
  const std::string config = write_config("bench.yaml", "");
  const std::string pesc_off = write_config("pesc_off.yaml", ", pesc: false");
  const std::string in_process = fabric.dir() + "/in_process.yaml";
  std::ofstream(in_process) << "mad_broker: in_process\n"
                            << std::ifstream(config).rdbuf();
  // The same process with no collector: its start-up and exit alone.
  const std::string idle = fabric.dir() + "/idle.yaml";
  std::ofstream(idle)
      << "collectors:\n  ib_port: {enabled: false}\n"
         "  hw_counters: {enabled: false}\n  congestion: {enabled: false}\n"
         "  roce: {enabled: false}\n  nic_identity: {enabled: false}\n"
         "  sm: {enabled: false}\n  fabric: {enabled: false}\n";
  std::vector<double> fm_wall, fm_cpu, peer_wall, peer_cpu, idle_cpu;
  std::vector<double> inproc_wall, inproc_cpu, nopesc_wall, nopesc_cpu;
  std::vector<double> fm_switches, inproc_switches, start_wall, start_cpu;
  std::vector<double> before_wall, before_cpu, before_inproc_wall,
      before_inproc_cpu;
  const std::string broker_program =
      std::filesystem::path(fabricmon).parent_path() / "fabricmon-mad-broker";
  for (int i = 0; i < runs; ++i) {
    const Cost f = Measure(fabric, {fabricmon, "--once", "--config", config},
                           "hca1", fabric.dir() + "/fabricmon.out");
    const Cost a = Measure(fabric, {"ibqueryerrors", "--switch"}, "hca2",
                           fabric.dir() + "/ibqe.out");
    const Cost b = Measure(fabric, {"ibqueryerrors", "--switch", "--counters"},
                           "hca2", fabric.dir() + "/ibqe-counters.out");
    std::printf(
        "run %d: fabricmon wall %.3f s cpu %.3f s (exit %d) | "
        "ibqueryerrors x2 wall %.3f s cpu %.3f s (exit %d,%d)\n",
        i + 1, f.wall, f.cpu, f.exit_code, a.wall + b.wall, a.cpu + b.cpu,
        a.exit_code, b.exit_code);
    const Cost p =
        Measure(fabric, {fabricmon, "--once", "--config", in_process}, "hca1");
    inproc_wall.push_back(p.wall);
    inproc_cpu.push_back(p.cpu);
    inproc_switches.push_back(p.switches);
    fm_switches.push_back(f.switches);
    const Cost n = Measure(fabric, {fabricmon, "--once", "--config", pesc_off},
                           "hca1", fabric.dir() + "/fabricmon-nopesc.out");
    std::printf(
        "run %d: fabricmon pesc: false wall %.3f s cpu %.3f s (exit %d)\n",
        i + 1, n.wall, n.cpu, n.exit_code);
    nopesc_wall.push_back(n.wall);
    nopesc_cpu.push_back(n.cpu);
    const Cost s = BrokerStartup(fabric, broker_program);
    start_wall.push_back(s.wall);
    start_cpu.push_back(s.cpu);
    idle_cpu.push_back(
        Measure(fabric, {fabricmon, "--once", "--config", idle}, "hca1").cpu);
    if (!before.empty()) {
      const Cost b1 =
          Measure(fabric, {before, "--once", "--config", config}, "hca1");
      const Cost b2 =
          Measure(fabric, {before, "--once", "--config", in_process}, "hca1");
      before_wall.push_back(b1.wall);
      before_cpu.push_back(b1.cpu);
      before_inproc_wall.push_back(b2.wall);
      before_inproc_cpu.push_back(b2.cpu);
    }
    fm_wall.push_back(f.wall);
    fm_cpu.push_back(f.cpu);
    peer_wall.push_back(a.wall + b.wall);
    peer_cpu.push_back(a.cpu + b.cpu);
  }
  // What each side covered in its last run (same fabric, same ports?).
  auto count = [&](const std::string& file, const std::string& needle) {
    std::ifstream in(fabric.dir() + "/" + file);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.rfind(needle, 0) == 0;
    return n;
  };
  std::printf(
      "fabricmon: %d fabric_switch_info, %d switch ports with "
      "counters, sm series %d\n",
      count("fabricmon.out", "fabric_switch_info{"),
      count("fabricmon.out", "fabric_switch_port_transmit_wait_total{"),
      count("fabricmon.out", "fabric_sm_state{"));
  // Where PESC's MADs went (ibsim: unanswered probes, "unsupported").
  for (const char* file : {"fabricmon.out", "fabricmon-nopesc.out"}) {
    std::ifstream in(fabric.dir() + "/" + file);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("fabric_sweep_mads_total{", 0) == 0 ||
          line.rfind("fabric_sweep_pesc_unsupported_switches ", 0) == 0) {
        std::printf("%s: %s\n", file, line.c_str());
      }
    }
  }
  std::ifstream summary(fabric.dir() + "/ibqe-counters.out");
  for (std::string line; std::getline(summary, line);) {
    if (line.rfind("##", 0) == 0)
      std::printf("ibqueryerrors: %s\n", line.c_str());
  }
  const double fw = Median(fm_wall), fc = Median(fm_cpu);
  const double pw = Median(peer_wall), pc = Median(peer_cpu);
  std::printf("fabric %d switches %d HCAs, median of %d runs\n", switches, hcas,
              runs);
  std::printf("fabricmon --once (sm+fabric): wall %.3f s cpu %.3f s\n", fw, fc);
  const double iw = Median(inproc_wall), ic = Median(inproc_cpu);
  std::printf(
      "fabricmon --once, mad_broker: in_process: wall %.3f s cpu %.3f s\n", iw,
      ic);
  std::printf("ratio broker/in_process: wall %.2f cpu %.2f\n", fw / iw,
              fc / ic);
  std::printf(
      "context switches (--once, whole tree): broker %.0f, in_process %.0f\n",
      Median(fm_switches), Median(inproc_switches));
  const double nw = Median(nopesc_wall), nc = Median(nopesc_cpu);
  std::printf("fabricmon --once, fabric.pesc: false: wall %.3f s cpu %.3f s\n",
              nw, nc);
  std::printf("ratio PESC on/off: wall %.2f cpu %.2f (target <= 1.3)\n",
              fw / nw, fc / nc);
  std::printf("fabricmon --once with no collector (start-up): cpu %.3f s\n",
              Median(idle_cpu));
  std::printf(
      "one MAD broker's start-up, OPEN and exit (a --once pays two): wall "
      "%.3f s cpu %.3f s\n",
      Median(start_wall), Median(start_cpu));
  std::printf(
      "ibqueryerrors --switch + --switch --counters: wall %.3f s "
      "cpu %.3f s\n",
      pw, pc);
  if (!before.empty()) {
    const double bw = Median(before_wall), bc = Median(before_cpu);
    const double biw = Median(before_inproc_wall),
                 bic = Median(before_inproc_cpu);
    std::printf(
        "BEFORE (%s) --once: wall %.3f s cpu %.3f s, ratio to peer wall %.2f "
        "cpu %.2f; in_process: wall %.3f s cpu %.3f s, ratio to peer wall "
        "%.2f cpu %.2f\n",
        before.c_str(), bw, bc, bw / pw, bc / pc, biw, bic, biw / pw, bic / pc);
    std::printf("in_process ratio to peer (this build): wall %.2f cpu %.2f\n",
                iw / pw, ic / pc);
  }
  std::printf("ratio fabricmon/peer: wall %.2f cpu %.2f (target <= 1.0)\n",
              fw / pw, fc / pc);
  // One counted run of each, when the counter is there.
  const std::string shim =
      (std::filesystem::canonical("/proc/self/exe").parent_path() /
       "libmad_count.so")
          .string();
  if (std::filesystem::exists(shim)) {
    std::vector<std::pair<std::string, MadCounts>> cols;
    const auto counted = [&](const std::string& name,
                             std::vector<std::string> argv,
                             const std::string& host) {
      const Counting c = CountingDir(fabric, shim, name);
      Measure(fabric, std::move(argv), host, "/dev/null", -1, c);
      cols.emplace_back(name, ReadCounts(c.dir));
    };
    counted("--once", {fabricmon, "--once", "--config", config}, "hca1");
    counted("--once in_process", {fabricmon, "--once", "--config", in_process},
            "hca1");
    counted("--once pesc: false", {fabricmon, "--once", "--config", pesc_off},
            "hca1");
    counted("ibqueryerrors --switch", {"ibqueryerrors", "--switch"}, "hca2");
    counted("ibqueryerrors --switch --counters",
            {"ibqueryerrors", "--switch", "--counters"}, "hca2");
    // A running daemon (in process, fabric only, 2 s interval): the MADs
    // of each sweep after the first (which discovers).
    Steady ignored;
    std::vector<MadCounts> sweeps;
    const Counting c = CountingDir(fabric, shim, "steady");
    SteadySweep(fabric, fabricmon, "steady-counted", "mad_broker: in_process\n",
                4, &ignored, c, &sweeps);
    for (std::size_t i = 0; i < sweeps.size(); ++i) {
      cols.emplace_back("daemon sweep " + std::to_string(i + 2), sweeps[i]);
    }
    PrintCounts(cols);
  } else {
    std::printf("(no %s: MADs not counted)\n", shim.c_str());
  }
  // Broker and in-process daemons take turns, three sweeps each, `runs`
  // rounds, so that a change in the machine's load hits both alike.
  Steady broker, inproc;
  for (int i = 0; i < runs; ++i) {
    SteadySweep(fabric, fabricmon, "steady-broker", "mad_broker: spawn\n", 3,
                &broker);
    SteadySweep(fabric, fabricmon, "steady-inproc", "mad_broker: in_process\n",
                3, &inproc);
  }
  const double bs = Median(broker.sweep), is = Median(inproc.sweep);
  std::printf(
      "running daemon, median fabric sweep of %zu / %zu: broker %.3f s, "
      "in_process %.3f s, ratio broker/in_process %.2f (target <= 1.1)\n",
      broker.sweep.size(), inproc.sweep.size(), bs, is, bs / is);
  const double bc = Median(broker.cpu), ic2 = Median(inproc.cpu);
  std::printf(
      "running daemon, per sweep interval (daemon + brokers): cpu broker "
      "%.4f s, in_process %.4f s, ratio %.2f; context switches broker %.0f, "
      "in_process %.0f\n",
      bc, ic2, bc / ic2, Median(broker.switches), Median(inproc.switches));
  return 0;
}
