// The `probe` collector: its settings through ParseConfig (defaults, every
// key, bad values naming key and line, the key file required and checked),
// and the collector made through the registry probing a second instance
// over loopback, with the peers file re-read when it changes; rails
// (issue 29): parsed and validated, one collector probing on two, and a
// rail named by RDMA device/port binding its netdev's address (following it
// when it changes, saying why when there is none).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include "collectors/probe.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "probe/peers.h"
#include "probe/udp_transport.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ProbeCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    key_ = (dir_ / "key").string();
    std::ofstream(key_) << std::string(64, 'a') << "\n";
    ::chmod(key_.c_str(), 0600);
  }
  testing::TempDir tmp_{"fabricmon-probe-collector"};
  fs::path dir_;
  std::string key_;
};

// A listen address as the config parser makes it (rails are typed, issue
// 41 item 4).
probe::Endpoint At(const std::string& text) {
  auto e = probe::ParseListenAddress(text, nullptr);
  EXPECT_TRUE(e) << text;
  return e.value_or(probe::Endpoint());
}

// Peers as the config parser makes them (without a port: 10916).
std::vector<probe::Peer> Peers(const std::vector<std::string>& texts) {
  std::vector<probe::Peer> out;
  for (const auto& t : texts) {
    auto p = probe::ParsePeer(t, nullptr);
    EXPECT_TRUE(p) << t;
    if (p) out.push_back(*p);
  }
  return out;
}

// True when one of the sink's skip reasons contains `text`.
bool Said(const MetricSink& sink, std::string_view text) {
  for (const auto& r : sink.skip_reasons()) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

// Starts `a` and `b` on `io` and runs it on a thread for 20 s at most.
std::thread RunBoth(Collector& a, Collector& b, boost::asio::io_context& io) {
  a.Start(io);
  b.Start(io);
  return std::thread([&io] {
    auto guard = boost::asio::make_work_guard(io);
    io.run_for(20s);
  });
}

TEST_F(ProbeCollectorTest, Defaults) {
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  CollectorConfig c = config->Collector("probe");
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.interval, 1s);
  const auto& s = SettingsAs<ProbeSettings>(c);
  EXPECT_EQ(s.transport, "auto");
  EXPECT_EQ(s.listen_address, At(":10916"));
  EXPECT_EQ(s.probe_timeout, 1s);
  EXPECT_TRUE(s.peers.empty());
  EXPECT_EQ(s.peers_file, "");
  EXPECT_EQ(s.key_file, "");
  EXPECT_EQ(s.rate_limit, 2000);
  EXPECT_EQ(s.max_peers, kDefaultMaxPeers);
}

