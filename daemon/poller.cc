#include "daemon/poller.h"

#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/thread_annotations.h"

namespace fabric {
namespace {

// A snapshot this many samples smaller than the one it replaced (a lower
// series cap, a shorter peer list, a collector restarted with less) leaves
// its predecessor's memory, ~2 KB a sample, to the allocator, which keeps
// freed small blocks in its arenas instead of returning them to the system.
// So the predecessor is freed once nobody else holds it, and the free pages
// handed back (malloc_trim).
constexpr std::size_t kTrimAfterSamples = 10'000;

std::size_t SampleCount(const Snapshot& s) {
  std::size_t n = 0;
  for (const auto& f : s.families) n += f.metric.size();
  return n;
}

}  // namespace

void InFlight::Add() {
  MutexLock lock(mu_);
  ++count_;
}

void InFlight::Done() {
  {
    MutexLock lock(mu_);
    --count_;
  }
  cv_.notify_all();
}

bool InFlight::WaitIdle(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.wait_for(lock.native(), timeout,
                      [this]() REQUIRES(mu_) { return count_ == 0; });
}

// Shared by the poller and its thread, so an abandoned thread keeps the
// collector alive after the poller is gone.
struct Poller::State {
  NamedCollector c;
  std::shared_ptr<SnapshotStore> store;
  std::shared_ptr<InFlight> in_flight;
  std::function<void(const Snapshot&)> on_publish;

  // Publishes happen under mu, so snapshots of one collector reach the
  // store in order.
  mutable Mutex mu;
  std::condition_variable cv;
  bool stop GUARDED_BY(mu) = false;
  bool busy GUARDED_BY(mu) = false;       // a collection is running
  bool timed_out GUARDED_BY(mu) = false;  // ... and was reported as overrun
  bool failing GUARDED_BY(mu) = false;    // latest published snapshot failed
  std::chrono::steady_clock::time_point busy_since GUARDED_BY(mu);
  double last_success GUARDED_BY(mu) = 0;
  std::uint64_t completed GUARDED_BY(mu) = 0;

  // A replaced snapshot much larger than its successor, held until this is
  // the last reference (a scrape may still be rendering it, the collection
  // may still recycle it), then freed and its pages trimmed.
  std::shared_ptr<const Snapshot> retired GUARDED_BY(mu);

  void Publish(std::shared_ptr<Snapshot> snapshot) REQUIRES(mu) {
    std::shared_ptr<const Snapshot> published = std::move(snapshot);
    auto replaced = store->Latest(c.name);
    store->Publish(published);
    if (replaced &&
        SampleCount(*replaced) >= SampleCount(*published) + kTrimAfterSamples) {
      retired = std::move(replaced);
    }
    replaced.reset();
    if (retired && retired.use_count() == 1) {
      retired.reset();
      malloc_trim(0);
    }
    if (on_publish) on_publish(*published);
  }

