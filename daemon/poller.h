// Poller: runs one collector in the background on its own interval, with a
// deadline, and publishes each result into the SnapshotStore.
//
// Rules (see also exporters/exposition.h):
// - The first collection starts at Start(); later ones every `interval`
//   (fixed rate; ticks that fall while a collection runs are skipped, so
//   there are never two collections of one collector at once).
// - A collection still running at `timeout` is reported as failed: a
//   snapshot with success=0 and no samples is published at the deadline
//   (samples of earlier collections are dropped, not kept). When the late
//   collection returns, its samples are published, still with success=0
//   because it overran; the next collection starts on the next tick after
//   that.
// - Collect() runs on `workers` (blocking sysfs reads must not stall the
//   event loop); all of the Poller's own state lives on the io_context
//   thread.
//
// Thread-safety: create, Start() and Stop() on the io_context's thread; the
// io_context must be run by exactly one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "core/snapshot.h"
#include "daemon/collection.h"

namespace fabric {

// Counts collections running on worker threads, so shutdown can wait for
// them (bounded) instead of joining a thread stuck in a hung read.
class InFlight {
 public:
  void Add();
  void Done();
  // True when nothing is in flight before `timeout` passes.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

class Poller : public std::enable_shared_from_this<Poller> {
 public:
  Poller(boost::asio::io_context& io, boost::asio::thread_pool& workers,
         NamedCollector collector, std::shared_ptr<SnapshotStore> store,
         std::shared_ptr<InFlight> in_flight);

  void Start();
  // Cancels the timers; a collection in flight finishes on its worker but
  // its result is discarded.
  void Stop();

  const std::string& name() const { return c_.name; }

  // Called on the io_context thread after every publish (tests record the
  // history with it). Set before Start().
  void set_on_publish(std::function<void(const Snapshot&)> f) {
    on_publish_ = std::move(f);
  }

 private:
  void Tick();
  void Schedule();
  void OnDeadline(std::uint64_t generation);
  void OnDone(std::uint64_t generation, std::shared_ptr<Snapshot> snapshot);
  void Publish(std::shared_ptr<Snapshot> snapshot);

  boost::asio::io_context& io_;
  boost::asio::thread_pool& workers_;
  NamedCollector c_;
  std::shared_ptr<SnapshotStore> store_;
  std::shared_ptr<InFlight> in_flight_;
  std::function<void(const Snapshot&)> on_publish_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer deadline_timer_;
  std::chrono::steady_clock::time_point next_tick_;
  std::uint64_t generation_ = 0;
  bool running_ = false;
  bool timed_out_ = false;
  bool stopped_ = false;
  bool failing_ = false;  // latest published snapshot was a failure
  double last_success_ = 0;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace fabric
