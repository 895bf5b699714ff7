// The simulator's MAD view (simulator/mad.h) for another process: fabricmon-sim
// answers MADs from its running model on a Unix datagram socket
// (`fabricmon-sim --mad-socket PATH`), and a daemon reading one of its host
// trees reaches them through ConnectMadSocket (`fabricmon --sim.mad-socket
// PATH`, daemon/simulate.h). That is how the daemons of scripts/demo.sh see
// the SM failover, the hung SM and the switch ports of the fabric whose
// trees they read.
//
// Why a socket: the answers must come from the one model that renders the
// trees, as it is now (ActCount, switch counters, which SM is master), and
// the model lives in fabricmon-sim's process; a second model in the daemon
// would be a second fabric, and a file could hold only precomputed answers.
// MadTransport is already datagrams (Post one 256-byte MAD, Poll answers
// matched by transaction id), so the socket carries exactly that, with the
// two things the in-process transport gets as arguments: the destination
// LID and the local port the MAD leaves by (directed routes start there).
// Unix datagrams: local only, file permissions, one message per MAD,
// reliable. Where the model has no answer (unknown LID, a dead SM, a
// malformed MAD) nothing is sent back and the client's engine times out, as
// on a real fabric. This is not issue 27's MAD broker (typed requests, the
// umad path); once that exists fabricmon-sim could answer its protocol.
//
// Wire: request = "FSM1" + local port GUID (8 bytes) + DLID (2) + 2 zero
// bytes + the MAD (256), integers big-endian; answer = the response MAD
// (256). Other datagrams are ignored and counted.
//
// Thread-safety: the server runs one thread of its own (it locks the runner
// per MAD); Start/Stop from one owning thread, the counters from any. A
// client transport is a MadTransport: one Run() at a time.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "sources/mad/mad_transport.h"

namespace fabric::sim {

class LiveRunner;

class MadSocketServer {
 public:
  // The answer to a MAD at `dlid` leaving by the port `local_port_guid`;
  // an error result: no answer.
  using Answerer = std::function<MadResult(std::uint64_t local_port_guid,
                                           std::uint16_t dlid, const Mad&)>;
  // Answers from the running model (locked per MAD).
  explicit MadSocketServer(const LiveRunner& runner);
  // Answers from anything else (bench/fat_tree_socket.cc: the fat tree).
  explicit MadSocketServer(Answerer answer) : answer_(std::move(answer)) {}
  ~MadSocketServer();  // Stop()
  MadSocketServer(const MadSocketServer&) = delete;
  MadSocketServer& operator=(const MadSocketServer&) = delete;

  // Binds `path` (a stale socket file there is replaced) and starts
  // answering. False with *error.
  bool Start(const std::string& path, std::string* error);
  // Stops answering and removes the socket file.
  void Stop();

  std::uint64_t answered() const { return answered_; }
  std::uint64_t ignored() const { return ignored_; }

 private:
  void Loop();
  void Serve();

  Answerer answer_;
  std::string path_;
  int fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<std::uint64_t> answered_{0}, ignored_{0};
};

// Blocks SIGINT and SIGTERM in the calling thread and returns them, for
// sigwait / sigtimedwait: a process that serves MADs (fabricmon-sim,
// bench/fat_tree_socket.cc) calls it before it starts the server's or any
// other thread, so the threads inherit the mask and only the waiting main
// thread sees a stop signal (and stops the server in order).
sigset_t BlockStopSignals();

// A transport whose MADs fabricmon-sim answers at `path`, leaving by the
// simulated HCA port whose port GUID is `local_port_guid` (as its sysfs
// tree's gids/0 has it). nullptr with *error when the socket cannot be set
// up (no server at `path`).
std::unique_ptr<MadTransport> ConnectMadSocket(const std::string& path,
                                               std::uint64_t local_port_guid,
                                               std::string* error);

}  // namespace fabric::sim
