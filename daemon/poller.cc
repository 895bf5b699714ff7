#include "daemon/poller.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace fabric {

void InFlight::Add() {
  std::lock_guard lock(mu_);
  ++count_;
}

void InFlight::Done() {
  {
    std::lock_guard lock(mu_);
    --count_;
  }
  cv_.notify_all();
}

bool InFlight::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return count_ == 0; });
}

Poller::Poller(boost::asio::io_context& io, boost::asio::thread_pool& workers,
               NamedCollector collector, std::shared_ptr<SnapshotStore> store,
               std::shared_ptr<InFlight> in_flight)
    : io_(io),
      workers_(workers),
      c_(std::move(collector)),
      store_(std::move(store)),
      in_flight_(std::move(in_flight)),
      tick_timer_(io),
      deadline_timer_(io) {
  // Carry the last success time over a reload so the gauge does not reset.
  if (auto old = store_->Latest(c_.name)) {
    last_success_ = old->last_success_seconds;
  }
}

void Poller::Start() {
  c_.collector->Start(io_);
  next_tick_ = std::chrono::steady_clock::now();
  Tick();
}

void Poller::Stop() {
  if (!stopped_) c_.collector->Stop();
  stopped_ = true;
  tick_timer_.cancel();
  deadline_timer_.cancel();
}

void Poller::Schedule() {
  auto now = std::chrono::steady_clock::now();
  next_tick_ += c_.config.interval;
  // Fell behind (slow collection, suspended host): skip missed ticks.
  if (next_tick_ <= now) next_tick_ = now + c_.config.interval;
  tick_timer_.expires_at(next_tick_);
  tick_timer_.async_wait(
      [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec && !self->stopped_) self->Tick();
      });
}

void Poller::Tick() {
  Schedule();
  if (running_) {
    spdlog::debug("{}: previous collection still running, tick skipped",
                  c_.name);
    return;
  }
  running_ = true;
  timed_out_ = false;
  std::uint64_t generation = ++generation_;
  started_ = std::chrono::steady_clock::now();
  deadline_timer_.expires_after(c_.config.timeout);
  deadline_timer_.async_wait([self = shared_from_this(),
                              generation](const boost::system::error_code& ec) {
    if (!ec) self->OnDeadline(generation);
  });
  in_flight_->Add();
  // c_ is fixed at construction, so reading it from the worker is safe.
  boost::asio::post(
      workers_, [self = shared_from_this(), generation, last = last_success_] {
        auto snapshot = RunCollection(self->c_, last);
        boost::asio::post(self->io_, [self, generation, snapshot] {
          self->OnDone(generation, snapshot);
        });
        self->in_flight_->Done();
      });
}

void Poller::OnDeadline(std::uint64_t generation) {
  if (stopped_ || generation != generation_ || !running_ || timed_out_) return;
  timed_out_ = true;
  spdlog::warn("{}: collection overran its timeout of {}s; reported as failed",
               c_.name,
               std::chrono::duration<double>(c_.config.timeout).count());
  auto snapshot = TimedOutSnapshot(c_.name, c_.config.timeout, last_success_);
  Publish(std::move(snapshot));
}

void Poller::Publish(std::shared_ptr<Snapshot> snapshot) {
  std::shared_ptr<const Snapshot> published = std::move(snapshot);
  store_->Publish(published);
  if (on_publish_) on_publish_(*published);
}

void Poller::OnDone(std::uint64_t generation,
                    std::shared_ptr<Snapshot> snapshot) {
  if (generation != generation_) return;
  running_ = false;
  deadline_timer_.cancel();
  if (stopped_) return;
  if (timed_out_) {
    spdlog::warn("{}: late collection returned after {:.3f}s", c_.name,
                 snapshot->duration_seconds);
    snapshot->success = false;
    snapshot->last_success_seconds = last_success_;
  } else if (snapshot->success) {
    last_success_ = snapshot->last_success_seconds;
    if (failing_) spdlog::info("{}: collection succeeds again", c_.name);
  } else if (!failing_) {
    // Logged on the transition only; the metric carries the ongoing state.
    spdlog::warn("{}: collection failed ({} inputs skipped)", c_.name,
                 snapshot->skipped);
  }
  failing_ = !snapshot->success;
  Publish(std::move(snapshot));
}

}  // namespace fabric
