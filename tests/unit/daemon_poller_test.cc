// Tests for daemon/poller.h: a collection that overruns its timeout is
// published as failed with no samples, its late result still counts as
// failed, collections of one collector never overlap, and a stopped poller
// publishes nothing more. Waits poll for states; nothing asserts on time.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "daemon/poller.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 400; ++i) {  // up to ~20 s
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// A collector whose Collect() blocks until released, counting calls and
// the peak number of concurrent calls.
class GateCollector : public Collector {
 public:
  std::string_view Name() const override { return "gate"; }
  void Start(boost::asio::io_context&) override {
    ++starts_;
    start_thread_ = std::this_thread::get_id();
  }
  void Stop() override { ++stops_; }
  bool Collect(MetricSink& sink) noexcept override {
    int now = ++active_;
    int seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    ++calls_;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return open_; });
    }
    sink.Gauge("fabric_gate", "test", {{"device", "d"}}, calls_.load());
    --active_;
    return ok_;
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  std::atomic<int> calls_{0};
  std::atomic<int> active_{0};
  std::atomic<int> peak_{0};
  std::atomic<bool> ok_{true};
  std::atomic<int> starts_{0}, stops_{0};
  std::thread::id start_thread_;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class PollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    gate_->Open();
    OnIo([this] {
      if (poller_) poller_->Stop();
      supervise_.cancel();
    });
    in_flight_->WaitIdle(20s);
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  // Starts a poller of `collector` with a 1 ms interval.
  void StartEveryMs(const std::string& name,
                    std::shared_ptr<Collector> collector) {
    NamedCollector c;
    c.name = name;
    c.config.interval = 1ms;
    c.collector = std::move(collector);
    OnIo([&] {
      poller_ = std::make_unique<Poller>(c, store_, in_flight_);
      poller_->Start(io_);
    });
  }
  // Runs `f` on the io_context thread (as the daemon does) and waits.
  void OnIo(std::function<void()> f) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
  void Start(std::chrono::microseconds interval,
             std::chrono::microseconds timeout) {
    NamedCollector c;
    c.name = "gate";
    c.config.interval = interval;
    c.config.timeout = timeout;
    c.collector = gate_;
    OnIo([this, c] {
      poller_ = std::make_unique<Poller>(c, store_, in_flight_);
      poller_->set_on_publish([this](const Snapshot& s) {
        std::lock_guard lock(history_mu_);
        history_.push_back(s);
      });
      poller_->Start(io_);
      Supervise();
    });
  }
  // The daemon's supervision, every 5 ms here.
  void Supervise() {
    stuck_ = poller_->Supervise();
    supervise_.expires_after(5ms);
    supervise_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Supervise();
    });
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      guard_ = boost::asio::make_work_guard(io_);
  boost::asio::steady_timer supervise_{io_};
  std::atomic<bool> stuck_{false};
  std::shared_ptr<SnapshotStore> store_ = std::make_shared<SnapshotStore>();
  std::shared_ptr<InFlight> in_flight_ = std::make_shared<InFlight>();
  std::shared_ptr<GateCollector> gate_ = std::make_shared<GateCollector>();
  std::unique_ptr<Poller> poller_;
  std::mutex history_mu_;
  std::vector<Snapshot> history_;  // every publish, in order
  std::vector<Snapshot> History() {
    std::lock_guard lock(history_mu_);
    return history_;
  }
  std::thread thread_;
};

TEST_F(PollerTest, OverrunIsPublishedAsFailedWithoutSamples) {
  Start(10ms, 50ms);
  ASSERT_TRUE(WaitFor([&] { return store_->Latest("gate") != nullptr; }));
  auto timed_out = store_->Latest("gate");
  EXPECT_FALSE(timed_out->success);
  EXPECT_TRUE(timed_out->stuck);
  EXPECT_TRUE(timed_out->families.empty());
  EXPECT_TRUE(WaitFor([&] { return stuck_.load(); }));
  EXPECT_EQ(timed_out->last_success_seconds, 0);
  // Many ticks have passed while blocked, yet only one collection started.
  EXPECT_EQ(gate_->calls_.load(), 1);

  gate_->Open();
  // The late result is published with its samples but still as a failure;
  // later collections run normally and succeed.
  ASSERT_TRUE(WaitFor([&] {
    auto s = store_->Latest("gate");
    return s && s->success;
  }));
  auto history = History();
  ASSERT_GE(history.size(), 3u);
  EXPECT_FALSE(history[0].success);  // the deadline
  EXPECT_TRUE(history[0].families.empty());
  EXPECT_FALSE(history[1].success);  // the late return
  EXPECT_FALSE(history[1].stuck);
  ASSERT_EQ(history[1].families.size(), 1u);
  EXPECT_EQ(history[1].families[0].metric[0].gauge.value, 1);
  EXPECT_EQ(history[1].last_success_seconds, 0);
  EXPECT_TRUE(history[2].success);
  EXPECT_GT(store_->Latest("gate")->last_success_seconds, 0);
  EXPECT_EQ(gate_->peak_.load(), 1);
}

