// Probing many peers: probes due within the batch window share a wake-up
// (an engine over an injected transport that answers every probe), lazy
// receive with hundreds of peers loses nothing (200 responders on loopback),
// and the probe socket counts what its receive buffer dropped.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include "core/metric_sink.h"
#include "probe/engine.h"
#include "probe/histogram.h"
#include "probe/udp_transport.h"

namespace fabric::probe {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::udp;
using Clock = std::chrono::steady_clock;

TEST(ProbeBatchTest, WindowIsATenthOfTheIntervalAtMostTenMs) {
  EXPECT_EQ(BatchWindow(1ms), 100us);
  EXPECT_EQ(BatchWindow(50ms), 5ms);
  EXPECT_EQ(BatchWindow(100ms), 10ms);
  EXPECT_EQ(BatchWindow(1s), 10ms);
}

TEST(ProbeBatchTest, LazyReceiveWhereAProbeFallsDueEveryTenMsOrLess) {
  EXPECT_TRUE(LazyReceiveFits(1ms, 1));
  EXPECT_TRUE(LazyReceiveFits(10ms, 1));
  EXPECT_FALSE(LazyReceiveFits(11ms, 1));
  EXPECT_TRUE(LazyReceiveFits(100ms, 100));  // 1,000 probes/s
  EXPECT_TRUE(LazyReceiveFits(1s, 1000));
  EXPECT_FALSE(LazyReceiveFits(1s, 50));
  EXPECT_FALSE(LazyReceiveFits(1ms, 0));
}

TEST(ProbeBatchTest, ParseDropCountReadsSoRxqOvfl) {
  alignas(cmsghdr) char
      control[CMSG_SPACE(sizeof(std::uint32_t)) + CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SO_TIMESTAMP;  // something else first
  c->cmsg_len = CMSG_LEN(sizeof(int));
  c = CMSG_NXTHDR(&msg, c);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SO_RXQ_OVFL;
  c->cmsg_len = CMSG_LEN(sizeof(std::uint32_t));
  std::uint32_t drops = 4711;
  std::memcpy(CMSG_DATA(c), &drops, sizeof(drops));
  EXPECT_EQ(ParseDropCount(msg), 4711u);

  msg.msg_controllen = CMSG_SPACE(sizeof(int));  // only the first one
  EXPECT_EQ(ParseDropCount(msg), std::nullopt);
}

// A flood into a socket nobody reads: what did not fit is counted, and
// what was read plus what was dropped is every datagram sent. The count
// rides on each datagram as of when it was queued, so one sent after the
// flood brings it.
TEST(ProbeBatchTest, UdpTransportCountsWhatItsReceiveBufferDropped) {
  boost::asio::io_context io;
  UdpTransport t(io, Endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  std::uint64_t received = 0;
  Transport::Handlers h;
  h.on_receive = [&](const Received&) { ++received; };
  std::string error;
  ASSERT_TRUE(t.Start(std::move(h), &error)) << error;
  ASSERT_TRUE(t.SetLazyReceive(true)) << "no kernel receive stamps here";
  ASSERT_TRUE(t.ReceiveDrops().has_value());
  EXPECT_EQ(*t.ReceiveDrops(), 0u);

  udp::socket s(io,
                udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  std::array<std::uint8_t, kPacketBytes> packet{};
  constexpr std::uint64_t kFlood = 20000;
  for (std::uint64_t i = 0; i < kFlood; ++i) {
    s.send_to(boost::asio::buffer(packet), t.local_endpoint());
  }
  auto drain = [&] {
    std::uint64_t before;
    do {
      before = received;
      t.Poll();
    } while (received != before);
  };
  drain();
  s.send_to(boost::asio::buffer(packet), t.local_endpoint());
  drain();
  // 20,000 datagrams do not fit in the buffer (about 1 KiB each as the
  // kernel counts them, 2 MiB at most).
  EXPECT_GT(*t.ReceiveDrops(), 0u);
  EXPECT_EQ(received + *t.ReceiveDrops(), kFlood + 1);
  t.Stop();
}

// A transport that answers every probe the moment it is sent, delivered at
// the next Poll() (lazy receive), stamped as arriving `delay` after the send
// (10 µs unless set).
class AnsweringTransport : public Transport {
 public:
  explicit AnsweringTransport(const Hmac& hmac,
                              std::chrono::nanoseconds delay = 10us,
                              bool reversed = false)
      : hmac_(hmac), delay_ns_(delay.count()), reversed_(reversed) {}
  std::string_view Name() const override { return "udp"; }
  bool Start(Handlers h, std::string*) override {
    handlers_ = std::move(h);
    return true;
  }
  void Stop() override { handlers_ = {}; }
  bool Healthy() const override { return true; }
  std::string LastError() const override { return ""; }
  bool CanReach(const Endpoint&) const override { return true; }
  std::optional<Timestamp> Send(const Endpoint& peer,
                                std::span<const std::uint8_t> bytes,
                                std::uint64_t) override {
    Timestamp tx{RealtimeNs(), 0};
    auto p = Decode(bytes, hmac_, nullptr);
    if (!p) return tx;
    p->type = MessageType::kAnswer;
    p->t2_ns = p->t3_ns = tx.software_ns + 5'000;
    queued_.push_back({Encode(*p, hmac_), peer, tx.software_ns + delay_ns_});
    return tx;
  }
  bool Reply(const Source&, std::span<const std::uint8_t>) override {
    return false;
  }
  bool SetLazyReceive(bool on) override { return on; }
  void Poll() override {
    // Reversed: the last probe's answer first (what a path with several
    // routes, or an RDMA completion queue, may do).
    if (reversed_) std::reverse(queued_.begin(), queued_.end());
    while (!queued_.empty()) {
      Queued q = std::move(queued_.front());
      queued_.pop_front();
      Received r;
      r.bytes = q.bytes;
      r.from.udp = q.from;
      r.from.key = q.from.address().to_string();
      r.rx.software_ns = q.rx_ns;
      if (handlers_.on_receive) handlers_.on_receive(r);
    }
  }

 private:
  struct Queued {
    Bytes bytes;
    Endpoint from;
    std::int64_t rx_ns;
  };
  Hmac hmac_;
  std::int64_t delay_ns_;
  bool reversed_;
  Handlers handlers_;
  std::deque<Queued> queued_;
};

std::vector<ResolvedPeer> Peers(int n, int first_port) {
  std::vector<ResolvedPeer> peers;
  for (int i = 0; i < n; ++i) {
    auto port = static_cast<std::uint16_t>(first_port + i);
    peers.push_back(
        {{"p" + std::to_string(i), "127.0.0.1", port},
         Endpoint(boost::asio::ip::make_address("127.0.0.1"), port)});
  }
  return peers;
}

// An engine whose one transport answers every probe it sends; null (with
// a test failure) when it does not start.
std::shared_ptr<Engine> StartAnswered(boost::asio::io_context& io,
                                      const Hmac& hmac,
                                      const EngineOptions& o) {
  std::vector<std::unique_ptr<Transport>> ts;
  ts.push_back(std::make_unique<AnsweringTransport>(hmac));
  auto engine = std::make_shared<Engine>(io, hmac, o, std::move(ts));
  std::string error;
  if (!engine->Start(&error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  return engine;
}

// fabric_probe_sent_total by peer, as Emit writes it.
std::map<std::string, double> SentByPeer(const Engine& engine) {
  MetricSink sink;
  std::string error;
  EXPECT_TRUE(engine.Emit(sink, &error)) << error;
  std::map<std::string, double> sent;
  for (const auto& family : sink.Take()) {
    if (family.name != "fabric_probe_sent_total") continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == "peer") sent[l.value] = m.counter.value;
      }
    }
  }
  return sent;
}

// What one run of an answered engine saw.
struct AnsweredRun {
  Clock::duration elapsed{};
  std::map<std::string, std::uint64_t> totals;
  std::map<std::string, double> sent_by_peer;
};

// Runs an engine probing `peers` answered peers every `interval` for
// `run_for` (key byte `key`; probe_timeout 1 s), then stops it; nothing
// (with a test failure) when the engine does not start.
std::optional<AnsweredRun> RunAnswered(std::uint8_t key,
                                       Clock::duration interval,
                                       std::size_t peers,
                                       Clock::duration run_for) {
  boost::asio::io_context io;
  Hmac hmac(Key(32, key));
  EngineOptions o;
  o.interval = std::chrono::duration_cast<decltype(o.interval)>(interval);
  o.probe_timeout = 1s;
  auto engine = StartAnswered(io, hmac, o);
  if (!engine) return std::nullopt;
  AnsweredRun run;
  engine->SetPeers(Peers(peers, 20000));
  auto start = Clock::now();
  io.run_for(run_for);
  run.elapsed = Clock::now() - start;
  run.sent_by_peer = SentByPeer(*engine);
  run.totals = engine->Totals();
  engine->Stop();
  return run;
}

// 100 peers every 100 ms (1,000 probes/s): consecutive ticks are at least a
// batch window (10 ms) apart (a tick sends all that falls due within it), so
// the engine wakes at most 100 times a second however the machine schedules
// it, and every probe is answered.
TEST(ProbeBatchTest, HundredPeersShareWakeUps) {
  constexpr auto kInterval = 100ms;
  auto run = RunAnswered(3, kInterval, 100, 1500ms);
  ASSERT_TRUE(run);
  auto& t = run->totals;

  EXPECT_GE(t["sent"], 500u);  // every peer probed at least 5 times
  EXPECT_EQ(t["lost"], 0u);
  // Answers to the last tick's probes wait for the next one.
  EXPECT_GE(t["received"] + 100, t["sent"]);
  EXPECT_LE(t["wakeups"], run->elapsed / BatchWindow(kInterval) + 1);
  EXPECT_LE(t["wakeups"] * 4, t["sent"]) << "fewer than 4 probes per tick";
}

// 1,000 peers every 200 ms: the schedule (a heap, a tick pops only what is
// due) probes every peer every interval, never twice within one (jitter
// keeps consecutive probes of a peer 0.9 interval apart at least), and
// loses nothing.
TEST(ProbeBatchTest, ThousandPeersEachProbedEveryIntervalOnce) {
  constexpr auto kInterval = 200ms;
  auto run = RunAnswered(7, kInterval, 1000, 1100ms);
  ASSERT_TRUE(run);
  auto& sent = run->sent_by_peer;
  auto& t = run->totals;

  ASSERT_EQ(sent.size(), 1000u);
  // A peer starts within the first interval, then one probe per 0.9-1.1
  // interval: at least elapsed / (1.1 interval) - 1 of them, at most
  // elapsed / (0.9 interval) + 1 (what a run of any speed allows).
  double intervals = std::chrono::duration<double>(run->elapsed) / kInterval;
  for (const auto& [peer, n] : sent) {
    EXPECT_GE(n, std::floor(intervals / 1.1) - 1) << peer;
    EXPECT_LE(n, intervals / 0.9 + 1) << peer;
  }
  EXPECT_EQ(t["lost"], 0u);
  EXPECT_GE(t["received"] + 1000, t["sent"]);
}

// Answers read in the reverse order of their probes all find their probe
// (pending probes are kept in send order and found by sequence number).
TEST(ProbeBatchTest, AnswersInReverseOrderAllMatch) {
  boost::asio::io_context io;
  Hmac hmac(Key(32, 8));
  EngineOptions o;
  o.interval = 10ms;
  o.probe_timeout = 1s;
  std::vector<std::unique_ptr<Transport>> ts;
  ts.push_back(std::make_unique<AnsweringTransport>(hmac, 10us, true));
  auto engine = std::make_shared<Engine>(io, hmac, o, std::move(ts));
  std::string error;
  ASSERT_TRUE(engine->Start(&error)) << error;
  engine->SetPeers(Peers(50, 20000));
  auto stop = Clock::now() + 20s;
  while (engine->Totals()["received"] < 2000 && Clock::now() < stop) {
    io.run_for(10ms);
  }
  auto t = engine->Totals();
  engine->Stop();
  EXPECT_GE(t["received"], 2000u);
  EXPECT_EQ(t["lost"], 0u);
  EXPECT_GE(t["received"] + 50, t["sent"]);  // the last tick's in flight
  EXPECT_LE(t["received"], t["sent"]);
}

// ExportTo into a histogram that held another one's buckets writes the
// same as a fresh Export().
TEST(ProbeBatchTest, HistogramExportToOverwritesReusedStorage) {
  RttHistogram a, b;
  for (double s : {3e-6, 40e-6, 1e-3, 2.0}) a.Observe(s);
  b.Observe(7e-6);
  prometheus::ClientMetric::Histogram reused;
  a.ExportTo(reused);
  b.ExportTo(reused);
  auto fresh = b.Export();
  EXPECT_EQ(reused.sample_count, fresh.sample_count);
  EXPECT_EQ(reused.sample_sum, fresh.sample_sum);
  ASSERT_EQ(reused.bucket.size(), kRttBuckets.size() + 1);
  ASSERT_EQ(reused.bucket.size(), fresh.bucket.size());
  for (std::size_t i = 0; i < fresh.bucket.size(); ++i) {
    EXPECT_EQ(reused.bucket[i].cumulative_count,
              fresh.bucket[i].cumulative_count);
    EXPECT_EQ(reused.bucket[i].upper_bound, fresh.bucket[i].upper_bound);
  }
  EXPECT_EQ(fresh.bucket[kRttBuckets.size()].cumulative_count, 1u);
}

// Peers dropped while their probes are in flight (answers queued for the
// next tick): those answers match nothing, the kept peers keep counting,
// and nothing is lost.
TEST(ProbeBatchTest, DroppingPeersWithProbesInFlight) {
  boost::asio::io_context io;
  Hmac hmac(Key(32, 6));
  EngineOptions o;
  o.interval = 10ms;
  o.probe_timeout = 1s;
  auto engine = StartAnswered(io, hmac, o);
  ASSERT_TRUE(engine);
  auto peers = Peers(20, 20000);
  engine->SetPeers(peers);
  auto run_until_sent = [&](std::uint64_t n) {
    auto stop = Clock::now() + 20s;
    while (engine->Totals()["sent"] < n && Clock::now() < stop) {
      io.run_for(5ms);
    }
  };
  run_until_sent(200);
  peers.resize(10);
  engine->SetPeers(peers);
  io.poll();  // applies the new list
  auto kept = engine->Totals()["sent"];
  run_until_sent(kept + 200);
  auto t = engine->Totals();
  engine->Stop();
  EXPECT_GE(t["sent"], kept + 200);
  EXPECT_EQ(t["lost"], 0u);
  EXPECT_GE(t["received"] + 10, t["sent"]);  // the last tick's in flight
  EXPECT_LE(t["received"], t["sent"]);
}

// An answer stamped later than probe_timeout is lost, though it is read at
// the next tick, before the probe's expiry: the count does not depend on
// when the engine got round to it.
TEST(ProbeBatchTest, AnswerLaterThanProbeTimeoutIsLostWhenReadEarly) {
  boost::asio::io_context io;
  Hmac hmac(Key(32, 5));
  EngineOptions o;
  o.interval = 1ms;
  o.probe_timeout = 5ms;
  std::vector<std::unique_ptr<Transport>> ts;
  ts.push_back(std::make_unique<AnsweringTransport>(hmac, 6ms));
  auto engine = std::make_shared<Engine>(io, hmac, o, std::move(ts));
  std::string error;
  ASSERT_TRUE(engine->Start(&error)) << error;
  engine->SetPeers(Peers(1, 20000));
  auto stop = Clock::now() + 20s;
  while (engine->Totals()["lost"] < 50 && Clock::now() < stop) {
    io.run_for(10ms);
  }
  auto t = engine->Totals();
  engine->Stop();
  EXPECT_GE(t["lost"], 50u);
  EXPECT_EQ(t["received"], 0u);
  EXPECT_LE(t["lost"], t["sent"]);
}

// A prober with 200 peers (200 responders on loopback, one io thread, 2,000
// probes/s) receives lazily, and its socket holds every answer: none lost,
// none dropped.
TEST(ProbeBatchTest, LazyReceiveWithTwoHundredPeersLosesNothing) {
  boost::asio::io_context io;
  Hmac hmac(Key(32, 4));
  auto make = [&](EngineOptions o, UdpTransport** raw) {
    auto t = std::make_unique<UdpTransport>(
        io, Endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    *raw = t.get();
    std::vector<std::unique_ptr<Transport>> ts;
    ts.push_back(std::move(t));
    auto e = std::make_shared<Engine>(io, hmac, o, std::move(ts));
    std::string error;
    EXPECT_TRUE(e->Start(&error)) << error;
    return e;
  };
  std::vector<std::shared_ptr<Engine>> responders;
  std::vector<ResolvedPeer> peers;
  for (int i = 0; i < 200; ++i) {
    UdpTransport* t;
    responders.push_back(make({}, &t));
    auto port = t->local_endpoint().port();
    peers.push_back(
        {{"r" + std::to_string(i), "127.0.0.1", port}, t->local_endpoint()});
  }
  EngineOptions o;
  o.interval = 100ms;
  o.probe_timeout = 1s;
  UdpTransport* prober_transport;
  auto prober = make(o, &prober_transport);
  prober->SetPeers(peers);
  // Past 1 s plus the expiry slack, so that the first probes are resolved
  // (answered or lost) by the end; 20 s bounds a stalled machine.
  auto stop = Clock::now() + 20s;
  while (prober->Totals()["received"] < 4000 && Clock::now() < stop) {
    io.run_for(10ms);
  }
  auto t = prober->Totals();
  EXPECT_TRUE(prober_transport->lazy());
  EXPECT_GE(t["received"], 4000u);
  EXPECT_EQ(t["lost"], 0u);
  ASSERT_TRUE(prober_transport->ReceiveDrops().has_value());
  EXPECT_EQ(*prober_transport->ReceiveDrops(), 0u);
  EXPECT_LE(t["wakeups"] * 4, t["sent"]) << "fewer than 4 probes per tick";
  std::uint64_t answered = 0;
  for (auto& r : responders) answered += r->Totals()["answered"];
  EXPECT_GE(answered, t["received"]);
  prober->Stop();
  for (auto& r : responders) r->Stop();
}

}  // namespace
}  // namespace fabric::probe
