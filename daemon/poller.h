// Poller: runs one collector in the background on its own thread, every
// `interval`, and publishes each result into the SnapshotStore.
//
// Rules (see also exporters/exposition.h):
// - The first collection starts at Start(); later ones every `interval`
//   (fixed rate; ticks that fall while a collection runs are skipped, so
//   there are never two collections of one collector at once).
// - One thread per collector, sleeping until its next tick: a collection
//   costs one wake-up, with no hand-off between threads, and a collector
//   stuck in the kernel holds only its own thread.
// - A collection still running at `timeout` is reported as failed by
//   Supervise() (which the daemon calls periodically on its io_context): a
//   snapshot with success=0, stuck=1 and no samples (samples of earlier
//   collections are dropped, not kept). When the late collection returns,
//   its samples are published, still with success=0 because it overran; the
//   next collection starts on the next tick after that.
// - Stop() retires the poller. A collection in flight at that moment is
//   abandoned: its thread is detached and owns the collector (through the
//   poller's shared state) until the collection returns, then exits without
//   publishing. Only a collection stuck in the kernel outlives Stop() this
//   way; the daemon counts them (stuck() of the pollers it stopped) and stops
//   feeding the systemd watchdog when too many pile up (daemon.cc).
//
// Thread-safety: Start(), Stop() and Supervise() from one thread (the
// daemon's io_context thread); stuck(), completed() and name() from any.
// on_publish runs on the poller's thread or in Supervise(), never
// concurrently with itself.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "core/snapshot.h"
#include "core/thread_annotations.h"
#include "daemon/collection.h"

namespace fabric {

// Counts collections running, so shutdown can wait for them (bounded)
// instead of joining a thread stuck in a hung read.
class InFlight {
 public:
  void Add();
  void Done();
  // True when nothing is in flight before `timeout` passes.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int count_ GUARDED_BY(mu_) = 0;
};

class Poller {
 public:
  Poller(NamedCollector collector, std::shared_ptr<SnapshotStore> store,
         std::shared_ptr<InFlight> in_flight);
  // Stops if still running.
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Calls the collector's Start(io), then starts the thread.
  void Start(boost::asio::io_context& io);
  // Publishes the overrun snapshot once the running collection is past its
  // timeout. Returns stuck().
  bool Supervise();
  // Calls the collector's Stop(); publishes nothing more. Returns true when
  // a collection was in flight and its thread was left to finish it.
  bool Stop();

  // A collection is running past its timeout.
  bool stuck() const;
  // A collection is running (also after Stop(), until it returns).
  bool running() const;
  // Collections finished so far (progress, for the watchdog).
  std::uint64_t completed() const;
  const std::string& name() const { return name_; }
  std::chrono::microseconds timeout() const { return timeout_; }

  // Called after every publish (tests record the history with it). Set
  // before Start().
  void set_on_publish(std::function<void(const Snapshot&)> f);

 private:
  struct State;
  static void Loop(std::shared_ptr<State> state);

  std::string name_;
  std::chrono::microseconds timeout_;
  std::shared_ptr<State> state_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace fabric