TEST_F(PollerTest, NeverTwoCollectionsAtOnce) {
  gate_->Open();
  Start(1ms, 1s);
  ASSERT_TRUE(WaitFor([&] { return gate_->calls_.load() >= 50; }));
  EXPECT_EQ(gate_->peak_.load(), 1);
  auto s = store_->Latest("gate");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->success);
}

TEST_F(PollerTest, FailedCollectionKeepsLastSuccessTime) {
  gate_->Open();
  Start(5ms, 1s);
  ASSERT_TRUE(WaitFor([&] {
    auto s = store_->Latest("gate");
    return s && s->success;
  }));
  gate_->ok_ = false;
  ASSERT_TRUE(WaitFor([&] {
    auto s = store_->Latest("gate");
    return s && !s->success;
  }));
  auto failed = store_->Latest("gate");
  EXPECT_GT(failed->last_success_seconds, 0);
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  EXPECT_LT(failed->last_success_seconds, now + 1e-9);
  // A failed collection exports what it gathered itself, never older data.
  ASSERT_EQ(failed->families.size(), 1u);
}

TEST_F(PollerTest, StoppedPollerPublishesNothingMore) {
  Start(10ms, 10s);
  ASSERT_TRUE(WaitFor([&] { return gate_->calls_.load() == 1; }));
  bool abandoned = false;
  OnIo([&] { abandoned = poller_->Stop(); });
  // The collection was in flight: its thread is left to finish it.
  EXPECT_TRUE(abandoned);
  EXPECT_TRUE(poller_->running());
  gate_->Open();
  ASSERT_TRUE(in_flight_->WaitIdle(20s));
  EXPECT_FALSE(poller_->running());
  EXPECT_EQ(store_->Latest("gate"), nullptr);
  EXPECT_EQ(gate_->calls_.load(), 1);
  EXPECT_EQ(gate_->stops_.load(), 1);
}

// A collector that publishes less often than it samples (congestion):
// Collect() at the first tick and once per PublishInterval(), Sample() at
// the ticks between.
class SamplingCollector : public Collector {
 public:
  std::string_view Name() const override { return "sampling"; }
  bool Collect(MetricSink&) noexcept override {
    ++collects;
    return true;
  }
  void Sample() noexcept override { ++samples; }
  std::chrono::microseconds PublishInterval() const override { return 1h; }
  std::atomic<int> collects{0}, samples{0};
};

TEST_F(PollerTest, SamplesBetweenPublishes) {
  auto sampling = std::make_shared<SamplingCollector>();
  StartEveryMs("sampling", sampling);
  ASSERT_TRUE(WaitFor([&] { return sampling->samples.load() >= 20; }));
  EXPECT_EQ(sampling->collects.load(), 1);
  ASSERT_NE(store_->Latest("sampling"), nullptr);
  EXPECT_GE(poller_->completed(), 21u);
}

// A collector with nothing to sample for a while (congestion with every
// counter quiet, issue 44 item 4): while Samples() is false the poller
// steps from publish to publish and never calls Sample(); once it is true
// again, samples resume between the publishes.
class QuietCollector : public SamplingCollector {
 public:
  std::chrono::microseconds PublishInterval() const override { return 20ms; }
  bool Samples() const override { return !quiet.load(); }
  std::atomic<bool> quiet{true};
};

TEST_F(PollerTest, NoSamplesWhileTheCollectorHasNoneToTake) {
  auto quiet = std::make_shared<QuietCollector>();
  StartEveryMs("quiet", quiet);
  ASSERT_TRUE(WaitFor([&] { return quiet->collects.load() >= 5; }));
  EXPECT_EQ(quiet->samples.load(), 0);
  quiet->quiet = false;
  ASSERT_TRUE(WaitFor([&] { return quiet->samples.load() >= 5; }));
}

// The lifecycle hooks run on the io_context thread, once each; an idle
// poller's thread is joined at Stop().
TEST_F(PollerTest, StartAndStopHooksRunOnceOnTheIoThread) {
  gate_->Open();
  Start(1s, 10s);
  ASSERT_TRUE(WaitFor([&] { return store_->Latest("gate") != nullptr; }));
  EXPECT_EQ(gate_->starts_.load(), 1);
  EXPECT_EQ(gate_->start_thread_, thread_.get_id());
  bool abandoned = true;
  OnIo([&] { abandoned = poller_->Stop(); });
  EXPECT_FALSE(abandoned);
  OnIo([&] { poller_->Stop(); });  // again: nothing more
  EXPECT_EQ(gate_->stops_.load(), 1);
  EXPECT_EQ(gate_->calls_.load(), 1);
}

}  // namespace
}  // namespace fabric
