// Series floods through the push sources (issue 25, finding 6), against the
// real daemon: 100,000 distinct switch ports sent to the OpenSM socket in
// the plugin's wire format, and a peers file of 20,000 peers. The
// exposition stays within the configured cap, the excess is counted, the
// daemon's RSS (/proc/<pid>/status VmRSS) stays bounded, and a reload that
// lowers the cap drops the series and gives the memory back.
//
// No timing assertions: waits poll for a state with a generous bound.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/http.h"
#include "tests/support/osm_flood.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using Samples = std::map<std::string, double>;

// A bound against a broken daemon hanging the test, not a timing check.
constexpr auto kPatience = std::chrono::seconds(120);
// What "bounded" means here: the unbounded daemon reached 2.2 GB.
constexpr long kRssBoundKb = 200 * 1024;
constexpr int kFloodPorts = 100'000;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// Polls `done` until it holds or kPatience passes.
bool WaitFor(const std::function<bool()>& done) {
  return fabric::testing::WaitFor(done, kPatience,
                                  std::chrono::milliseconds(200));
}

// `fabricmon --config <config>` on an empty sysfs tree, serving on a free
// loopback port; stderr kept in a file. Killed at the end.
class Daemon {
 public:
  Daemon(const fs::path& dir, const std::string& config)
      : stderr_path_(dir / "stderr") {
    const std::string bin = testing::Binary("fabricmon");
    const std::string sysfs = dir / "sysfs";
    fs::create_directories(sysfs);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      execl(bin.c_str(), bin.c_str(), "--config", config.c_str(),
            "--sysfs.root", sysfs.c_str(), "--web.listen-address",
            "127.0.0.1:0", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Daemon() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  std::string Stderr() const { return ReadFile(stderr_path_); }
  void Signal(int sig) { kill(pid_, sig); }
  bool Running() { return waitpid(pid_, nullptr, WNOHANG) == 0; }

  // The port of the "listening on HOST:PORT" log line, 0 before it.
  int Port() const {
    static const std::regex re("listening on [^\\s]+:([0-9]+)");
    const std::string err = Stderr();
    std::smatch m;
    return std::regex_search(err, m, re) ? std::stoi(m[1]) : 0;
  }

  long RssKb() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

 private:
  std::string stderr_path_;
  pid_t pid_ = -1;
};

// Series of family `name` in exposition `text`.
int CountSeries(const std::string& text, const std::string& name) {
  int n = 0;
  std::istringstream in(text);
  std::string line;
  const std::string open = name + "{";
  while (std::getline(in, line)) n += line.rfind(open, 0) == 0 ? 1 : 0;
  return n;
}

double Value(const Samples& s, const std::string& series) {
  auto it = s.find(series);
  return it == s.end() ? -1 : it->second;
}

// The daemon's exposition once `done` holds for it ("" if it never does).
std::string ScrapeWhen(int port,
                       const std::function<bool(const Samples&)>& done) {
  std::string text;
  WaitFor([&] {
    text = testing::HttpGetOk(port, "/metrics").value_or("");
    return !text.empty() && done(testing::ParseSamples(text));
  });
  return text;
}

class SeriesCapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    config_ = dir_ / "fabricmon.yaml";
  }

  // Collectors that read the host are off (sm, where built, finds no
  // device in the empty tree): the push source is what grows.
  static std::string Config(const std::string& collector) {
    return "collectors:\n"
           "  ib_port: {enabled: false}\n"
           "  hw_counters: {enabled: false}\n"
           "  congestion: {enabled: false}\n"
           "  roce: {enabled: false}\n"
           "  nic_identity: {enabled: false}\n" +
           collector;
  }
  testing::TempDir tmp_{"fabricmon-series-cap"};

  fs::path dir_;
  std::string config_;
};

std::string OpensmConfig(const std::string& socket, int max_ports) {
  return "  opensm:\n    enabled: true\n    socket: " + socket +
         "\n    max_switch_ports: " + std::to_string(max_ports) + "\n";
}

