// MADs per second arriving at the master SM's port from fabricmon daemons
// (issue 39 item 7), counted where they arrive: ibsim counts every packet
// a simulated port receives (PortCounters PortRcvPkts, as a real HCA
// does), so the SM's HCA port's PortRcvPkts over a window, with OpenSM's
// own sweeps turned off (sweep_interval 0: nothing else talks to it),
// is the number of MADs the daemons sent it. One ibsim fat tree, a real
// OpenSM on hca0, DAEMONS fabricmon daemons on hca1.. with only the sm
// collector at INTERVAL seconds (shortened so that a window holds many
// collections); checks every daemon's sm collector succeeded and saw the
// master (else no figure, exit 1); prints MADs per daemon per collection and
// the master's MAD rate for 2,000 nodes at the 60 s default. Run it against an
// older binary for the before figure.
//
//   sm_load_ibsim FABRICMON [DAEMONS=4] [INTERVAL_S=2] [WINDOW_S=60]
//
// DAEMONS is at most 4: ibsim serves 10 clients, and each daemon takes two
// (itself and its MAD broker). The figure that scales is MADs per daemon
// per collection; the 2,000-node rate is that times 2,000 / 60 s.
//
// The reading itself is one PerfMgt Get to the SM's port per sample
// (subtracted). umad2sim gives each client one port, so this measures the
// one-port node; sm_collector_dedup_test shows eight rails cost the same.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"

namespace {

using fabric::testing::IbsimFabric;

// hca0 port 1's PortRcvPkts, read by perfquery attached as `from`.
long RcvPkts(IbsimFabric& fabric, int lid, const std::string& from) {
  const auto r = fabric.Run({"perfquery", std::to_string(lid), "1"}, from);
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex(R"(PortRcvPkts:\.*(\d+))"))) {
    std::fprintf(stderr, "perfquery: %s%s\n", r.out.c_str(), r.err.c_str());
    return -1;
  }
  return std::stol(m[1]);
}

// The master SM's LID as sminfo prints it (the SM runs on hca0: its port).
int SmLid(IbsimFabric& fabric) {
  const auto r = fabric.Run({"sminfo"}, "hca1");
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex(R"(sm lid (\d+))"))) {
    return std::stoi(m[1]);
  }
  std::fprintf(stderr, "sminfo: %s%s\n", r.out.c_str(), r.err.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s FABRICMON [DAEMONS] [INTERVAL_S] [WINDOW_S]\n",
                 argv[0]);
    return 2;
  }
  // Absolute: the daemons are started in the fabric's own directory.
  const std::string binary = std::filesystem::absolute(argv[1]).string();
  const int daemons = argc > 2 ? std::atoi(argv[2]) : 4;
  // ibsim serves at most 10 clients (IBSIM_MAX_CLIENTS): OpenSM, the
  // measuring perfquery, and two per daemon (the daemon, which lists its
  // ports through umad2sim, and its MAD broker). More daemons are refused
  // by ibsim and would silently not count.
  if (daemons < 1 || daemons > 4) {
    std::fprintf(stderr, "DAEMONS must be 1..4 (ibsim's 10 clients)\n");
    return 2;
  }
  const int interval = argc > 3 ? std::atoi(argv[3]) : 2;
  const int window = argc > 4 ? std::atoi(argv[4]) : 60;
  IbsimFabric fabric(fabric::testing::FatTreeNetfile(4, daemons + 2));
  std::string error;
  if (!fabric.Start(&error)) {
    std::fprintf(stderr, "ibsim: %s\n", error.c_str());
    return 1;
  }
  fabric.StartOpenSm({.sim_host = "hca0", .priority = 10, .sweep_interval = 0});
  if (!fabric.WaitForMaster(std::chrono::seconds(90), "hca1")) {
    std::fprintf(stderr, "no master SM\n");
    return 1;
  }
  const int sm_lid = SmLid(fabric);
  if (sm_lid == 0) return 1;
  // The measuring node: the last HCA, no daemon on it.
  const std::string probe = "hca" + std::to_string(daemons + 1);
  std::vector<pid_t> pids;
  std::vector<int> ports;
  for (int i = 1; i <= daemons; ++i) {
    const std::string dir = fabric.dir() + "/d" + std::to_string(i);
    std::filesystem::create_directories(dir);
    ports.push_back(fabric::testing::FreeLoopbackPort());
    std::ofstream(dir + "/fabricmon.yaml")
        << "listen_address: \"127.0.0.1:" << ports.back() << "\"\ncollectors:\n"
        << "  ib_port: {enabled: false}\n  hw_counters: {enabled: false}\n"
        << "  congestion: {enabled: false}\n  roce: {enabled: false}\n"
        << "  nic_identity: {enabled: false}\n  ib_link: {enabled: false}\n"
        << "  fabric: {enabled: false}\n"
        << "  sm: {interval: " << interval << "s, timeout: " << interval
        << "s, mad_timeout: 500ms}\n";
    pids.push_back(
        fabric.StartClient({binary, "--config", dir + "/fabricmon.yaml"},
                           "hca" + std::to_string(i), dir + "/log"));
  }
  // Warm-up: every daemon started and did its first collections.
  std::this_thread::sleep_for(std::chrono::seconds(3 * interval + 5));
  const long before = RcvPkts(fabric, sm_lid, probe);
  std::this_thread::sleep_for(std::chrono::seconds(window));
  const long after = RcvPkts(fabric, sm_lid, probe);
  // A figure is only worth printing if the daemons did reach the SM: each
  // one's sm collector succeeded and exports the master's state.
  int reporting = 0;
  for (size_t i = 0; i < ports.size(); ++i) {
    const auto body = fabric::testing::HttpGetOk(ports[i], "/metrics");
    if (body &&
        body->find("fabric_collector_success{collector=\"sm\"} 1") !=
            std::string::npos &&
        body->find("fabric_sm_state{") != std::string::npos) {
      ++reporting;
    } else if (reporting == 0 && i == 0) {
      std::fprintf(stderr, "daemon 1 /metrics (sm lines):\n");
      if (body) {
        std::istringstream lines(*body);
        for (std::string l; std::getline(lines, l);) {
          if (l.find("sm") != std::string::npos && l[0] != '#') {
            std::fprintf(stderr, "  %s\n", l.c_str());
          }
        }
      } else {
        std::fprintf(stderr, "  no answer on port %d\n", ports[i]);
      }
      std::fprintf(stderr, "log: %s\n",
                   fabric.Run({"cat", fabric.dir() + "/d1/log"}).out.c_str());
    }
  }
  std::printf("daemons whose sm collector reached the master: %d of %d\n",
              reporting, daemons);
  if (reporting == 0) {
    std::fprintf(stderr, "no daemon reached the SM: no figure\n");
    for (pid_t p : pids) fabric.StopClient(p);
    return 1;
  }
  if (before < 0 || after < 0) return 1;
  const double mads = static_cast<double>(after - before - 1);  // our Get
  const double rate = mads / window;
  const double per_collection =
      mads / (static_cast<double>(daemons) * window / interval);
  std::printf(
      "daemons %d, sm interval %d s, window %d s: %.0f MADs at the SM's "
      "port, %.2f MAD/s, %.2f MADs per daemon per collection\n",
      daemons, interval, window, mads, rate, per_collection);
  std::printf(
      "2,000 one-port nodes at the 60 s default: %.1f MAD/s at the master; "
      "with 8 rails of one subnet the same (one SM asked once per node)\n",
      2000.0 * per_collection / 60.0);
  for (pid_t p : pids) fabric.StopClient(p);
  return 0;
}
