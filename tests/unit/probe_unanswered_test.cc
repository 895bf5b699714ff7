// Issue 39 item 2: the probe collector fed the file_sd targets file that
// Prometheus scrapes (every target on the metrics port) as its peers_file.
// The probe port replaces each target's port, so the probes reach the
// responder; a target where no responder answers is unanswered: a series
// (fabric_probe_peer_unanswered_seconds) and a warning naming it.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "collectors/probe.h"
#include "collectors/registry.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

TEST(ProbeUnansweredTest, FileSdTargetsAreProbedOnTheProbePort) {
  testing::TempDir dir("fabricmon-probe-unanswered");
  const std::string key = (std::filesystem::path(dir.path()) / "key").string();
  std::ofstream(key) << std::string(64, 'a') << "\n";
  ::chmod(key.c_str(), 0600);
  // The targets file as deploy.md's Prometheus reads it: the metrics
  // port. 127.0.0.1 is this collector itself (it answers its own probes),
  // 127.0.0.2 has nothing on the probe port.
  const std::string file =
      (std::filesystem::path(dir.path()) / "fabricmon.json").string();
  std::ofstream(file) << R"([
  {"targets": ["127.0.0.1:10915", "127.0.0.2:10915"], "labels": {"cluster": "t"}}
])";
  const int port = testing::FreeUdpPort();
  ProbeSettings s;
  s.transport = "udp";
  s.listen_address = probe::Endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                     static_cast<std::uint16_t>(port));
  s.probe_timeout = 100ms;
  s.peers_file = file;
  s.key_file = key;
  s.key = Key(32, 0xaa);
  s.trace_interval = 0s;
  CollectorConfig c;
  c.interval = 20ms;
  c.settings = std::make_shared<SettingsOf<ProbeSettings>>(s);
  CollectorEnv env;
  auto collector = MakeCollector("probe", env, c);
  ASSERT_TRUE(collector);

  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);

  boost::asio::io_context io;
  collector->Start(io);
  std::thread runner([&io] {
    auto guard = boost::asio::make_work_guard(io);
    io.run_for(60s);
  });
  const std::string self_rtt =
      "fabric_probe_rtt_seconds_count{peer=\"127.0.0.1\",transport=\"udp\"}";
  const std::string unanswered =
      "fabric_probe_peer_unanswered_seconds{peer=\"127.0.0.2\"}";
  std::string text;
  // The unanswered threshold is 10 s at this interval: wait up to 40 s.
  for (int i = 0; i < 400; ++i) {
    MetricSink sink;
    collector->Collect(sink);
    text = ToText(sink.Take());
    if (text.find(unanswered) != std::string::npos &&
        log.str().find("127.0.0.2") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  boost::asio::post(io, [&] {
    collector->Stop();
    io.stop();
  });
  runner.join();
  spdlog::set_default_logger(previous);

  // Probed on the probe port, so answered: an RTT count above zero and no
  // unanswered series for the collector's own address.
  const auto at = text.find(self_rtt);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.substr(at + self_rtt.size(), 3), " 0\n") << text;
  EXPECT_EQ(
      text.find("fabric_probe_peer_unanswered_seconds{peer=\"127.0.0.1\""),
      std::string::npos)
      << text;
  // No responder on 127.0.0.2's probe port: unanswered, and logged by name
  // with where the probes went.
  EXPECT_NE(text.find(unanswered), std::string::npos) << text;
  const std::string said = log.str();
  EXPECT_NE(said.find("no authenticated answer from 1 peer(s): 127.0.0.2 "
                      "(UDP 127.0.0.2:" +
                      std::to_string(port) + ", never answered"),
            std::string::npos)
      << said;
  // Once per silent spell, not per collection.
  std::size_t lines = 0;
  for (auto at = said.find("no authenticated answer"); at != std::string::npos;
       at = said.find("no authenticated answer", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << said;
}

}  // namespace
}  // namespace fabric
