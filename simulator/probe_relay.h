// fabricmon-sim's probe path (`fabricmon-sim --probe-relay IP:PORT`): the
// daemons of scripts/demo.sh probe each other with UDP over loopback, which
// no simulated fault reaches, so fabricmon-sim carries those probes. For
// every ordered pair of hosts (i, j) it listens on a UDP port of its own
// (IP:0), forwards what arrives there to host j's probe responder (IP:PORT+j)
// and the answers back to the sender, and drops the share of the probes the
// model says the pair loses now (Cluster::ProbeLoss, the probe-loss
// scenario). WritePeersFiles() lists host i's relay ports in
// <host i's tree>/probe-peers, the file the daemon's probe `peers_file`
// names.
//
// Why a relay in the simulator: the fault belongs to the simulated fabric
// and its timeline, and fabricmon itself carries no way to drop its own
// probes. One relay per ordered pair, so that a pair's loss is that pair's
// alone (instance = the prober, peer = the relay port of that pair). Drops
// are deterministic, one probe in 1/fraction, like the model; probes are
// dropped on the way to the responder, answers are never dropped.
//
// Thread-safety: one thread of its own (it reads the runner's published
// ProbeLoss per probe, never waiting behind a step or render);
// Start/Stop/WritePeersFiles from one owning thread, counters from any.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fabric::sim {

class LiveRunner;

class ProbeRelay {
 public:
  // Host j's responder listens on `ip`:`responder_ports[j]`; one entry per
  // simulated host.
  ProbeRelay(const LiveRunner& runner, std::string ip,
             std::vector<int> responder_ports);
  ~ProbeRelay();  // Stop()
  ProbeRelay(const ProbeRelay&) = delete;
  ProbeRelay& operator=(const ProbeRelay&) = delete;

  // Binds every pair's sockets and starts relaying. False with *error.
  bool Start(std::string* error);
  void Stop();

  // The port on which host `from`'s probes to host `to` are relayed (after
  // Start), 0 for from == to.
  int FrontPort(int from, int to) const;
  // Writes <roots[i]>/probe-peers (replaced by rename) for every host i: one
  // `IP:port  # host<j>` line per other host.
  bool WritePeersFiles(const std::vector<std::filesystem::path>& roots,
                       std::string* error) const;

  std::uint64_t forwarded() const { return forwarded_; }
  std::uint64_t dropped() const { return dropped_; }

 private:
  struct Pair {
    int from = 0, to = 0;
    int front_fd = -1;     // host `from`'s daemon sends here
    int upstream_fd = -1;  // connected to host `to`'s responder
    int front_port = 0;
    sockaddr_in sender{};  // where the last probe came from
    bool have_sender = false;
    double owed = 0;  // probes owed to the drop fraction
  };
  void Loop();
  void Forward(Pair& pair);
  void Answer(Pair& pair);

  const LiveRunner& runner_;
  std::string ip_;
  std::vector<int> responder_ports_;
  std::vector<Pair> pairs_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<std::uint64_t> forwarded_{0}, dropped_{0};
};

}  // namespace fabric::sim
