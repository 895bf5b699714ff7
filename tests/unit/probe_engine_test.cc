// The probe engine over real UDP sockets on loopback: two engines probe each
// other; a wrong key, a replayed packet, a flood over the rate limit and a
// dead peer each show up where docs/probes.md says.
#include <gtest/gtest.h>
#include <net/if.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <functional>
#include <sstream>
#include <thread>

#include "core/metric_sink.h"
#include "probe/engine.h"
#include "probe/udp_transport.h"

namespace fabric::probe {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::udp;

struct Node {
  Node(boost::asio::io_context& io, std::uint8_t key_fill,
       EngineOptions options = {}) {
    auto t = std::make_unique<UdpTransport>(
        io, Endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    transport = t.get();
    std::vector<std::unique_ptr<Transport>> ts;
    ts.push_back(std::move(t));
    engine = std::make_shared<Engine>(io, Hmac(Key(32, key_fill)), options,
                                      std::move(ts));
    std::string error;
    EXPECT_TRUE(engine->Start(&error)) << error;
  }
  ResolvedPeer AsPeer(const std::string& name) const {
    return {{name, "127.0.0.1", transport->local_endpoint().port()},
            transport->local_endpoint()};
  }
  UdpTransport* transport;
  std::shared_ptr<Engine> engine;
};

EngineOptions Fast() {
  EngineOptions o;
  o.interval = 1ms;
  o.probe_timeout = 200ms;
  return o;
}

// Runs `io` until `done` or (a generous bound, not an assertion on speed)
// 20 s pass.
template <typename F>
void RunUntil(boost::asio::io_context& io, F done) {
  auto stop = std::chrono::steady_clock::now() + 20s;
  while (!done() && std::chrono::steady_clock::now() < stop) {
    io.run_for(10ms);
  }
}

TEST(ProbeEngineTest, PeersProbeEachOtherAndMeasureRtt) {
  boost::asio::io_context io;
  Node a(io, 1, Fast()), b(io, 1, Fast());
  a.engine->SetPeers({b.AsPeer("b")});
  b.engine->SetPeers({a.AsPeer("a")});
  RunUntil(io, [&] {
    return a.engine->Totals()["received"] >= 100 &&
           b.engine->Totals()["received"] >= 100;
  });
  auto ta = a.engine->Totals();
  EXPECT_GE(ta["received"], 100u);
  EXPECT_GE(ta["answered"], 100u);  // a answered b's probes
  EXPECT_EQ(ta["lost"], 0u);
  EXPECT_EQ(ta["rejected:bad_mac"], 0u);

  MetricSink sink;
  std::string error;
  EXPECT_TRUE(a.engine->Emit(sink, &error)) << error;
  std::string text = ToText(sink.Take());
  // By default no per-peer buckets: the sums and counts, the window's max,
  // and one histogram over all peers.
  EXPECT_EQ(text.find("fabric_probe_rtt_seconds_bucket"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_probe_port_rtt_seconds_bucket{transport="
                      "\"udp\",le=\"1e-06\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_probe_network_rtt_seconds_count{peer=\"b\""),
            std::string::npos);
  EXPECT_NE(text.find("fabric_probe_rtt_seconds_sum{peer=\"b\""),
            std::string::npos);
  EXPECT_NE(text.find("fabric_probe_rtt_max_seconds{peer=\"b\""),
            std::string::npos);
  EXPECT_NE(text.find("fabric_probe_rejected_total{reason=\"replay\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("fabric_probe_sent_total{peer=\"b\",transport=\"udp\"}"),
            std::string::npos);
  a.engine->Stop();
  b.engine->Stop();
}

// The port exchange (issue 29): each end names the fabric port behind the
// interface a packet arrived by (here loopback's, through an injected
// port_of); the prober exports the pair once as fabric_probe_pair_info,
// its port from the interface the answer came in by, the peer's from the
// answer. A peer that names no ports answers with zeros: empty labels.
TEST(ProbeEngineTest, PairInfoNamesThePortsOfTheInterfacesUsed) {
  boost::asio::io_context io;
  std::vector<int> asked;
  auto port_of = [&asked](std::uint64_t node) {
    return [&asked, node](int ifindex) {
      asked.push_back(ifindex);
      PortIdentity id;
      id.node_guid = node;
      id.port_guid = node + 1;
      id.lid = static_cast<std::uint16_t>(ifindex);
      id.port = 1;
      id.gid[0] = 0xfe;
      id.gid[1] = 0x80;
      return id;
    };
  };
  EngineOptions oa = Fast(), ob = Fast();
  oa.port_of = port_of(0xa0);
  ob.port_of = port_of(0xb0);
  Node a(io, 1, oa), b(io, 1, ob), c(io, 1, Fast());  // c names no ports
  a.engine->SetPeers({b.AsPeer("b"), c.AsPeer("c")});
  auto emitted = [&] {
    MetricSink sink;
    std::string error;
    a.engine->Emit(sink, &error);
    return ToText(sink.Take());
  };
  // The exposition sorts labels by name.
  auto pair_line = [](const std::string& text, const std::string& peer) {
    const std::string key = ",peer=\"" + peer + "\",";
    for (std::size_t at = text.find("fabric_probe_pair_info{");
         at != std::string::npos;
         at = text.find("fabric_probe_pair_info{", at + 1)) {
      const std::string line = text.substr(at, text.find('\n', at) - at);
      if (line.find(key) != std::string::npos) return line;
    }
    return std::string();
  };
  RunUntil(io, [&] {
    const std::string t = emitted();
    return !pair_line(t, "b").empty() && !pair_line(t, "c").empty();
  });
  const std::string text = emitted();
  const std::string lo = std::to_string(::if_nametoindex("lo"));
  const std::string gid = "fe80:0000:0000:0000:0000:0000:0000:0000";
  EXPECT_EQ(pair_line(text, "b"),
            "fabric_probe_pair_info{local_gid=\"" + gid + "\",local_lid=\"" +
                lo +
                "\",local_node_guid=\"0x00000000000000a0\","
                "local_port_guid=\"0x00000000000000a1\",peer=\"b\","
                "remote_gid=\"" +
                gid + "\",remote_lid=\"" + lo +
                "\",remote_node_guid=\"0x00000000000000b0\","
                "remote_port_guid=\"0x00000000000000b1\"} 1")
      << text;
  EXPECT_EQ(pair_line(text, "c"),
            "fabric_probe_pair_info{local_gid=\"" + gid + "\",local_lid=\"" +
                lo +
                "\",local_node_guid=\"0x00000000000000a0\","
                "local_port_guid=\"0x00000000000000a1\",peer=\"c\","
                "remote_gid=\"\",remote_lid=\"\",remote_node_guid=\"\","
                "remote_port_guid=\"\"} 1")
      << text;
  // Every port named came from the interface the packets used.
  ASSERT_FALSE(asked.empty());
  for (int i : asked) EXPECT_EQ(std::to_string(i), lo);
  // Once per pair, not per probe: the exchange is rare.
  EXPECT_LE(asked.size(), 8u);
  // A dropped peer's pair goes with it.
  a.engine->SetPeers({b.AsPeer("b")});
  RunUntil(io, [&] { return pair_line(emitted(), "c").empty(); });
  EXPECT_EQ(pair_line(emitted(), "c"), "");
  EXPECT_NE(pair_line(emitted(), "b"), "");
  a.engine->Stop();
  b.engine->Stop();
  c.engine->Stop();
}

// A prober that no peer probes receives lazily (its answers wait in the
// kernel, stamped on arrival, until its next tick) and loses none; once a
// peer probes it, it answers on arrival; a second after the peer stops, it
// is lazy again.
TEST(ProbeEngineTest, ProberNobodyProbesReceivesLazilyUntilProbed) {
  boost::asio::io_context io;
  Node a(io, 1, Fast()), b(io, 1, Fast());
  a.engine->SetPeers({b.AsPeer("b")});
  RunUntil(io, [&] { return a.engine->Totals()["received"] >= 200; });
  auto ta = a.engine->Totals();
  EXPECT_GE(ta["received"], 200u);
  EXPECT_EQ(ta["lost"], 0u);
  EXPECT_TRUE(a.transport->lazy());
  EXPECT_FALSE(b.transport->lazy());  // no peers: nothing ticks its timer

  b.engine->SetPeers({a.AsPeer("a")});
  RunUntil(io, [&] { return b.engine->Totals()["received"] >= 200; });
  EXPECT_GE(b.engine->Totals()["received"], 200u);
  EXPECT_FALSE(a.transport->lazy());
  EXPECT_FALSE(b.transport->lazy());

  b.engine->SetPeers({});
  RunUntil(io, [&] { return a.transport->lazy(); });
  EXPECT_TRUE(a.transport->lazy());
  std::uint64_t before = a.engine->Totals()["received"];
  RunUntil(io, [&] { return a.engine->Totals()["received"] >= before + 100; });
  EXPECT_EQ(a.engine->Totals()["lost"], 0u);
  a.engine->Stop();
  b.engine->Stop();
}

TEST(ProbeEngineTest, WrongKeyGetsNoAnswersAndCountsBadMac) {
  boost::asio::io_context io;
  Node a(io, 1, Fast()), b(io, 2, Fast());
  a.engine->SetPeers({b.AsPeer("b")});
  RunUntil(io, [&] { return a.engine->Totals()["lost"] >= 20; });
  auto ta = a.engine->Totals(), tb = b.engine->Totals();
  EXPECT_EQ(ta["received"], 0u);
  EXPECT_GE(ta["lost"], 20u);
  EXPECT_GE(tb["rejected:bad_mac"], 20u);
  EXPECT_EQ(tb["answered"], 0u);
}

TEST(ProbeEngineTest, DeadPeerIsLoss) {
  boost::asio::io_context io;
  Node a(io, 1, Fast());
  // A bound socket that never answers.
  udp::socket silent(
      io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  a.engine->SetPeers({{{"dead", "127.0.0.1", silent.local_endpoint().port()},
                       silent.local_endpoint()}});
  RunUntil(io, [&] { return a.engine->Totals()["lost"] >= 20; });
  auto t = a.engine->Totals();
  EXPECT_GE(t["lost"], 20u);
  EXPECT_EQ(t["received"], 0u);
  // Every probe sent is either still pending or lost.
  EXPECT_LE(t["lost"], t["sent"]);
}

TEST(ProbeEngineTest, ReplayedProbeIsRejectedAndNotAnswered) {
  boost::asio::io_context io;
  Node b(io, 1);
  Hmac hmac(Key(32, 1));
  Packet p;
  p.type = MessageType::kProbe;
  p.session = 99;
  p.seq = 5;
  Bytes bytes = Encode(p, hmac);
  udp::socket s(io,
                udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  s.non_blocking(true);
  for (int i = 0; i < 3; ++i)
    s.send_to(boost::asio::buffer(bytes), b.transport->local_endpoint());
  RunUntil(io, [&] {
    auto t = b.engine->Totals();
    return t["answered"] + t["rejected:replay"] >= 3;
  });
  auto t = b.engine->Totals();
  EXPECT_EQ(t["answered"], 1u);
  EXPECT_EQ(t["rejected:replay"], 2u);
  // Exactly one answer, of exactly the request's size.
  std::array<std::uint8_t, 512> buf;
  udp::endpoint from;
  boost::system::error_code ec;
  std::size_t n = 0;
  RunUntil(io, [&] {
    n = s.receive_from(boost::asio::buffer(buf), from, 0, ec);
    return !ec;
  });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(n, kPacketBytes);
  auto answer = Decode(std::span(buf.data(), n), hmac, nullptr);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->type, MessageType::kAnswer);
  EXPECT_EQ(answer->seq, 5u);
  io.run_for(50ms);
  s.receive_from(boost::asio::buffer(buf), from, 0, ec);
  EXPECT_TRUE(ec == boost::asio::error::would_block) << ec.message();
}

TEST(ProbeEngineTest, FloodOverTheRateLimitIsRefused) {
  boost::asio::io_context io;
  EngineOptions o;
  o.rate_limit = 100;  // burst 10
  Node b(io, 1, o);
  Hmac hmac(Key(32, 1));
  udp::socket s(io,
                udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  for (std::uint64_t seq = 1; seq <= 200; ++seq) {
    Packet p;
    p.session = 7;
    p.seq = seq;
    s.send_to(boost::asio::buffer(Encode(p, hmac)),
              b.transport->local_endpoint());
  }
  RunUntil(io, [&] {
    auto t = b.engine->Totals();
    return t["answered"] + t["rejected:rate_limited"] >= 200;
  });
  auto t = b.engine->Totals();
  // Sending 200 takes far less than the 1.9 s that 100/s would need for
  // all of them: most are refused, the burst and what refilled answered.
  EXPECT_GE(t["answered"], 10u);
  EXPECT_LT(t["answered"], 200u);
  EXPECT_EQ(t["answered"] + t["rejected:rate_limited"], 200u);
}

TEST(ProbeEngineTest, GarbageIsMalformed) {
  boost::asio::io_context io;
  Node b(io, 1);
  udp::socket s(io,
                udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  std::string junk = "hello";
  s.send_to(boost::asio::buffer(junk), b.transport->local_endpoint());
  RunUntil(io, [&] { return b.engine->Totals()["rejected:malformed"] >= 1; });
  EXPECT_EQ(b.engine->Totals()["rejected:malformed"], 1u);
}

}  // namespace
}  // namespace fabric::probe

namespace fabric::probe {
namespace {

// A peer that answers every probe but every 10th: the engine counts exactly
// those as lost and every other one as answered.
TEST(ProbeEngineTest, LossIsExactlyTheUnansweredProbes) {
  boost::asio::io_context io;
  EngineOptions o = Fast();
  o.probe_timeout = 50ms;
  Node a(io, 1, o);
  Hmac hmac(Key(32, 1));
  udp::socket peer(
      io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  std::array<std::uint8_t, 512> buf;
  udp::endpoint from;
  std::uint64_t seen = 0, dropped = 0;
  std::function<void()> serve = [&] {
    peer.async_receive_from(
        boost::asio::buffer(buf), from,
        [&](boost::system::error_code ec, std::size_t n) {
          if (ec) return;
          auto p = Decode(std::span(buf.data(), n), hmac, nullptr);
          if (p && ++seen % 10 == 0) {
            ++dropped;
          } else if (p) {
            p->type = MessageType::kAnswer;
            peer.send_to(boost::asio::buffer(Encode(*p, hmac)), from);
          }
          serve();
        });
  };
  serve();
  a.engine->SetPeers({{{"p", "127.0.0.1", peer.local_endpoint().port()},
                       peer.local_endpoint()}});
  RunUntil(io, [&] { return seen >= 3000; });
  auto t = a.engine->Totals();
  // Probes younger than probe_timeout (about 50 at 1 ms) are not resolved
  // yet; every older unanswered one is lost, and only those.
  EXPECT_LE(t["lost"], dropped);
  EXPECT_GE(t["lost"] + 10, dropped);
  EXPECT_LE(t["received"], seen - dropped);
  EXPECT_GE(t["received"] + 60, seen - dropped);
  EXPECT_EQ(t["rejected:bad_mac"] + t["rejected:malformed"], 0u);
}

}  // namespace
}  // namespace fabric::probe

namespace fabric::probe {
namespace {

// The series that name `peer` in an exposition (comments left out).
std::vector<std::string> SeriesOfPeer(const std::string& text,
                                      const std::string& peer) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#' &&
        line.find("peer=\"" + peer + "\"") != std::string::npos) {
      out.push_back(line.substr(0, line.rfind(' ')));
    }
  }
  return out;
}

// Issue 30: at most 8 series per pair by default, pair info included; with
// per_peer_histograms the full histograms come back.
TEST(ProbeEngineTest, AtMostEightSeriesPerPairByDefault) {
  for (bool histograms : {false, true}) {
    boost::asio::io_context io;
    EngineOptions options = Fast();
    options.per_peer_histograms = histograms;
    options.port_of = [](int) {
      PortIdentity id;
      id.node_guid = 0xa0;
      id.port_guid = 0xa1;
      id.lid = 7;
      id.port = 1;
      return id;
    };
    Node a(io, 1, options), b(io, 1, options);
    a.engine->SetPeers({b.AsPeer("b")});
    std::string text;
    RunUntil(io, [&] {
      MetricSink sink;
      std::string error;
      a.engine->Emit(sink, &error);
      text = ToText(sink.Take());
      return a.engine->Totals()["received"] >= 20 &&
             text.find("fabric_probe_pair_info{") != std::string::npos;
    });
    const auto series = SeriesOfPeer(text, "b");
    std::string all;
    for (const auto& s : series) all += s + "\n";
    if (histograms) {
      EXPECT_GT(series.size(), 90u) << all;
      EXPECT_NE(all.find("fabric_probe_network_rtt_seconds_bucket"),
                std::string::npos);
    } else {
      EXPECT_EQ(series.size(), 8u) << all;
      for (const char* name :
           {"fabric_probe_sent_total", "fabric_probe_lost_total",
            "fabric_probe_rtt_seconds_sum", "fabric_probe_rtt_seconds_count",
            "fabric_probe_network_rtt_seconds_sum",
            "fabric_probe_network_rtt_seconds_count",
            "fabric_probe_rtt_max_seconds", "fabric_probe_pair_info"}) {
        EXPECT_NE(all.find(std::string(name) + "{"), std::string::npos)
            << name << "\n"
            << all;
      }
    }
    // The histogram over all peers either way, its count every answer.
    EXPECT_NE(
        text.find("fabric_probe_port_rtt_seconds_count{transport=\"udp\"}"),
        std::string::npos)
        << text;
    a.engine->Stop();
    b.engine->Stop();
  }
}

// A rail's labels come first on every series of its engine.
TEST(ProbeEngineTest, EngineLabelsGoOnEverySeries) {
  boost::asio::io_context io;
  EngineOptions options = Fast();
  options.labels = {{"rail", "r1"}};
  Node a(io, 1, options), b(io, 1, Fast());
  a.engine->SetPeers({b.AsPeer("b")});
  RunUntil(io, [&] { return a.engine->Totals()["received"] >= 5; });
  MetricSink sink;
  std::string error;
  a.engine->Emit(sink, &error);
  const std::string text = ToText(sink.Take());
  std::istringstream in(text);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++lines;
    EXPECT_NE(line.find("rail=\"r1\""), std::string::npos) << line;
  }
  EXPECT_GT(lines, 10);
  a.engine->Stop();
  b.engine->Stop();
}

}  // namespace
}  // namespace fabric::probe

namespace fabric::probe {
namespace {

// Issue 40: one sniffed probe replayed from the peer's own address (here
// 127.0.0.1, which the real prober shares) thousands of times a second
// must not spend that address's rate limit: every replay is refused as a
// replay and the real prober's probes are all answered.
TEST(ProbeEngineTest, ReplayFloodFromThePeersAddressDoesNotStarveIt) {
  boost::asio::io_context io;
  EngineOptions ob;
  ob.rate_limit = 100;  // burst 10
  Node b(io, 1, ob);
  EngineOptions oa;
  oa.interval = 20ms;  // 50 a second: within b's limit
  oa.probe_timeout = 1s;
  Node a(io, 1, oa);
  a.engine->SetPeers({b.AsPeer("b")});
  Hmac hmac(Key(32, 1));
  Packet sniffed;
  sniffed.session = 99;
  sniffed.seq = 1;
  const Bytes bytes = Encode(sniffed, hmac);
  udp::socket attacker(
      io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  attacker.non_blocking(true);
  const auto stop = std::chrono::steady_clock::now() + 60s;
  while (a.engine->Totals()["received"] < 40 &&
         std::chrono::steady_clock::now() < stop) {
    boost::system::error_code ec;
    for (int i = 0; i < 100; ++i) {
      attacker.send_to(boost::asio::buffer(bytes),
                       b.transport->local_endpoint(), 0, ec);
    }
    io.run_for(10ms);
  }
  auto ta = a.engine->Totals(), tb = b.engine->Totals();
  EXPECT_GE(ta["received"], 40u);
  EXPECT_EQ(ta["lost"], 0u);
  EXPECT_EQ(tb["rejected:rate_limited"], 0u);
  EXPECT_GE(tb["rejected:replay"], 1000u);
  a.engine->Stop();
  b.engine->Stop();
}

// Issue 40: an ICMP port unreachable (which anyone can send: here the
// kernel's own, for a datagram to a closed port) leaves an error pending
// on the probe socket, and the next send failed with it: a probe to a
// live peer counted lost. The transport retries such a send.
TEST(ProbeEngineTest, PendingIcmpErrorDoesNotFailTheNextSend) {
  boost::asio::io_context io;
  UdpTransport t(io, Endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  std::string error;
  ASSERT_TRUE(t.Start({}, &error)) << error;
  Endpoint closed;
  {
    udp::socket s(io,
                  udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    closed = s.local_endpoint();
  }
  udp::socket live(
      io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::array<std::uint8_t, 8> bytes{};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(t.Send(closed, bytes, 0));
    // Loopback answers at once; the io context does not run, so nothing
    // reads the error before the next send.
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(t.Send(live.local_endpoint(), bytes, 0)) << i;
  }
  t.Stop();
}

// A transport that refuses every send.
class RefusingTransport : public Transport {
 public:
  std::string_view Name() const override { return "udp"; }
  bool Start(Handlers, std::string*) override { return true; }
  void Stop() override {}
  bool Healthy() const override { return true; }
  std::string LastError() const override { return ""; }
  bool CanReach(const Endpoint&) const override { return true; }
  std::optional<Timestamp> Send(const Endpoint&, std::span<const std::uint8_t>,
                                std::uint64_t) override {
    return std::nullopt;
  }
  bool Reply(const Source&, std::span<const std::uint8_t>) override {
    return false;
  }
};

// Issue 40: a probe the socket refused was never sent: it is a send error,
// not a loss (the loss alert reads lost / sent). A peer that stays out of
// reach, and one that never answers, show as unanswered instead (issue 39:
// fabric_probe_peer_unanswered_seconds), and a peer that answers does not.
TEST(ProbeEngineTest, SendErrorsAreNotLossAndSilentPeersAreUnanswered) {
  boost::asio::io_context io;
  EngineOptions o = Fast();
  o.unanswered_after = 300ms;
  std::vector<std::unique_ptr<Transport>> ts;
  ts.push_back(std::make_unique<RefusingTransport>());
  auto refusing =
      std::make_shared<Engine>(io, Hmac(Key(32, 1)), o, std::move(ts));
  std::string error;
  ASSERT_TRUE(refusing->Start(&error)) << error;
  refusing->SetPeers({{{"far", "127.0.0.1", 9}, Endpoint()}});
  Node a(io, 1, o), b(io, 1, Fast());
  udp::socket silent(
      io, udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  a.engine->SetPeers({b.AsPeer("b"),
                      {{"silent", "127.0.0.1", silent.local_endpoint().port()},
                       silent.local_endpoint()}});
  RunUntil(io, [&] {
    return refusing->UnansweredPeers().size() == 1 &&
           a.engine->UnansweredPeers().size() == 1;
  });
  auto t = refusing->Totals();
  EXPECT_GT(t["send_errors"], 0u);
  EXPECT_EQ(t["sent"], 0u);
  EXPECT_EQ(t["lost"], 0u);
  auto far = refusing->UnansweredPeers();
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].peer, "far");
  EXPECT_FALSE(far[0].ever);
  auto silent_peers = a.engine->UnansweredPeers();
  ASSERT_EQ(silent_peers.size(), 1u);
  EXPECT_EQ(silent_peers[0].peer, "silent");
  EXPECT_GE(silent_peers[0].seconds, 0.3);
  EXPECT_GT(silent_peers[0].sent, 0u);
  MetricSink sink;
  a.engine->Emit(sink, &error);
  const std::string text = ToText(sink.Take());
  EXPECT_NE(text.find("fabric_probe_peer_unanswered_seconds{peer=\"silent\"}"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("fabric_probe_peer_unanswered_seconds{peer=\"b\"}"),
            std::string::npos);
  EXPECT_NE(text.find("fabric_probe_send_errors_total{transport=\"udp\"} 0"),
            std::string::npos)
      << text;
  refusing->Stop();
  a.engine->Stop();
  b.engine->Stop();
}

}  // namespace
}  // namespace fabric::probe
