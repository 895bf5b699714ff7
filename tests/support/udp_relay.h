// A test-only UDP relay for the probe end-to-end test: it sits between two
// daemons (in a network namespace of its own), forwards each datagram that
// arrives on a front socket to a fixed upstream address and the upstream's
// answers back to the last sender, and on the way upstream delays every
// datagram by a set time and drops every Nth. This kernel has no netem, and
// tbf does not delay sparse packets, hence a relay.
//
// Delays are kept with a timer slack of 1 ns and a FIFO (one delay for all
// packets keeps them in order). The relay does not try to be punctual: on a
// loaded machine its wake-ups are late, so it measures what it really held
// each datagram, from the kernel's receive stamp to its own send, in both
// directions, and a test compares against that. Settings change at run time
// (atomics).
//
// Thread-safety: Start/Stop from one thread; the setters and counters from
// any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fabric::testing {

class UdpRelay {
 public:
  // front: "ip:port" to listen on; upstream: "ip:port" to forward to. If
  // `netns` is not empty the relay's thread enters /run/netns/<netns> first.
  UdpRelay(std::string netns, std::string front_ip, int front_port,
           std::string upstream_ip, int upstream_port);
  ~UdpRelay();

  // Binds and starts the thread; false with the reason.
  bool Start(std::string* error);
  void Stop();

  void set_delay(std::chrono::microseconds d) { delay_us_ = d.count(); }
  // 0 = drop nothing; N = drop every Nth datagram going upstream.
  void set_drop_every(int n) {
    drop_every_ = n;
    counter_ = 0;
  }
  // Sends the last datagram forwarded upstream once more (a replay).
  void ReplayLast() { ++replay_; }

  // The time the relay really added to a round trip: the median, over the
  // probes whose answers it sent back between two Unix times, of the probe's
  // hold upstream plus its answer's hold back (kernel receive stamp to
  // send; the two are paired by the probe wire format's session and
  // sequence number). It is the set delay plus the relay's own wake-ups,
  // which a loaded machine adds to.
  std::chrono::nanoseconds MedianHeld(double from_unix_s, double to_unix_s);
  std::uint64_t forwarded() const { return forwarded_; }
  std::uint64_t dropped() const { return dropped_; }

 private:
  void Run();

  std::string netns_, front_ip_, upstream_ip_;
  int front_port_, upstream_port_;
  int front_fd_ = -1, upstream_fd_ = -1, wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> replay_{0};  // replays asked for, not yet sent
  std::atomic<std::int64_t> delay_us_{0};
  std::atomic<int> drop_every_{0};
  std::atomic<std::uint64_t> counter_{0}, forwarded_{0}, dropped_{0};
  std::mutex held_mu_;
  // (Unix ns answer sent back, round-trip hold ns), oldest first.
  std::deque<std::pair<std::int64_t, std::int64_t>> held_round_;
  std::mutex start_mu_;
  std::string start_error_;
  bool started_ = false;
};

}  // namespace fabric::testing