TEST_F(ProbeCollectorTest, EveryKey) {
  std::string error;
  auto config = ParseConfig(
      "collectors:\n"
      "  probe:\n"
      "    enabled: true\n"
      "    interval: 1ms\n"
      "    transport: udp\n"
      "    listen_address: \"127.0.0.1:20916\"\n"
      "    probe_timeout: 250ms\n"
      "    peers: [\"a:1\", \"[::1]:2\"]\n"
      "    peers_file: /etc/fabricmon/peers\n"
      "    key_file: " +
          key_ +
          "\n"
          "    rate_limit: 500\n"
          "    max_peers: 2\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  CollectorConfig c = config->Collector("probe");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.interval, 1ms);
  const auto& s = SettingsAs<ProbeSettings>(c);
  EXPECT_EQ(s.transport, "udp");
  EXPECT_EQ(s.listen_address, At("127.0.0.1:20916"));
  EXPECT_EQ(s.probe_timeout, 250ms);
  EXPECT_EQ(s.peers, Peers({"a:1", "[::1]:2"}));
  EXPECT_EQ(s.peers_file, "/etc/fabricmon/peers");
  EXPECT_EQ(s.key_file, key_);
  EXPECT_EQ(s.key, Key(32, 0xaa));  // read once, here
  EXPECT_EQ(s.rate_limit, 500);
  EXPECT_EQ(s.max_peers, 2);

  // A rotated key under the same path is a changed setting: a reload
  // restarts the responder with it.
  const std::string yaml =
      "collectors:\n  probe:\n    enabled: true\n"
      "    key_file: " +
      key_ + "\n";
  auto before = ParseConfig(yaml, AllCollectorKeys(), &error);
  ASSERT_TRUE(before) << error;
  std::ofstream(key_) << std::string(64, 'b') << "\n";
  auto after = ParseConfig(yaml, AllCollectorKeys(), &error);
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(SettingsAs<ProbeSettings>(after->Collector("probe")).key,
            Key(32, 0xbb));
  EXPECT_FALSE(before->Collector("probe") == after->Collector("probe"));
}

TEST_F(ProbeCollectorTest, BadValuesNameKeyAndLine) {
  std::string error;
  auto bad = [&](const std::string& body) {
    return !ParseConfig("collectors:\n  probe:\n" + body, AllCollectorKeys(),
                        &error);
  };
  EXPECT_TRUE(bad("    transport: tcp\n"));
  EXPECT_NE(error.find("collectors.probe.transport (line 3)"),
            std::string::npos)
      << error;
  EXPECT_TRUE(bad("    listen_address: \"node1:10916\"\n"));
  EXPECT_NE(error.find("listen_address"), std::string::npos) << error;
  EXPECT_TRUE(bad("    peers: [\"::1:80\"]\n"));
  EXPECT_NE(error.find("[addr]:port"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rate_limit: -1\n"));
  EXPECT_TRUE(bad("    probe_timeout: 1\n"));
  EXPECT_TRUE(bad("    max_peers: 0\n"));
  EXPECT_NE(error.find("collectors.probe.max_peers (line 3)"),
            std::string::npos)
      << error;
  EXPECT_TRUE(bad("    max_peers: 1.5\n"));
  EXPECT_TRUE(bad("    max_peers: 100001\n"));
  // More configured peers than the cap: an error, not a silent cut.
  EXPECT_TRUE(bad("    max_peers: 1\n    peers: [\"a:1\", \"b:1\"]\n"));
  EXPECT_NE(error.find("collectors.probe.peers (line 4)"), std::string::npos)
      << error;
  // Enabled: the key file is required, and must be owner-only.
  EXPECT_TRUE(bad("    enabled: true\n"));
  EXPECT_NE(error.find("collectors.probe.key_file"), std::string::npos)
      << error;
  ::chmod(key_.c_str(), 0644);
  EXPECT_TRUE(bad("    enabled: true\n    key_file: " + key_ + "\n"));
  EXPECT_NE(error.find("key_file"), std::string::npos) << error;
  // Disabled, nothing is required.
  EXPECT_FALSE(bad("    enabled: false\n"));
}

// Two collectors, made through the registry, probe each other on loopback;
// the second learns its peer from a peers file written after it started.
TEST_F(ProbeCollectorTest, CollectorsProbeEachOtherAndFollowThePeersFile) {
  auto settings = [&](int port, std::vector<std::string> peers,
                      std::string peers_file) {
    ProbeSettings s;
    s.transport = "udp";
    s.listen_address = At("127.0.0.1:" + std::to_string(port));
    s.probe_timeout = 200ms;
    s.peers = Peers(peers);
    s.peers_file = std::move(peers_file);
    s.key_file = key_;
    s.key = Key(32, 0xaa);  // key_'s 64 'a's
    CollectorConfig c;
    c.interval = 1ms;
    c.settings = std::make_shared<SettingsOf<ProbeSettings>>(s);
    return c;
  };
  const int pa = testing::FreeUdpPort();
  int pb = testing::FreeUdpPort();
  while (pb == pa) pb = testing::FreeUdpPort();
  std::string file = (dir_ / "peers").string();
  std::ofstream(file) << "# none yet\n";
  CollectorEnv env;
  auto a = MakeCollector("probe", env,
                         settings(pa, {"127.0.0.1:" + std::to_string(pb)}, ""));
  auto b = MakeCollector("probe", env, settings(pb, {}, file));
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->Samples());
  EXPECT_EQ(a->PublishInterval(), 1s);

  // Without Start (as in --once): not healthy, says why.
  {
    MetricSink sink;
    EXPECT_FALSE(a->Collect(sink));
    ASSERT_FALSE(sink.skip_reasons().empty());
  }
  boost::asio::io_context io;
  std::thread runner = RunBoth(*a, *b, io);
  auto text_of = [](Collector& c, bool* ok) {
    MetricSink sink;
    *ok = c.Collect(sink);
    return ToText(sink.Take());
  };
  bool ok = false;
  std::string ta;
  const std::string to_b =
      "fabric_probe_rtt_seconds_count{peer=\"127.0.0.1:" + std::to_string(pb) +
      "\",transport=\"udp\"}";
  for (int i = 0; i < 200; ++i) {
    ta = text_of(*a, &ok);
    if (ok && ta.find(to_b) != std::string::npos &&
        ta.find(to_b + " 0") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(ok);
  EXPECT_NE(ta.find(to_b), std::string::npos) << ta;
  EXPECT_EQ(ta.find(to_b + " 0\n"), std::string::npos) << ta;

  // b probes no one until its file names a; a rewritten file is re-read.
  std::string tb = text_of(*b, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(tb.find("fabric_probe_sent_total{"), std::string::npos) << tb;
  std::ofstream(file) << "127.0.0.1:" << pa << "  # a\n";
  const std::string to_a =
      "fabric_probe_sent_total{peer=\"127.0.0.1:" + std::to_string(pa) +
      "\",transport=\"udp\"}";
  for (int i = 0; i < 200; ++i) {
    tb = text_of(*b, &ok);
    if (tb.find(to_a) != std::string::npos &&
        tb.find(to_a + " 0\n") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(tb.find(to_a), std::string::npos) << tb;
  // A file that no longer parses keeps the list and says so.
  std::ofstream(file) << "bad:port:x\n";
  MetricSink sink;
  EXPECT_TRUE(b->Collect(sink));
  EXPECT_TRUE(Said(sink, "keeping the previous list"));
  EXPECT_NE(ToText(sink.Take()).find(to_a), std::string::npos);

  boost::asio::post(io, [&] {
    a->Stop();
    b->Stop();
    io.stop();
  });
  runner.join();
}

// `transport: rdma` on a host without an active RDMA port (every build
// machine): not healthy, and the reason says so; `auto` probes over UDP.
TEST_F(ProbeCollectorTest, RdmaWithoutRdmaPortsSaysWhy) {
  auto make = [&](const std::string& transport, int port) {
    ProbeSettings s;
    s.transport = transport;
    s.listen_address = At("127.0.0.1:" + std::to_string(port));
    s.key_file = key_;
    s.key = Key(32, 0xaa);
    CollectorConfig c;
    c.settings = std::make_shared<SettingsOf<ProbeSettings>>(s);
    return MakeCollector("probe", CollectorEnv{}, c);
  };
  const int port = 20000 + (::getpid() + 7) % 20000;
  auto rdma = make("rdma", port), automatic = make("auto", port + 1);
  boost::asio::io_context io;
  rdma->Start(io);
  automatic->Start(io);
  MetricSink sink;
  EXPECT_FALSE(rdma->Collect(sink));
  EXPECT_TRUE(Said(sink, "transport rdma"));
  MetricSink sink2;
  EXPECT_TRUE(automatic->Collect(sink2));
  rdma->Stop();
  automatic->Stop();
}

// Rails: each its own name, address and peers; the top-level keys a rail
// replaces cannot be mixed in; per_peer_histograms is read.
TEST_F(ProbeCollectorTest, RailsAndPerPeerHistograms) {
  std::string error;
  auto config = ParseConfig(
      "collectors:\n"
      "  probe:\n"
      "    per_peer_histograms: true\n"
      "    rails:\n"
      "      - name: rail0\n"
      "        listen_address: \"10.0.0.1:10916\"\n"
      "        peers: [\"10.0.0.2\"]\n"
      "      - name: rail1\n"
      "        listen_address: \"10.0.1.1:10916\"\n"
      "        peers_file: /etc/fabricmon/peers-rail1\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const auto& s = SettingsAs<ProbeSettings>(config->Collector("probe"));
  EXPECT_TRUE(s.per_peer_histograms);
  ASSERT_EQ(s.rails.size(), 2u);
  EXPECT_EQ(s.rails[0].name, "rail0");
  EXPECT_EQ(s.rails[0].listen_address, At("10.0.0.1:10916"));
  EXPECT_EQ(s.rails[0].peers, Peers({"10.0.0.2"}));
  EXPECT_EQ(s.rails[1].peers_file, "/etc/fabricmon/peers-rail1");
  EXPECT_EQ(RailsOf(s), s.rails);

  // Without rails: one unnamed rail of the top-level keys.
  ProbeSettings plain;
  plain.peers = Peers({"a:1"});
  ASSERT_EQ(RailsOf(plain).size(), 1u);
  EXPECT_EQ(RailsOf(plain)[0].name, "");
  EXPECT_EQ(RailsOf(plain)[0].listen_address, At(":10916"));
  EXPECT_EQ(RailsOf(plain)[0].peers, plain.peers);

  auto bad = [&](const std::string& body) {
    return !ParseConfig("collectors:\n  probe:\n" + body, AllCollectorKeys(),
                        &error);
  };
  const std::string r0 =
      "      - name: r0\n        listen_address: \"10.0.0.1:1\"\n";
  EXPECT_TRUE(bad("    rails: []\n"));
  EXPECT_NE(error.find("collectors.probe.rails"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n      - listen_address: \"10.0.0.1:1\"\n"));
  EXPECT_NE(error.find("rails[0].name"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n      - name: r0\n"));
  EXPECT_NE(error.find("rails[0].listen_address"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n      - name: \"r 0\"\n"));
  EXPECT_NE(error.find("rails[0].name"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n" + r0 + r0));
  EXPECT_NE(error.find("repeats rail"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n" + r0 +
                  "      - name: r1\n        listen_address: "
                  "\"10.0.0.1:1\"\n"));
  EXPECT_NE(error.find("rails[1].listen_address"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n" + r0 + "        devices: mlx5_0\n"));
  EXPECT_NE(error.find("rails[0].devices"), std::string::npos) << error;
  EXPECT_TRUE(bad("    rails:\n" + r0 + "        peers: [\"::1:80\"]\n"));
  EXPECT_TRUE(bad("    max_peers: 1\n    rails:\n" + r0 +
                  "        peers: [\"a:1\", \"b:1\"]\n"));
  EXPECT_NE(error.find("rails[0].peers"), std::string::npos) << error;
  EXPECT_TRUE(bad("    peers: [\"a:1\"]\n    rails:\n" + r0));
  EXPECT_NE(error.find("is per rail"), std::string::npos) << error;
  EXPECT_TRUE(bad("    per_peer_histograms: maybe\n"));
}

// Rails named by RDMA device and port: parsed, the port defaulting to 1
// and the UDP port to listen_port's; bad combinations name their key.
TEST_F(ProbeCollectorTest, RailsByDeviceAndPort) {
  std::string error;
  auto config = ParseConfig(
      "collectors:\n"
      "  probe:\n"
      "    rails:\n"
      "      - name: rail0\n"
      "        device: mlx5_0\n"
      "        peers: [\"10.0.0.2\"]\n"
      "      - name: rail1\n"
      "        device: mlx5_1\n"
      "        port: 2\n"
      "        listen_port: 10917\n"
      "      - name: rail2\n"
      "        device: mlx5_2\n"
      "        listen_address: \"10.0.2.1:10916\"\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const auto& s = SettingsAs<ProbeSettings>(config->Collector("probe"));
  ASSERT_EQ(s.rails.size(), 3u);
  EXPECT_EQ(s.rails[0].device, "mlx5_0");
  EXPECT_EQ(s.rails[0].port, 1);
  EXPECT_EQ(s.rails[0].listen_address, std::nullopt);
  EXPECT_EQ(s.rails[0].listen_port, kDefaultProbePort);
  EXPECT_EQ(s.rails[1].port, 2);
  EXPECT_EQ(s.rails[1].listen_port, 10917);
  EXPECT_EQ(s.rails[2].listen_address, At("10.0.2.1:10916"));

  auto bad = [&](const std::string& rail) {
    return !ParseConfig("collectors:\n  probe:\n    rails:\n" + rail,
                        AllCollectorKeys(), &error);
  };
  const std::string r0 = "      - name: r0\n        device: mlx5_0\n";
  const std::string r1 = "      - name: r1\n        device: mlx5_0\n";
  // Two rails on one port, spelled with and without the default port.
  EXPECT_TRUE(bad(r0 + r1 + "        port: 1\n"));
  EXPECT_NE(error.find("rails[1].device"), std::string::npos) << error;
  EXPECT_NE(error.find("mlx5_0 port 1"), std::string::npos) << error;
  EXPECT_FALSE(bad(r0 + r1 + "        port: 2\n")) << error;
  EXPECT_TRUE(bad(r0 + "        port: 0\n"));
  EXPECT_NE(error.find("rails[0].port"), std::string::npos) << error;
  EXPECT_TRUE(bad(r0 + "        device: \"../x\"\n"));
  EXPECT_TRUE(bad("      - name: r0\n        device: \"mlx5/0\"\n"));
  EXPECT_NE(error.find("rails[0].device"), std::string::npos) << error;
  EXPECT_TRUE(bad(r0 + "        listen_address: \":10916\"\n"));
  EXPECT_NE(error.find("must be the port's address"), std::string::npos)
      << error;
  EXPECT_TRUE(bad(r0 + "        listen_address: \"10.0.0.1:1\"\n"
                       "        listen_port: 2\n"));
  EXPECT_NE(error.find("rails[0].listen_port"), std::string::npos) << error;
  const std::string plain =
      "      - name: r0\n        listen_address: \"10.0.0.1:1\"\n";
  EXPECT_TRUE(bad(plain + "        port: 1\n"));
  EXPECT_NE(error.find("rails[0].port"), std::string::npos) << error;
  EXPECT_TRUE(bad(plain + "        listen_port: 1\n"));
  EXPECT_NE(error.find("rails[0].listen_port"), std::string::npos) << error;
  EXPECT_TRUE(bad("      - name: r0\n        port: 1\n"));
  EXPECT_NE(error.find("rails[0].listen_address"), std::string::npos) << error;
}

// A rail named by device/port on a fake RoCE port whose netdev is `lo`
// binds the address the lister gives lo, probes a plain collector from
// it, moves when that address changes, and says why when it has none.
// Once both collectors are stopped nothing is left to run on the
// io_context: the path traces of the sockets the rail closed were stopped
// with them (they used to run on forever, sending through a freed socket).
TEST_F(ProbeCollectorTest, DeviceRailBindsAndFollowsItsNetdevsAddress) {
  const int base = 23000 + (::getpid() + 29) % 20000;
  auto fake = std::make_shared<testing::FakeSysfs>();
  fake->File("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "lo\n");
  auto address = std::make_shared<std::string>("127.0.0.3");
  std::mutex mu;
  InterfaceAddressLister lister = [&mu, address](std::string*) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<InterfaceAddress> out = {{"eth0", "192.0.2.1", false, false}};
    if (!address->empty()) out.push_back({"lo", *address, false, false});
    return out;
  };
  auto settings = [&](ProbeRail rail) {
    ProbeSettings s;
    s.transport = "udp";
    s.probe_timeout = 200ms;
    s.key_file = key_;
    s.key = Key(32, 0xaa);
    s.rails = {rail};
    CollectorConfig c;
    c.interval = 1ms;
    c.settings = std::make_shared<SettingsOf<ProbeSettings>>(s);
    return c;
  };
  ProbeRail by_device;
  by_device.name = "r0";
  by_device.device = "rxe0";
  by_device.port = 1;
  by_device.listen_address.reset();
  by_device.listen_port = base;
  by_device.peers = Peers({"127.0.0.1:" + std::to_string(base + 1)});
  ProbeRail plain;
  plain.name = "p";
  plain.listen_address = At("127.0.0.1:" + std::to_string(base + 1));
  CollectorEnv env;
  env.sysfs = fake;
  auto a = MakeProbeCollector(env, settings(by_device), lister);
  auto b = MakeProbeCollector(env, settings(plain), lister);
  boost::asio::io_context io;
  a->Start(io);
  b->Start(io);
  // No work guard: run() returns once the collectors' handlers are all
  // done; the bound only keeps a regression from hanging the suite.
  std::thread runner([&io] { io.run_for(120s); });
  const std::string count = "fabric_probe_rtt_seconds_count{peer=\"127.0.0.1:" +
                            std::to_string(base + 1) +
                            "\",rail=\"r0\",transport=\"udp\"}";
  // Collects `a` until `done` holds of its text; returns the text.
  auto until = [&](auto done) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      MetricSink sink;
      a->Collect(sink);
      text = ToText(sink.Take());
      if (done(text)) break;
      std::this_thread::sleep_for(50ms);
    }
    return text;
  };
  auto info = [](const std::string& ip) {
    return "fabric_probe_rail_info{address=\"" + ip +
           "\",device=\"rxe0\",netdev=\"lo\",port=\"1\",rail=\"r0\"} 1";
  };
  auto answered = [&](const std::string& text) {
    return text.find(count) != std::string::npos &&
           text.find(count + " 0\n") == std::string::npos;
  };
  std::string text = until([&](const std::string& t) {
    return answered(t) && t.find(info("127.0.0.3")) != std::string::npos;
  });
  EXPECT_TRUE(answered(text)) << text;
  EXPECT_NE(text.find(info("127.0.0.3")), std::string::npos) << text;
  EXPECT_NE(text.find("fabric_probe_rail_up{rail=\"r0\"} 1"), std::string::npos)
      << text;
  // While the address stays, collections check it without scanning the
  // port's netdevs in sysfs again (at most once a minute).
  const std::string ndevs = "class/infiniband/rxe0/ports/1/link_layer";
  const int scans = fake->Reads(ndevs);
  for (int i = 0; i < 20; ++i) {
    MetricSink sink;
    a->Collect(sink);
  }
  EXPECT_EQ(fake->Reads(ndevs), scans);

  // The address goes away: the rail closes and says why.
  {
    std::lock_guard<std::mutex> lock(mu);
    address->clear();
  }
  text = until([](const std::string& t) {
    return t.find("fabric_probe_rail_up{rail=\"r0\"} 0") != std::string::npos;
  });
  EXPECT_NE(text.find("fabric_probe_rail_up{rail=\"r0\"} 0"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("fabric_probe_rail_info"), std::string::npos) << text;
  {
    MetricSink sink;
    EXPECT_FALSE(a->Collect(sink));
    EXPECT_TRUE(Said(sink, "rxe0 port 1: netdev lo has no IPv4"));
  }

  // A new address: the rail binds it and probes again.
  {
    std::lock_guard<std::mutex> lock(mu);
    *address = "127.0.0.4";
  }
  text = until([&](const std::string& t) {
    return t.find(info("127.0.0.4")) != std::string::npos &&
           t.find("fabric_probe_rail_up{rail=\"r0\"} 1") != std::string::npos &&
           answered(t);
  });
  EXPECT_NE(text.find(info("127.0.0.4")), std::string::npos) << text;
  EXPECT_TRUE(answered(text)) << text;

  boost::asio::post(io, [&] {
    a->Stop();
    b->Stop();
  });
  runner.join();
  EXPECT_TRUE(io.stopped())
      << "handlers still queued after Stop (an old socket's path traces?)";
}

// One collector with two rails on loopback addresses probes a second one
// with the same two rails: each rail probes its own peer, and every series
// names its rail.
TEST_F(ProbeCollectorTest, TwoRailsProbeTheirOwnPeers) {
  const int base = 21000 + (::getpid() + 13) % 20000;
  auto make = [&](int own, int other) {
    ProbeSettings s;
    s.transport = "udp";
    s.probe_timeout = 200ms;
    s.key_file = key_;
    s.key = Key(32, 0xaa);
    for (int r = 0; r < 2; ++r) {
      ProbeRail rail;
      rail.name = "r" + std::to_string(r);
      const std::string ip = "127.0.0." + std::to_string(r + 1) + ":";
      rail.listen_address = At(ip + std::to_string(base + own));
      rail.peers = Peers({ip + std::to_string(base + other)});
      s.rails.push_back(rail);
    }
    CollectorConfig c;
    c.interval = 1ms;
    c.settings = std::make_shared<SettingsOf<ProbeSettings>>(s);
    return MakeCollector("probe", CollectorEnv{}, c);
  };
  auto a = make(0, 1), b = make(1, 0);
  ASSERT_TRUE(a && b);
  boost::asio::io_context io;
  std::thread runner = RunBoth(*a, *b, io);
  const auto count = [&](int r) {
    return "fabric_probe_rtt_seconds_count{peer=\"127.0.0." +
           std::to_string(r + 1) + ":" + std::to_string(base + 1) +
           "\",rail=\"r" + std::to_string(r) + "\",transport=\"udp\"}";
  };
  std::string text;
  bool ok = false;
  for (int i = 0; i < 200; ++i) {
    MetricSink sink;
    ok = a->Collect(sink);
    text = ToText(sink.Take());
    if (ok && text.find(count(0)) != std::string::npos &&
        text.find(count(1)) != std::string::npos &&
        text.find(count(0) + " 0\n") == std::string::npos &&
        text.find(count(1) + " 0\n") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(ok);
  EXPECT_NE(text.find(count(0)), std::string::npos) << text;
  EXPECT_NE(text.find(count(1)), std::string::npos) << text;
  EXPECT_EQ(text.find(count(0) + " 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(count(1) + " 0\n"), std::string::npos) << text;
  // Per rail: its own responder, over-cap gauge and port histogram.
  for (const char* series :
       {"fabric_probe_answered_total{rail=\"r0\"}",
        "fabric_probe_answered_total{rail=\"r1\"}",
        "fabric_probe_peers_over_cap{rail=\"r1\"}",
        "fabric_probe_port_rtt_seconds_count{rail=\"r1\",transport=\"udp\"}"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
  // No probe series without a rail.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("fabric_probe_", 0) == 0) {
      EXPECT_NE(line.find("rail=\"r"), std::string::npos) << line;
    }
  }
  boost::asio::post(io, [&] {
    a->Stop();
    b->Stop();
    io.stop();
  });
  runner.join();
}

}  // namespace
}  // namespace fabric
