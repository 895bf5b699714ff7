// The bench_agent collector: its settings, and the daemon's agent for real on
// loopback: it serves a whole fabricmon-bench run (sessions and bytes
// counted), and refuses a client with the wrong key (bad_mac) and garbage
// (malformed), counting each by reason.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "auth/key_file.h"
#include "benchtool/coordinator.h"
#include "benchtool/wire.h"
#include "collectors/bench_agent.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "core/metric_sink.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

// A key file with `mode` in `dir`, named `name`.
std::string WriteKey(const testing::TempDir& dir, const std::string& name,
                     std::filesystem::perms mode) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << GenerateKeyHex();
  std::filesystem::permissions(path, mode);
  return path;
}

TEST(BenchAgentSettings, DefaultsKeysAndErrors) {
  using std::filesystem::perms;
  testing::TempDir dir("fabricmon-bench-key");
  const std::string key =
      WriteKey(dir, "key", perms::owner_read | perms::owner_write);
  const std::string shared =
      WriteKey(dir, "shared",
               perms::owner_read | perms::owner_write | perms::group_read);
  ASSERT_FALSE(key.empty() || shared.empty());
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  auto c = config->Collector("bench_agent");
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(SettingsAs<BenchAgentSettings>(c).listen_address, ":10916");
  EXPECT_EQ(SettingsAs<BenchAgentSettings>(c).key_file, "");

  config = ParseConfig(
      "collectors:\n  bench_agent:\n    enabled: true\n"
      "    listen_address: 10.0.0.1:20000\n    key_file: " +
          key + "\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const auto& s =
      SettingsAs<BenchAgentSettings>(config->Collector("bench_agent"));
  EXPECT_EQ(s.listen_address, "10.0.0.1:20000");
  EXPECT_EQ(s.key_file, key);

  // Enabled: the key file is required, must exist and be owner-only, as
  // for probes; checked at parse (--check-config, reload).
  EXPECT_FALSE(ParseConfig("collectors:\n  bench_agent:\n    enabled: true\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.bench_agent.key_file"), std::string::npos)
      << error;
  for (const std::string& bad : {key + ".absent", shared}) {
    EXPECT_FALSE(
        ParseConfig("collectors:\n  bench_agent:\n    enabled: true\n"
                    "    key_file: " +
                        bad + "\n",
                    AllCollectorKeys(), &error))
        << bad;
    EXPECT_NE(error.find("collectors.bench_agent.key_file"), std::string::npos)
        << error;
  }
  // Disabled, it is not read.
  EXPECT_TRUE(ParseConfig(
      "collectors:\n  bench_agent:\n    key_file: " + key + ".absent\n",
      AllCollectorKeys(), &error))
      << error;
  EXPECT_FALSE(
      ParseConfig("collectors:\n  bench_agent:\n    listen_address: nowhere\n",
                  AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.bench_agent.listen_address (line 3)"),
            std::string::npos)
      << error;
}

// A loopback port free a moment ago (the collector takes a fixed
// listen_address, as in the daemon's config).
std::uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class BenchAgentCollectorTest : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = tmp_.path();
    key_path_ = (dir_ / "key").string();
    std::string hex = GenerateKeyHex();
    std::ofstream(key_path_) << hex;
    std::filesystem::permissions(key_path_,
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_write);
    std::string err;
    key_ = *ParseKeyHex(hex, &err);
    for (int i = 0; i < 2; ++i) {
      CollectorConfig config;
      BenchAgentSettings s;
      ports_.push_back(FreePort());
      s.listen_address = "127.0.0.1:" + std::to_string(ports_.back());
      s.key_file = key_path_;
      s.key = key_;
      config.settings = std::make_shared<SettingsOf<BenchAgentSettings>>(s);
      collectors_.push_back(MakeBenchAgentCollector(CollectorEnv{}, config));
      collectors_.back()->Start(io_);
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    std::promise<void> stopped;
    boost::asio::post(io_, [&] {
      for (auto& c : collectors_) c->Stop();
      stopped.set_value();
    });
    stopped.get_future().wait();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  std::string Text(int i, bool* ok = nullptr) {
    MetricSink sink;
    bool healthy = collectors_[i]->Collect(sink);
    if (ok) *ok = healthy;
    return ToText(sink.Take());
  }
  std::uint16_t Port(int i) const { return ports_[i]; }
  std::vector<std::uint16_t> ports_;

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_ = boost::asio::make_work_guard(io_);
  std::thread thread_;
  testing::TempDir tmp_{"fabricmon-bench-agent"};
  std::filesystem::path dir_;
  std::string key_path_;
  Key key_;
  std::vector<std::unique_ptr<Collector>> collectors_;
};

int Dial(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Waits (bounded) until agent i's exposition contains `needle`.
bool WaitFor(BenchAgentCollectorTest* t, int i, const std::string& needle,
             std::string* text) {
  for (int k = 0; k < 500; ++k) {
    *text = t->Text(i);
    if (text->find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(BenchAgentCollectorTest, ListensAndServesARun) {
  bool ok = false;
  std::string text = Text(0, &ok);
  EXPECT_TRUE(ok);
  EXPECT_NE(text.find("fabric_bench_agent_listening 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_bench_agent_refused_total{reason=\"bad_mac\"} 0"),
            std::string::npos);

  bench::RunOptions o;
  o.pattern = bench::Pattern::kAllreduceRing;
  o.hosts = {"127.0.0.1:" + std::to_string(Port(0)),
             "127.0.0.1:" + std::to_string(Port(1))};
  o.sizes = {4096};
  o.iterations = 3;
  o.warmup = 1;
  o.key = key_;
  auto out = bench::RunBenchmark(o);
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_EQ(out.sizes.size(), 1u);
  EXPECT_EQ(out.sizes[0].seconds.size(), 3u);
  // 4 operations (1 warm-up) of 2*(n-1)/n * 4096 bytes each way.
  EXPECT_TRUE(
      WaitFor(this, 0, "fabric_bench_agent_transmit_bytes_total 16384", &text))
      << text;
  EXPECT_NE(text.find("fabric_bench_agent_sessions_total 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_bench_agent_receive_bytes_total 16384\n"),
            std::string::npos);
}

TEST_F(BenchAgentCollectorTest, RefusesWrongKeyAndGarbage) {
  // A hello signed with another key.
  std::string err;
  Hmac wrong(*ParseKeyHex(std::string(64, 'e'), &err));
  int fd = Dial(Port(0));
  bench::Bytes hello =
      bench::SealFrame(wrong, {}, bench::MsgType::kHello, 0,
                       bench::EncodeHello({bench::Bytes(16, 1)}));
  ASSERT_EQ(write(fd, hello.data(), hello.size()),
            static_cast<ssize_t>(hello.size()));
  std::string text;
  EXPECT_TRUE(WaitFor(
      this, 0, "fabric_bench_agent_refused_total{reason=\"bad_mac\"} 1", &text))
      << text;
  close(fd);

  fd = Dial(Port(0));
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, junk.data(), junk.size()),
            static_cast<ssize_t>(junk.size()));
  EXPECT_TRUE(WaitFor(
      this, 0, "fabric_bench_agent_refused_total{reason=\"malformed\"} 1",
      &text))
      << text;
  // The agent closed the connection on us (a reset: our junk was unread).
  char buf[256];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf);
  } while (n > 0);
  EXPECT_LE(n, 0);
  close(fd);
  EXPECT_NE(text.find("fabric_bench_agent_sessions_total 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace fabric
