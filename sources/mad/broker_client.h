// The daemon's side of the MAD broker (broker.h): connections to it, a
// MadTransport over one connection, and the local port list as the broker
// sees it. The daemon itself never opens umad.
//
// Where the broker is (BrokerEndpoint): a socket path, which systemd's
// fabricmon-mad-broker.socket listens on (Accept=yes: one broker process
// per connection, in its own unit, the only one allowed the umad devices);
// or, without systemd, a program the daemon spawns with one end of a
// socket pair as its fd 3. Either way a broker serves one connection and
// exits when it closes, so a daemon that dies takes its brokers with it,
// and a broker that died is replaced by connecting again.
//
// Thread-safety: BrokerConnection and BrokerTransport are used by one
// thread at a time (a transport is shared through ShareMadTransport);
// BrokerPortLister is safe from any thread; the counters are atomics.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/thread_annotations.h"
#include "sources/mad/broker_protocol.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad::broker {

struct Endpoint {
  std::string socket_path;  // connect here when set
  std::string program;      // else spawn this (`program --fd 3`)
};

class Connection {
 public:
  static std::unique_ptr<Connection> Open(const Endpoint& endpoint,
                                          std::string* error);
  ~Connection();  // closes; reaps a spawned broker
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Queue + Flush.
  bool Send(const Request& request);
  // Adds `request` to the message Flush sends (first flushing what is
  // queued when it would not fit). False when that flush failed.
  bool Queue(const Request& request);
  // Sends what is queued as one message; true when nothing was queued.
  bool Flush();
  // The next reply, waiting up to `wait`; nullopt when none came (or the
  // connection broke: broken()). Replies that came in one message are
  // handed out one by one.
  std::optional<Reply> Receive(std::chrono::microseconds wait);
  // The next reply of a message already received, without a syscall.
  std::optional<Reply> Pending();
  // Send, then the reply of the same kind and tid within `timeout`.
  std::optional<Reply> Call(const Request& request,
                            std::chrono::milliseconds timeout);
  bool broken() const { return broken_; }
  int fd() const { return fd_; }

 private:
  Connection(int fd, pid_t child) : fd_(fd), child_(child) {}
  bool Broke();  // marks the connection broken, counts it once; false
  int fd_;
  pid_t child_;                       // spawned broker, or 0
  std::vector<std::uint8_t> outbox_;  // requests not sent yet
  std::size_t queued_ = 0;            // requests in outbox_
  std::deque<Reply> inbox_;           // replies received, not handed out
  // Atomic: the daemon's shared opener asks whether a transport still works
  // (broken()) from one collector thread while another uses it.
  std::atomic<bool> broken_{false};
};

// What the daemon exports about its brokers (fabric_mad_broker_*).
struct Counters {
  std::array<std::atomic<std::uint64_t>,
             static_cast<std::size_t>(Refusal::kCount)>
      refused{};
  std::atomic<std::uint64_t> connect_failures{0};
  std::atomic<std::uint64_t> connections_lost{0};
  std::atomic<bool> used{false};  // a broker endpoint was configured
};
Counters& ProcessCounters();

// A MadTransport whose wire is a broker connection bound (OPEN) to one
// local port. Post queues the request; Poll sends every request queued
// since the last one in one message, then waits for replies: the engine
// posts what it can between two polls, so a sweep's requests cross in
// batches. Refusals complete with permission_denied, failed sends with
// io_error; when the connection breaks, every request not answered yet
// completes with io_error at the next Poll, and every Post fails.
class Transport : public MadTransport {
 public:
  static std::unique_ptr<Transport> Open(const Endpoint& endpoint,
                                         const std::string& ca, int port,
                                         std::string* error);
  bool broken() const { return connection_->broken(); }

  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds timeout) override;
  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override;

 private:
  explicit Transport(std::unique_ptr<Connection> c)
      : connection_(std::move(c)) {}
  std::unique_ptr<Connection> connection_;
  // Tids sent (or queued) and not answered: failed at once when the
  // connection breaks.
  std::unordered_set<std::uint32_t> posted_;
};

// `inner` behind the broker's allow-list, in process: every MAD is turned
// into its typed request, checked (Check) and rebuilt (BuildMad) before
// `inner` sends it; a refused one fails to post (io_error) and is counted
// in ProcessCounters. For fabricmon-mad (run by an operator, never exposed
// to the network) and the daemon's `mad_broker: in_process`.
std::unique_ptr<MadTransport> AllowListed(std::unique_ptr<MadTransport> inner);

// The local IB ports (kPorts) over a connection it keeps, and opens again
// when the broker went away.
class PortLister {
 public:
  explicit PortLister(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  std::vector<LocalPort> List(std::string* error) EXCLUDES(mutex_);

 private:
  const Endpoint endpoint_;
  Mutex mutex_;
  std::unique_ptr<Connection> connection_ GUARDED_BY(mutex_);
};

}  // namespace fabric::mad::broker
