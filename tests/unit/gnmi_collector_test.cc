// The gnmi collector's threads, deadline and failure handling with the
// stream faked (MakeGnmiSwitchCollector's SubscribeCallFactory) and the
// clock injected: a switch that fails costs only its own series, a silent
// one is cut at its deadline and reconnected, one that comes back has its
// series again, and Stop() ends every stream. Bounded waits only (the
// streams run on threads), no timed assertions.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>

#include "collectors/gnmi_client.h"
#include "collectors/gnmi_switch.h"
#include "core/metric_sink.h"
#include "tests/support/families.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

using gnmi_switch::ClientOptions;
using gnmi_switch::ParsedNotification;
using gnmi_switch::SubscribeCall;
using testing::SampleValue;
using testing::WaitFor;

constexpr std::string_view kRxBytes = "fabric_switch_port_receive_bytes_total";

// How each fake switch behaves, by address.
enum class Behaviour { kServe, kRefuse, kSilent, kFlood };

struct Fake {
  std::mutex mu;
  std::map<std::string, Behaviour> behaviour;
  std::map<std::string, int> calls;  // streams made per address
  std::map<std::string, double> value;
  std::condition_variable wake;
  bool end_all = false;  // every open kServe stream ends ("dropped")
};

class FakeCall final : public SubscribeCall {
 public:
  FakeCall(Fake& f, std::string address)
      : f_(f), address_(std::move(address)) {}
  std::string Run(const Handlers& h) override {
    std::unique_lock lock(f_.mu);
    const Behaviour b = f_.behaviour[address_];
    if (b == Behaviour::kRefuse) return "connection refused";
    h.subscribed();
    if (b == Behaviour::kFlood) {
      // A target inventing a new port name in every update.
      ParsedNotification n;
      for (int i = 0; i < 70000; ++i)
        n.values.push_back(
            {{kRxBytes, "p" + std::to_string(i), {}, {}, {}, {}}, 1});
      lock.unlock();
      h.response(&n);
      lock.lock();
    }
    if (b == Behaviour::kServe) {
      ParsedNotification n;
      n.values.push_back(
          {{kRxBytes, "swp1", {}, {}, {}, {}}, f_.value[address_]});
      lock.unlock();
      h.response(&n);
      h.response(nullptr);  // sync_response
      lock.lock();
    }
    f_.wake.wait(lock, [&] {
      return cancelled_ || (b == Behaviour::kServe && f_.end_all);
    });
    return cancelled_ ? "cancelled" : "dropped";
  }
  void Cancel() override {
    std::lock_guard lock(f_.mu);
    cancelled_ = true;
    f_.wake.notify_all();
  }

 private:
  Fake& f_;
  const std::string address_;
  bool cancelled_ = false;
};

class GnmiCollectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<Collector> Make(std::chrono::milliseconds deadline) {
    GnmiSettings s;
    s.insecure = true;
    s.deadline = deadline;
    s.max_backoff = std::chrono::seconds(1);
    for (const char* name : {"good", "refused", "silent"})
      s.switches.push_back({name, std::string(name) + ":9339"});
    fake_.behaviour = {{"good:9339", Behaviour::kServe},
                       {"refused:9339", Behaviour::kRefuse},
                       {"silent:9339", Behaviour::kSilent}};
    fake_.value["good:9339"] = 1234;
    CollectorConfig config;
    config.settings = std::make_shared<SettingsOf<GnmiSettings>>(s);
    CollectorEnv env;
    env.clock = [this] { return now_.load(); };
    return MakeGnmiSwitchCollector(
        env, config, [this](const std::string& address, const ClientOptions&) {
          std::lock_guard lock(fake_.mu);
          ++fake_.calls[address];
          return std::make_unique<FakeCall>(fake_, address);
        });
  }

  testing::Families Collect(Collector& c) {
    MetricSink sink;
    EXPECT_TRUE(c.Collect(sink));
    return sink.Take();
  }

  std::optional<double> Value(Collector& c, const std::string& name,
                              const std::string& sw) {
    return SampleValue(Collect(c), name, {{"switch", sw}});
  }

  int Calls(const std::string& address) {
    std::lock_guard lock(fake_.mu);
    return fake_.calls[address];
  }

  Fake fake_;
  std::atomic<double> now_{1000};
};

TEST_F(GnmiCollectorTest, AFailingSwitchCostsOnlyItsOwnSeries) {
  auto c = Make(std::chrono::seconds(30));
  ASSERT_TRUE(WaitFor(
      [&] { return Value(*c, "fabric_gnmi_switch_up", "good") == 1.0; }));
  EXPECT_EQ(Value(*c, std::string(kRxBytes), "good"), 1234);
  EXPECT_EQ(Value(*c, "fabric_gnmi_switch_up", "refused"), 0);
  EXPECT_EQ(Value(*c, "fabric_gnmi_switch_up", "silent"), 0);
  EXPECT_FALSE(Value(*c, std::string(kRxBytes), "refused"));
  EXPECT_FALSE(Value(*c, std::string(kRxBytes), "silent"));
  // The refused one is retried (back-off 1 s) while the good one serves.
  ASSERT_TRUE(WaitFor([&] { return Calls("refused:9339") >= 2; }));
  EXPECT_EQ(Calls("good:9339"), 1);
  EXPECT_EQ(Value(*c, "fabric_gnmi_connects_total", "refused"), 0);
  c->Stop();  // cancels the open streams; returns once every thread ended
}