TEST_F(SeriesCapTest, OpensmPortFloodStaysWithinTheCapAndALowerCapFrees) {
  const std::string socket = dir_ / "osm.sock";
  WriteFile(config_, Config(OpensmConfig(socket, 4'000)));
  Daemon daemon(dir_, config_);
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const int port = daemon.Port();
  const std::string events = "fabric_opensm_events_total{event=\"";
  // Bound: the first collection has seen the socket.
  ASSERT_NE(ScrapeWhen(port,
                       [&](const Samples& s) {
                         return Value(s, events + "port_errors\"}") == 0;
                       }),
            "")
      << daemon.Stderr();
  const long base_kb = daemon.RssKb();

  ASSERT_EQ(testing::FloodSwitchPorts(socket, kFloodPorts), "");
  std::string text = ScrapeWhen(port, [&](const Samples& s) {
    return Value(s, events + "port_data_counters\"}") == kFloodPorts;
  });
  ASSERT_NE(text, "") << daemon.Stderr();
  Samples s = testing::ParseSamples(text);
  EXPECT_EQ(Value(s, "fabric_opensm_switch_ports"), 4'000);
  EXPECT_EQ(Value(s, events + "port_errors\"}"), kFloodPorts);
  EXPECT_EQ(Value(s, "fabric_opensm_port_events_over_cap_total"),
            2.0 * (kFloodPorts - 4'000));
  EXPECT_EQ(CountSeries(text, "fabric_switch_port_errors_total"), 48'000);
  EXPECT_EQ(CountSeries(text, "fabric_switch_port_transmit_bytes_total"),
            4'000);
  const long peak_kb = daemon.RssKb();
  EXPECT_LT(peak_kb, kRssBoundKb);

  // A lower cap restarts the collector: its ports and the snapshots that
  // held their series are freed, and the next flood keeps 400.
  WriteFile(config_, Config(OpensmConfig(socket, 400)));
  daemon.Signal(SIGHUP);
  ASSERT_NE(ScrapeWhen(port,
                       [&](const Samples& s) {
                         return Value(s, events + "port_errors\"}") == 0;
                       }),
            "")
      << daemon.Stderr();
  // At least half of what the larger cap took is given back to the system
  // once the poller has retired the snapshot that held the old series (at
  // a publish after the last scrape of it let go; later on a loaded
  // machine).
  long freed_kb = daemon.RssKb();
  for (int i = 0; i < 100 && freed_kb - base_kb >= (peak_kb - base_kb) / 2;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    freed_kb = daemon.RssKb();
  }
  EXPECT_LT(freed_kb - base_kb, (peak_kb - base_kb) / 2)
      << "RSS " << base_kb << " kB at start, " << peak_kb << " kB at 4,000 "
      << "ports, " << freed_kb << " kB after the cap went down to 400";
  ASSERT_EQ(testing::FloodSwitchPorts(socket, kFloodPorts), "");
  text = ScrapeWhen(port, [&](const Samples& s) {
    return Value(s, events + "port_data_counters\"}") == kFloodPorts;
  });
  ASSERT_NE(text, "") << daemon.Stderr();
  s = testing::ParseSamples(text);
  EXPECT_EQ(Value(s, "fabric_opensm_switch_ports"), 400);
  EXPECT_EQ(Value(s, "fabric_opensm_port_events_over_cap_total"),
            2.0 * (kFloodPorts - 400));
  EXPECT_EQ(CountSeries(text, "fabric_switch_port_errors_total"), 4'800);
  // The second flood, kept to 400 ports, does not grow it back to the peak
  // (its transient garbage stays with the allocator until the next trim).
  EXPECT_LT(daemon.RssKb(), peak_kb);
  EXPECT_TRUE(daemon.Running()) << daemon.Stderr();
}

int FreeUdpPort() {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

std::string ProbeConfig(int listen, const std::string& key,
                        const std::string& peers, int max_peers) {
  return "  probe:\n    enabled: true\n    interval: 1s\n"
         "    listen_address: \"127.0.0.1:" +
         std::to_string(listen) + "\"\n    key_file: " + key +
         "\n    peers_file: " + peers +
         "\n    max_peers: " + std::to_string(max_peers) + "\n";
}

TEST_F(SeriesCapTest, ProbePeersFileOverTheCapIsCountedNotProbed) {
  const std::string key = dir_ / "probe.key", peers = dir_ / "peers";
  WriteFile(key, std::string(64, 'a') + "\n");
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  const int listen = FreeUdpPort(), dead = FreeUdpPort();
  ASSERT_GT(listen, 0);
  ASSERT_GT(dead, 0);
  // 20,000 distinct loopback addresses where nobody answers.
  constexpr int kPeers = 20'000;
  {
    std::ofstream out(peers);
    for (int i = 0; i < kPeers; ++i) {
      out << "127.1." << i / 250 << "." << i % 250 + 1 << ":" << dead << "\n";
    }
  }
  WriteFile(config_, Config(ProbeConfig(listen, key, peers, 500)));
  Daemon daemon(dir_, config_);
  ASSERT_TRUE(WaitFor([&] { return daemon.Port() > 0; })) << daemon.Stderr();
  const int port = daemon.Port();
  // The peer list reaches the engine on the io thread after the collection
  // that read the file: wait for a snapshot with both.
  auto probing = [](const Samples& s, int peers) {
    int n = 0;
    for (const auto& [series, value] : s) {
      n += series.rfind("fabric_probe_sent_total{", 0) == 0 ? 1 : 0;
    }
    return Value(s, "fabric_probe_peers_over_cap") == kPeers - peers &&
           n == peers;
  };
  std::string text =
      ScrapeWhen(port, [&](const Samples& s) { return probing(s, 500); });
  ASSERT_NE(text, "") << daemon.Stderr();
  EXPECT_EQ(CountSeries(text, "fabric_probe_sent_total"), 500);
  EXPECT_EQ(CountSeries(text, "fabric_probe_lost_total"), 500);
  EXPECT_LT(daemon.RssKb(), kRssBoundKb);

  WriteFile(config_, Config(ProbeConfig(listen, key, peers, 100)));
  daemon.Signal(SIGHUP);
  text = ScrapeWhen(port, [&](const Samples& s) { return probing(s, 100); });
  ASSERT_NE(text, "") << daemon.Stderr();
  EXPECT_EQ(CountSeries(text, "fabric_probe_sent_total"), 100);
  EXPECT_EQ(CountSeries(text, "fabric_probe_rtt_seconds_count"), 100);
  EXPECT_LT(daemon.RssKb(), kRssBoundKb);
  EXPECT_TRUE(daemon.Running()) << daemon.Stderr();
}

}  // namespace
}  // namespace fabric
