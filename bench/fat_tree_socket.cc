// Serves the simulator's k-ary fat tree (simulator/fat_tree.h) on a
// fabricmon-sim MAD socket (simulator/mad_socket.h), so that the real
// fabricmon-locate binary can run against 2,000 switches
// (--sim-mad-socket PATH --sim-port-guid 0x0002c90300a00000, host 0's
// port). For bench/locate_cost.sh; runs until SIGINT or SIGTERM.
//
//   fat_tree_socket PATH [K=40] [HOSTS_PER_LEAF=2]
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "simulator/fat_tree.h"
#include "simulator/mad_socket.h"

int main(int argc, char** argv) {
  using namespace fabric;
  if (argc < 2) {
    std::fprintf(stderr, "usage: fat_tree_socket PATH [K] [HOSTS_PER_LEAF]\n");
    return 2;
  }
  const int k = argc > 2 ? std::atoi(argv[2]) : 40;
  const int per_leaf = argc > 3 ? std::atoi(argv[3]) : 2;
  const auto tree = std::make_shared<const sim::FatTree>(k, per_leaf);
  sim::MadSocketServer server(
      [tree](std::uint64_t, std::uint16_t dlid, const Mad& mad) {
        std::uint32_t node = 0;
        return tree->Answer(dlid, mad, &node);
      });
  // Before the server's thread starts, so only sigwait sees them.
  const sigset_t stop = sim::BlockStopSignals();
  std::string error;
  if (!server.Start(argv[1], &error)) {
    std::fprintf(stderr, "fat_tree_socket: %s\n", error.c_str());
    return 1;
  }
  std::printf("fat tree k=%d: %d switches, %d hosts on %s\n", k,
              tree->switches(), tree->hosts(), argv[1]);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::printf("answered %llu MADs\n",
              static_cast<unsigned long long>(server.answered()));
  return 0;
}