TEST_F(GnmiCollectorTest, SilentSwitchIsCutAtItsDeadline) {
  auto c = Make(std::chrono::milliseconds(200));
  Collect(*c);  // the first collection starts the streams (as --once)
  // Subscribed: its deadline runs from the (injected) time of the connect.
  ASSERT_TRUE(WaitFor([&] {
    return Value(*c, "fabric_gnmi_connects_total", "silent") == 1.0;
  }));
  // Nothing for longer than the deadline (the injected clock).
  now_ = now_ + 10;
  ASSERT_TRUE(WaitFor([&] {
    return Value(*c, "fabric_gnmi_connects_total", "silent") >= 2.0;
  }));
  EXPECT_EQ(Value(*c, "fabric_gnmi_switch_up", "silent"), 0);
  // The good one answered at the start and its clock did not move since:
  // cut too, reconnected, and serving again.
  ASSERT_TRUE(WaitFor([&] {
    return Calls("good:9339") >= 2 &&
           Value(*c, "fabric_gnmi_switch_up", "good") == 1.0;
  }));
  c->Stop();
}

TEST_F(GnmiCollectorTest, ADroppedStreamDropsTheSeriesUntilItServesAgain) {
  auto c = Make(std::chrono::seconds(30));
  ASSERT_TRUE(WaitFor(
      [&] { return Value(*c, std::string(kRxBytes), "good") == 1234.0; }));
  {
    std::lock_guard lock(fake_.mu);
    fake_.value["good:9339"] = 5678;
    fake_.behaviour["good:9339"] = Behaviour::kRefuse;
    fake_.end_all = true;
    fake_.wake.notify_all();
  }
  ASSERT_TRUE(WaitFor(
      [&] { return Value(*c, "fabric_gnmi_switch_up", "good") == 0.0; }));
  EXPECT_FALSE(Value(*c, std::string(kRxBytes), "good"));
  {
    std::lock_guard lock(fake_.mu);
    fake_.end_all = false;
    fake_.behaviour["good:9339"] = Behaviour::kServe;
  }
  ASSERT_TRUE(WaitFor(
      [&] { return Value(*c, std::string(kRxBytes), "good") == 5678.0; }));
  EXPECT_EQ(Value(*c, "fabric_gnmi_switch_up", "good"), 1);
  EXPECT_EQ(Value(*c, "fabric_gnmi_connects_total", "good"), 2);
  c->Stop();
}

TEST_F(GnmiCollectorTest, InventedSeriesAreCappedAndCounted) {
  auto c = Make(std::chrono::seconds(30));
  {
    std::lock_guard lock(fake_.mu);
    fake_.behaviour["good:9339"] = Behaviour::kFlood;
  }
  ASSERT_TRUE(WaitFor(
      [&] { return Value(*c, "fabric_gnmi_switch_up", "good") == 1.0; }));
  int kept = 0;
  for (const auto& f : Collect(*c)) {
    if (f.name == kRxBytes) kept = static_cast<int>(f.metric.size());
  }
  EXPECT_EQ(kept, 65536);
  EXPECT_EQ(SampleValue(Collect(*c), "fabric_gnmi_skipped_updates_total",
                        {{"switch", "good"}, {"reason", "series_cap"}}),
            70000 - 65536);
  c->Stop();
}

TEST_F(GnmiCollectorTest, ShardKeepsOnlyItsSwitches) {
  GnmiSettings s;
  s.insecure = true;
  for (int i = 0; i < 40; ++i)
    s.switches.push_back({"sw" + std::to_string(i), "a:1"});
  s.shard_index = 2;
  s.shard_count = 3;
  fake_.behaviour["a:1"] = Behaviour::kRefuse;
  CollectorConfig config;
  config.settings = std::make_shared<SettingsOf<GnmiSettings>>(s);
  auto c = MakeGnmiSwitchCollector(
      CollectorEnv{}, config,
      [this](const std::string& address, const ClientOptions&) {
        return std::make_unique<FakeCall>(fake_, address);
      });
  int mine = 0;
  for (const auto& f : Collect(*c)) {
    if (f.name != "fabric_gnmi_switch_up") continue;
    for (const auto& m : f.metric) {
      ++mine;
      EXPECT_TRUE(GnmiShardContains(m.label[0].value, 2, 3));
    }
  }
  EXPECT_GT(mine, 0);
  EXPECT_LT(mine, 40);
  c->Stop();
}

}  // namespace
}  // namespace fabric