  // The result of a finished collection.
  void Finished(std::shared_ptr<Snapshot> snapshot) REQUIRES(mu) {
    const std::string& name = c.name;
    if (timed_out) {
      spdlog::warn("{}: late collection returned after {:.3f}s", name,
                   snapshot->duration_seconds);
      snapshot->success = false;
      snapshot->last_success_seconds = last_success;
    } else if (snapshot->success) {
      last_success = snapshot->last_success_seconds;
      if (failing) spdlog::info("{}: collection succeeds again", name);
    } else if (!failing) {
      // Logged on the transition only; the metric carries the ongoing state.
      spdlog::warn("{}: collection failed ({} inputs skipped)", name,
                   snapshot->skipped);
    }
    failing = !snapshot->success;
    Publish(std::move(snapshot));
  }
};

Poller::Poller(NamedCollector collector, std::shared_ptr<SnapshotStore> store,
               std::shared_ptr<InFlight> in_flight)
    : name_(collector.name),
      timeout_(collector.config.timeout),
      state_(std::make_shared<State>()) {
  state_->c = std::move(collector);
  state_->store = std::move(store);
  state_->in_flight = std::move(in_flight);
  // Carry the last success time over a reload so the gauge does not reset.
  if (auto old = state_->store->Latest(name_)) {
    state_->last_success = old->last_success_seconds;
  }
}

Poller::~Poller() { Stop(); }

void Poller::set_on_publish(std::function<void(const Snapshot&)> f) {
  state_->on_publish = std::move(f);
}

void Poller::Start(boost::asio::io_context& io) {
  state_->c.collector->Start(io);
  thread_ = std::thread(Loop, state_);
}

void Poller::Loop(std::shared_ptr<State> s) {
  // "fm:<collector>" in top -H, ps -L and /proc/PID/task/*/comm (15 chars).
  pthread_setname_np(pthread_self(), ("fm:" + s->c.name).substr(0, 15).c_str());
  const auto publish_every = s->c.collector->PublishInterval();
  // Between two publishes the poller wakes only for a collector that
  // samples (collector.h); asked after every tick, as a collector may have
  // nothing to sample for a while (congestion with every counter quiet).
  const auto publish_step =
      std::max<std::chrono::microseconds>(s->c.config.interval, publish_every);
  // Whether the last step was to the next publish (no sampling).
  bool to_publish = false;
  auto next = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> published;
  MutexLock lock(s->mu);
  while (!s->cv.wait_until(lock.native(), next,
                           [&]() REQUIRES(s->mu) { return s->stop; })) {
    s->busy = true;
    s->timed_out = false;
    const auto started = std::chrono::steady_clock::now();
    s->busy_since = started;
    const double last = s->last_success;
    s->in_flight->Add();
    // Publish at the first tick and once PublishInterval() has passed;
    // sample only in between (collector.h).
    // (A tick that was a whole publish step away publishes even if it woke
    // a little early against the last publish's late start.)
    const bool publish =
        !published || to_publish || started - *published >= publish_every;
    lock.Unlock();
    std::shared_ptr<Snapshot> snapshot;
    if (publish) {
      published = started;
      snapshot = RunCollection(s->c, last);
    } else {
      try {
        s->c.collector->Sample();
      } catch (...) {
        // The next publish collects again and reports what fails.
      }
    }
    lock.Lock();
    s->busy = false;
    ++s->completed;
    if (!s->stop && snapshot) s->Finished(std::move(snapshot));
    s->in_flight->Done();
    const auto now = std::chrono::steady_clock::now();
    to_publish = !s->c.collector->Samples();
    const auto step = to_publish ? publish_step : s->c.config.interval;
    next += step;
    // Fell behind (slow collection, suspended host): skip missed ticks.
    if (next <= now) next = now + step;
  }
}

bool Poller::Supervise() {
  State& s = *state_;
  MutexLock lock(s.mu);
  if (s.stop || !s.busy) return false;
  const auto timeout = s.c.config.timeout;
  if (!s.timed_out &&
      std::chrono::steady_clock::now() - s.busy_since >= timeout) {
    s.timed_out = true;
    s.failing = true;
    spdlog::warn(
        "{}: collection overran its timeout of {}s; reported as failed", name_,
        std::chrono::duration<double>(timeout).count());
    s.Publish(TimedOutSnapshot(name_, timeout, s.last_success));
  }
  return s.timed_out;
}

bool Poller::Stop() {
  if (stopped_) return false;
  stopped_ = true;
  if (!thread_.joinable()) return false;
  state_->c.collector->Stop();
  bool abandoned;
  {
    MutexLock lock(state_->mu);
    state_->stop = true;
    abandoned = state_->busy;
  }
  state_->cv.notify_all();
  // An idle thread sees `stop` before it could start another collection,
  // so joining it is immediate; a busy one may be stuck in the kernel.
  if (abandoned) {
    thread_.detach();
  } else {
    thread_.join();
  }
  return abandoned;
}

bool Poller::stuck() const {
  MutexLock lock(state_->mu);
  return state_->busy && state_->timed_out;
}

bool Poller::running() const {
  MutexLock lock(state_->mu);
  return state_->busy;
}

std::uint64_t Poller::completed() const {
  MutexLock lock(state_->mu);
  return state_->completed;
}

}  // namespace fabric
