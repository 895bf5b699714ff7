// daemon/self_check_watchdog: the systemd watchdog rule with the notifier
// and the clock injected. With a real http::Server on loopback: a wedged
// render thread (a collectable stuck in Collect) stops WATCHDOG=1 and says
// why, a slow but working render keeps it coming. With a scripted check:
// one failed check never stops it, W/2 without an answer does. The clock
// is a fake one the test moves; no timed assertions.
#include "daemon/self_check_watchdog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/collectable.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "http/server.h"

namespace fabric {
namespace {

namespace asio = boost::asio;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Clock = SelfCheckWatchdog::Clock;

// Collect() blocks until Release() (or 60 s, so a bug fails instead of
// hanging): a render thread wedged for as long as the test wants.
class GateCollectable : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::unique_lock lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, seconds(60), [this] { return released_; });
    return {};
  }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(30), [this] { return entered_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool entered_ = false;
  bool released_ = false;
};

// A watchdog over a real server whose render goes through `gate`.
class WatchdogHarness {
 public:
  explicit WatchdogHarness(std::chrono::microseconds period)
      : gate_(std::make_shared<GateCollectable>()) {
    std::string error;
    auto security = http::MakeSecurity(http::WebConfig{}, &error);
    server_ = http::Server::Start(io_, "127.0.0.1:0", *security, {gate_},
                                  nullptr, &error);
    EXPECT_TRUE(server_) << error;
    SelfCheckWatchdog::Hooks hooks;
    hooks.check = [this](std::chrono::milliseconds timeout,
                         std::chrono::milliseconds recent,
                         SelfCheckWatchdog::Done done) {
      ++checks_started_;
      RunScrapeCheck(io_, *server_, false, timeout, recent,
                     [this, done](SelfCheckResult r) {
                       results_.push_back(r);
                       done(r);
                     });
    };
    hooks.notify = [this](const char* state) { notified_.push_back(state); };
    hooks.now = [this] { return now_; };
    watchdog_.emplace(io_, period, std::move(hooks));
  }
  ~WatchdogHarness() {
    gate_->Release();
    watchdog_.reset();
    server_.reset();
  }
  // Moves the fake clock to `t` after the start and ticks.
  void TickAt(Clock::duration t) {
    now_ = start_ + t;
    watchdog_->Tick();
  }
  // Runs the event loop until one more check has finished.
  SelfCheckResult NextResult() {
    const std::size_t before = results_.size();
    while (results_.size() == before && io_.run_one() > 0) {
    }
    return results_.back();
  }
  int fed() const {
    return static_cast<int>(
        std::count(notified_.begin(), notified_.end(), "WATCHDOG=1"));
  }
  GateCollectable& gate() { return *gate_; }
  SelfCheckWatchdog& watchdog() { return *watchdog_; }
  int checks_started() const { return checks_started_; }

 private:
  asio::io_context io_;
  std::shared_ptr<GateCollectable> gate_;
  std::unique_ptr<http::Server> server_;
  const Clock::time_point start_ = Clock::time_point{} + std::chrono::hours(1);
  Clock::time_point now_ = start_;
  std::vector<std::string> notified_;
  std::vector<SelfCheckResult> results_;
  int checks_started_ = 0;
  std::optional<SelfCheckWatchdog> watchdog_;
};

// The finding: with the render thread wedged, the old check (`GET /`) was
// answered and WATCHDOG=1 kept going. The check now renders, gets no
// answer, and feeding stops once none has answered for W/2.
TEST(SelfCheckWatchdogTest, WedgedRenderStopsFeedingAndSaysWhy) {
  // W = 2 s: the check's own (real) timeout is 1 s.
  WatchdogHarness h(seconds(2));
  h.TickAt(seconds(0));
  EXPECT_EQ(h.fed(), 1);  // no check has failed yet
  ASSERT_TRUE(h.gate().WaitEntered());
  const SelfCheckResult r = h.NextResult();  // after the 1 s timeout
  EXPECT_FALSE(r.answered);
  EXPECT_THAT(r.why, HasSubstr("render did not finish within 1000ms"));
  h.TickAt(std::chrono::milliseconds(300));  // W/6 later: still fed
  EXPECT_EQ(h.fed(), 2);
  EXPECT_TRUE(h.watchdog().feeding());
  h.TickAt(std::chrono::milliseconds(1000));  // W/2 without an answer
  EXPECT_FALSE(h.watchdog().feeding());
  h.TickAt(std::chrono::milliseconds(1300));
  EXPECT_EQ(h.fed(), 2);
}

// A render slower than several ticks, but finishing: fed all along.
TEST(SelfCheckWatchdogTest, SlowButWorkingRenderKeepsFeeding) {
  WatchdogHarness h(seconds(30));  // the shipped WatchdogSec
  h.TickAt(seconds(0));
  ASSERT_TRUE(h.gate().WaitEntered());
  h.TickAt(seconds(5));
  h.TickAt(seconds(10));
  EXPECT_EQ(h.checks_started(), 1);  // one at a time
  h.gate().Release();
  const SelfCheckResult r = h.NextResult();  // answered at t = 10 s
  EXPECT_TRUE(r.answered) << r.why;
  h.TickAt(seconds(15));
  h.TickAt(seconds(20));
  EXPECT_EQ(h.fed(), 5);
  EXPECT_TRUE(h.watchdog().feeding());
}

// The rule on scripted outcomes (W = 30 s: a tick every 5 s, stale at 15 s).
TEST(SelfCheckWatchdogTest, OneFailedCheckLeavesNoGap) {
  asio::io_context io;
  auto now = Clock::time_point{} + std::chrono::hours(1);
  std::deque<bool> outcomes = {false, false, true, false, false, false, false};
  std::vector<bool> fed_at;
  int fed = 0;
  SelfCheckWatchdog::Hooks hooks;
  hooks.check = [&](std::chrono::milliseconds, std::chrono::milliseconds,
                    SelfCheckWatchdog::Done done) {
    const bool ok = outcomes.front();
    outcomes.pop_front();
    done({ok, false, ok ? "" : "connect: refused"});
  };
  hooks.notify = [&](const char*) { ++fed; };
  hooks.now = [&] { return now; };
  SelfCheckWatchdog w(io, seconds(30), std::move(hooks));
  EXPECT_EQ(w.check_period(), std::chrono::milliseconds(5000));
  EXPECT_EQ(w.check_timeout(), std::chrono::milliseconds(15000));
  for (int tick = 0; tick < 7; ++tick) {
    const int before = fed;
    w.Tick();
    fed_at.push_back(fed > before);
    now += seconds(5);
  }
  // t=0 fail, 5 fail, 10 ok, 15 fail, 20 fail, 25 fail (stale: 15 s since
  // the answer at 10), 30 fail.
  EXPECT_EQ(fed_at,
            (std::vector<bool>{true, true, true, true, true, false, false}));
  // Collections wedged: not fed even though /metrics answers.
  outcomes = {true, true};
  w.Tick();
  EXPECT_TRUE(w.feeding());
  w.SetCollections(false, "3 of 3 collectors stuck");
  const int before = fed;
  w.Tick();
  EXPECT_EQ(fed, before);
  EXPECT_FALSE(w.feeding());
}

}  // namespace
}  // namespace fabric
