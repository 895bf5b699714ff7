// Integration: two real fabricmon daemons in network namespaces joined by
// veth pairs probe each other through a test-only UDP relay
// (tests/support/udp_relay.h) in a namespace of its own, which delays every
// probe from A to B by a set time and drops every Nth. Read from the
// daemons' /metrics: the median network RTT moves with the delay (0, 200 µs,
// 1 ms) within max(50 µs, 10%) of the time the relay measured it added over
// its zero-delay baseline; measured loss
// equals the drop rate (0, 1/100, 1/10) within 0.5 percentage points; a
// prober with the wrong key gets no answers and the responder counts
// bad_mac; a dead peer is loss; a replayed probe is rejected; a flood of
// forged ICMP port unreachables about A's flow is not loss; the pair
// info names the RDMA ports behind both ends' netdevs; a daemon at the
// defaults exports at most 8 series per pair (issue 30).
//
// Rails (issue 29), in namespaces of their own: two hosts X and Y joined by
// two veth pairs, one per rail (px0-py0 169.254.95.0/30, px1-py1
// 169.254.96.0/30), each daemon with `rails` r0 and r1, one per address.
// Each rail probes its own peer with its own responder, and its pair info
// names that rail's ports at both ends. ProbeRailsByDeviceNetnsTest: the
// same with each rail given by RDMA device and port instead of address
// (r0 a fake RoCE port naming px0/py0, r1 a fake IPoIB port whose netdev
// px1/py1 carries its GID): each daemon finds the rail's netdev and its
// address in its namespace and binds it; a rail on a device this host
// lacks is down (fabric_probe_rail_up 0) while the others probe.
//
// Topology (addresses link-local, inside namespaces this test creates):
//   ns A: fabricmon A, pa 169.254.91.1/30
//   ns R: relay, ra 169.254.91.2/30, rb 169.254.92.2/30
//         A->B: front 169.254.91.2:20000 -> 169.254.92.1:10916 (delay/drop)
//         B->A: front 169.254.92.2:20001 -> 169.254.91.1:10916
//   ns B: fabricmon B, pb 169.254.92.1/30; fabricmon C (wrong key) probes
//         B over B's loopback.
// Needs root and `ip`; skips outside CI without them (MISSING_DEPENDENCY).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/icmp_forge.h"
#include "tests/support/paths.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"
#include "tests/support/udp_relay.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::UdpRelay;

constexpr char kKey[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
constexpr char kWrongKey[] =
    "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";
constexpr int kMetricsPort = 19915;
// When the probe statistics a scrape shows were taken.
constexpr char kPublished[] =
    "fabric_collector_last_success_timestamp_seconds{collector=\"probe\"}";

using testing::InNetns;
using testing::Sh;

struct Daemon {
  pid_t pid = -1;
  std::string ns;
  std::string log;
};

// The parts of a scrape the test reads.
struct Scrape {
  std::map<std::string, double> samples;
  double Get(const std::string& series) const {
    auto it = samples.find(series);
    return it == samples.end() ? NAN : it->second;
  }
};

// The start of a daemon's config: every collector but the probe off, the
// probe on at 1 ms (its other keys follow, indented by four).
std::string DaemonConfigHead() {
  std::string out = "collectors:\n";
  for (const char* off : {"ib_port", "hw_counters", "congestion", "roce",
                          "nic_identity", "sm", "fabric"}) {
    out += std::string("  ") + off + ": {enabled: false}\n";
  }
  return out + "  probe:\n    enabled: true\n    interval: 1ms\n";
}

// Starts fabricmon in netns `ns` on `config`, its output to `log`.
Daemon Spawn(const std::string& ns, const fs::path& config, const fs::path& log,
             const fs::path& sysfs, int metrics_port) {
  Daemon d;
  d.ns = ns;
  d.log = log.string();
  d.pid = ::fork();
  if (d.pid == 0) {
    int fd = ::open(d.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::string bin = testing::Binary("fabricmon");
    std::string listen_web = "127.0.0.1:" + std::to_string(metrics_port);
    std::string cfg = config.string(), root = sysfs.string();
    ::execlp("ip", "ip", "netns", "exec", ns.c_str(), bin.c_str(), "--config",
             cfg.c_str(), "--sysfs.root", root.c_str(), "--web.listen-address",
             listen_web.c_str(), nullptr);
    ::_exit(127);
  }
  return d;
}

// Waits until `d` serves probe series on `port`.
bool Ready(const Daemon& d, int port) {
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(d.pid, nullptr, WNOHANG) != 0) {
      ADD_FAILURE() << "daemon in " << d.ns << " exited; log " << d.log;
      return false;
    }
    auto body =
        InNetns(d.ns, [&] { return testing::HttpGetOk(port, "/metrics"); });
    if (body && body->find("fabric_probe_sent_total") != std::string::npos)
      return true;
    std::this_thread::sleep_for(100ms);
  }
  ADD_FAILURE() << "daemon in " << d.ns << " never served probes; log "
                << d.log;
  return false;
}

// A fake RDMA port behind netdev `ndev` in the sysfs tree `sysfs`, as a
// RoCE device lists its netdev in its GID table, so that the port
// exchange names it: node GUID `guid` (sysfs form), GID fe80::`gid_tail`.
void FakeRocePort(const fs::path& sysfs, const std::string& dev,
                  const std::string& ndev, const std::string& guid,
                  const std::string& gid_tail) {
  const fs::path port = sysfs / "class/infiniband" / dev / "ports/1";
  fs::create_directories(port / "gids");
  fs::create_directories(port / "gid_attrs/ndevs");
  std::ofstream(sysfs / "class/infiniband" / dev / "node_guid") << guid << "\n";
  std::ofstream(port / "link_layer") << "Ethernet\n";
  std::ofstream(port / "lid") << "0x0\n";
  std::ofstream(port / "gids/0")
      << "fe80:0000:0000:0000:0000:0000:0000:" << gid_tail << "\n";
  std::ofstream(port / "gid_attrs/ndevs/0") << ndev << "\n";
}

// A fake IPoIB port `dev` port 1 (LID `lid`) behind netdev `ndev`, whose
// hardware address carries the port's GID fe80::2:c903:0:`gid_tail`, so
// both the reverse lookup (device/port to netdev) and the port exchange
// name it.
void FakeIpoibPort(const fs::path& sysfs, const std::string& dev,
                   const std::string& ndev, const std::string& guid,
                   const std::string& gid_tail, int lid) {
  const fs::path port = sysfs / "class/infiniband" / dev / "ports/1";
  fs::create_directories(port / "gids");
  fs::create_directories(sysfs / "class/net" / ndev);
  std::ofstream(sysfs / "class/infiniband" / dev / "node_guid") << guid << "\n";
  std::ofstream(port / "link_layer") << "InfiniBand\n";
  std::ofstream(port / "lid") << "0x" << std::hex << lid << "\n";
  std::ofstream(port / "gids/0")
      << "fe80:0000:0000:0000:0002:c903:0000:" << gid_tail << "\n";
  std::ofstream(sysfs / "class/net" / ndev / "type") << "32\n";
  std::ofstream(sysfs / "class/net" / ndev / "address")
      << "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:"
      << gid_tail.substr(0, 2) << ":" << gid_tail.substr(2, 2) << "\n";
}

// Median of the observations between two scrapes of histogram `name` with
// labels `labels` (as printed, without le), interpolated linearly inside
// the bucket as PromQL's histogram_quantile does.
double DeltaMedian(const Scrape& before, const Scrape& after,
                   const std::string& name, const std::string& labels) {
  std::vector<std::pair<double, double>> buckets;  // le, delta count
  for (const auto& [series, value] : after.samples) {
    std::string prefix = name + "_bucket{" + labels + ",le=\"";
    if (series.rfind(prefix, 0) != 0) continue;
    std::string le = series.substr(prefix.size());
    le = le.substr(0, le.find('"'));
    double bound = le == "+Inf" ? INFINITY : std::stod(le);
    double was = before.Get(series);
    buckets.push_back({bound, value - (std::isnan(was) ? 0 : was)});
  }
  std::sort(buckets.begin(), buckets.end());
  if (buckets.empty() || buckets.back().second <= 0) return NAN;
  double total = buckets.back().second, want = total / 2;
  double lower = 0, below = 0;
  for (auto [le, cumulative] : buckets) {
    if (cumulative >= want) {
      if (std::isinf(le)) return lower;
      return lower + (le - lower) * (want - below) / (cumulative - below);
    }
    lower = le;
    below = cumulative;
  }
  return NAN;
}

class ProbeNetnsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || !Sh("ip -V")) return;
    env_ = new Env();
    if (!env_->Up()) {
      env_->Down();
      delete env_;
      env_ = nullptr;
      setup_failed_ = true;
      return;
    }
    // ctest runs each case in its own process, right after the daemons
    // start: let probes flow and every daemon publish once, so that a
    // case's first scrape is a baseline rather than a daemon still starting.
    for (int i = 0; i < 500 && env_->ab->forwarded() < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  static void TearDownTestSuite() {
    if (env_) env_->Down();
    delete env_;
    env_ = nullptr;
  }
  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root to create netns");
    if (!Sh("ip -V")) MISSING_DEPENDENCY("iproute2 `ip` not installed");
    ASSERT_FALSE(setup_failed_) << "namespace/daemon setup failed";
    ASSERT_NE(env_, nullptr);
  }

  struct Env {
    std::string a, b, r;
    fs::path dir;
    Daemon da, db, dc;
    std::unique_ptr<UdpRelay> ab, ba;

    bool Up() {
      std::string id = std::to_string(::getpid());
      a = "fmpa" + id;
      b = "fmpb" + id;
      r = "fmpr" + id;
      dir = fs::temp_directory_path() / ("fabricmon-probe-" + id);
      fs::create_directories(dir / "sysfs");
      RemoveStaleNamespaces();
      for (const auto& ns : {a, b, r}) {
        if (!Sh("ip netns add " + ns)) return false;
        if (!Sh("ip -n " + ns + " link set lo up")) return false;
      }
      const std::string cmds[] = {
          "ip -n " + r + " link add ra type veth peer name pa netns " + a,
          "ip -n " + r + " link add rb type veth peer name pb netns " + b,
          "ip -n " + a + " addr add 169.254.91.1/30 dev pa",
          "ip -n " + r + " addr add 169.254.91.2/30 dev ra",
          "ip -n " + b + " addr add 169.254.92.1/30 dev pb",
          "ip -n " + r + " addr add 169.254.92.2/30 dev rb",
          "ip -n " + a + " link set pa up",
          "ip -n " + r + " link set ra up",
          "ip -n " + r + " link set rb up",
          "ip -n " + b + " link set pb up",
      };
      for (const auto& c : cmds) {
        if (!Sh(c)) {
          ADD_FAILURE() << "failed: " << c;
          return false;
        }
      }
      ab = std::make_unique<UdpRelay>(r, "169.254.91.2", 20000, "169.254.92.1",
                                      10916);
      ba = std::make_unique<UdpRelay>(r, "169.254.92.2", 20001, "169.254.91.1",
                                      10916);
      std::string error;
      if (!ab->Start(&error) || !ba->Start(&error)) {
        ADD_FAILURE() << "relay: " << error;
        return false;
      }
      // The daemons' sysfs tree: an RDMA port behind each end's netdev, as
      // a RoCE device lists its netdev in its GID table, so the port
      // exchange names both ends' ports.
      FakeRocePort(dir / "sysfs", "rxe_a", "pa", "0000:0000:0000:0a0a", "0a01");
      FakeRocePort(dir / "sysfs", "rxe_b", "pb", "0000:0000:0000:0b0b", "0b01");
      WriteKey("key", kKey);
      WriteKey("wrong.key", kWrongKey);
      // A also probes a peer where nothing listens: a dead peer.
      // A exports per-peer histograms (the median test reads their
      // buckets); B and C the default, lean series.
      da = Start(a, "a", "key", {"169.254.91.2:20000", "169.254.91.2:20099"},
                 ":10916", kMetricsPort, "    per_peer_histograms: true\n");
      db = Start(b, "b", "key", {"169.254.92.2:20001"});
      dc = Start(b, "c", "wrong.key", {"127.0.0.1:10916"}, ":10917", 19916);
      return Ready(da, kMetricsPort) && Ready(db, kMetricsPort) &&
             Ready(dc, 19916);
    }

    void WriteKey(const std::string& name, const char* text) {
      std::ofstream(dir / name) << text;
      ::chmod((dir / name).c_str(), 0600);
    }

    Daemon Start(const std::string& ns, const std::string& name,
                 const std::string& key, std::vector<std::string> peers,
                 const std::string& listen = ":10916",
                 int metrics_port = kMetricsPort,
                 const std::string& extra = "") {
      fs::path config = dir / (name + ".yaml");
      std::ofstream out(config);
      out << DaemonConfigHead() << "    probe_timeout: 50ms\n"
          << "    listen_address: \"" << listen
          << "\"\n    key_file: " << (dir / key).string() << "\n"
          << extra << "    peers:\n";
      for (const auto& p : peers) out << "      - \"" << p << "\"\n";
      out.close();
      return Spawn(ns, config, dir / (name + ".log"), dir / "sysfs",
                   metrics_port);
    }

    // A run killed before TearDownTestSuite (a sanitizer's abort, ctest's
    // timeout) leaves its namespaces behind: remove those whose process is
    // gone.
    static void RemoveStaleNamespaces() {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator("/run/netns", ec)) {
        std::string name = e.path().filename();
        if (name.size() < 5 || name.rfind("fmp", 0) != 0 ||
            std::string_view("abrxy").find(name[3]) == std::string::npos ||
            name.find_first_not_of("0123456789", 4) != std::string::npos) {
          continue;
        }
        pid_t pid = std::atoi(name.c_str() + 4);
        if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
          Sh("ip netns del " + name);
        }
      }
    }

    void Down() {
      for (Daemon* d : {&da, &db, &dc}) {
        if (d->pid > 0) {
          ::kill(d->pid, SIGTERM);
          ::waitpid(d->pid, nullptr, 0);
          d->pid = -1;
        }
      }
      if (ab) ab->Stop();
      if (ba) ba->Stop();
      for (const auto& ns : {a, b, r}) {
        if (!ns.empty()) Sh("ip netns del " + ns);
      }
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  };

  static Scrape Get(const Daemon& d, int port = kMetricsPort) {
    auto body =
        InNetns(d.ns, [&] { return testing::HttpGetOk(port, "/metrics"); });
    EXPECT_TRUE(body) << "scrape of " << d.ns << " failed";
    return Scrape{body ? testing::ParseSamples(*body)
                       : std::map<std::string, double>{}};
  }

  // Scrapes of A before and after a window of `seconds` under the current
  // relay settings. A daemon publishes its probe statistics about once a
  // second, later on a loaded machine, so each scrape waits for a snapshot
  // published late enough: the first for one taken after the change (and
  // after probe_timeout, so no probe sent before it is still pending), the
  // second for one at least `seconds` after the first.
  static std::pair<Scrape, Scrape> Window(double seconds) {
    const double changed = UnixSeconds();
    Scrape before = ScrapePublishedAfter(changed + 0.1);
    Scrape after = ScrapePublishedAfter(before.Get(kPublished) + seconds);
    return {before, after};
  }

  static Scrape ScrapePublishedAfter(double unix_seconds,
                                     const Daemon& d = env_->da,
                                     int port = kMetricsPort) {
    Scrape s;
    for (int i = 0; i < 200; ++i) {
      s = Get(d, port);
      if (s.Get(kPublished) >= unix_seconds) return s;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "no probe snapshot published after " << unix_seconds;
    return s;
  }

  static double UnixSeconds() {
    return std::chrono::duration<double>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  static Env* env_;
  static bool setup_failed_;
};

ProbeNetnsTest::Env* ProbeNetnsTest::env_ = nullptr;
bool ProbeNetnsTest::setup_failed_ = false;

constexpr char kToB[] = "peer=\"169.254.91.2:20000\",transport=\"udp\"";

// The median network RTT (the RTT minus the responder's own hold, from its
// timestamps) moves with the delay within max(50 µs, 10%) of what the relay
// really added: the set delay plus its own wake-ups, which on a shared VM
// are tens to hundreds of µs and vary from window to window. The relay
// measures that per probe (kernel receive stamp to send, both ways) over
// the same probes the two scrapes' snapshots bracket. The plain RTT also
// holds the responder's wake-up (hundreds of µs that differ between
// windows on a loaded machine), which is what the network RTT subtracts.
TEST_F(ProbeNetnsTest, MedianRttMovesWithTheRelayDelay) {
  env_->ab->set_drop_every(0);
  struct Reading {
    double rtt, network, relay;
  };
  std::optional<Reading> zero;
  for (int delay_us : {0, 200, 1000}) {
    env_->ab->set_delay(std::chrono::microseconds(delay_us));
    auto [before, after] = Window(2.0);
    // Medians read back from the daemon's buckets as histogram_quantile
    // does; the relay's figure over the probes it answered between the two
    // snapshots the scrapes saw.
    Reading now{
        DeltaMedian(before, after, "fabric_probe_rtt_seconds", kToB),
        DeltaMedian(before, after, "fabric_probe_network_rtt_seconds", kToB),
        std::chrono::duration<double>(
            env_->ab->MedianHeld(before.Get(kPublished), after.Get(kPublished)))
            .count()};
    ASSERT_FALSE(std::isnan(now.rtt)) << "no answers at delay " << delay_us;
    if (!zero) zero = now;
    const double want = delay_us * 1e-6;
    const double applied = now.relay - zero->relay;
    const double shift = now.network - zero->network;
    std::cout << "delay " << delay_us << " us: median RTT " << now.rtt * 1e6
              << " us, median network RTT " << now.network * 1e6
              << " us, relay added " << now.relay * 1e6
              << " us; network RTT shift " << shift * 1e6
              << " us vs relay shift " << applied * 1e6 << " us, error "
              << (shift - applied) * 1e6 << " us\n";
    if (delay_us == 0) continue;
    // The relay held every datagram at least as long as it was set to.
    EXPECT_GE(now.relay, want);
    EXPECT_LE(now.network, now.rtt);
    EXPECT_NEAR(shift, applied, std::max(50e-6, 0.1 * want))
        << "delay " << delay_us;
  }
  env_->ab->set_delay(0us);
}

TEST_F(ProbeNetnsTest, LossEqualsTheDropRate) {
  env_->ab->set_delay(0us);
  for (int every : {0, 100, 10}) {
    env_->ab->set_drop_every(every);
    auto [before, after] = Window(every == 0 ? 1.5 : 4.0);
    std::string sent = std::string("fabric_probe_sent_total{") + kToB + "}";
    std::string lost = std::string("fabric_probe_lost_total{") + kToB + "}";
    double n = after.Get(sent) - before.Get(sent);
    double l = after.Get(lost) - before.Get(lost);
    ASSERT_GT(n, 500) << "too few probes in the window";
    // Of the probes resolved in the window (answered or lost): the ones
    // still waiting for an answer at either scrape are in neither.
    std::string count =
        std::string("fabric_probe_rtt_seconds_count{") + kToB + "}";
    double answered = after.Get(count) - before.Get(count);
    std::cout << "drop every " << every << ": " << l << " lost of " << n
              << " sent, " << answered << " answered; relay dropped "
              << env_->ab->dropped() << " in all\n";
    double want = every ? 1.0 / every : 0.0;
    EXPECT_NEAR(l / (l + answered), want, 0.005)
        << "drop every " << every << ": " << l << " lost of " << n;
  }
  env_->ab->set_drop_every(0);
}

TEST_F(ProbeNetnsTest, WrongKeyGetsNoAnswersAndIsCountedBadMac) {
  // Snapshots published at least 1.5 s apart (a loaded machine publishes
  // late: two scrapes 1.5 s apart may show the same one).
  Scrape b0 = Get(env_->db), c0 = Get(env_->dc, 19916);
  Scrape b1 = ScrapePublishedAfter(b0.Get(kPublished) + 1.5, env_->db);
  Scrape c1 = ScrapePublishedAfter(c0.Get(kPublished) + 1.5, env_->dc, 19916);
  const std::string bad = "fabric_probe_rejected_total{reason=\"bad_mac\"}";
  EXPECT_GT(b1.Get(bad) - b0.Get(bad), 100);
  const std::string to_b = "peer=\"127.0.0.1:10916\",transport=\"udp\"";
  EXPECT_EQ(c1.Get("fabric_probe_rtt_seconds_count{" + to_b + "}"), 0);
  EXPECT_GT(c1.Get("fabric_probe_lost_total{" + to_b + "}"), 100);
}

TEST_F(ProbeNetnsTest, DeadPeerIsLoss) {
  auto [before, after] = Window(2.0);
  const std::string dead = "peer=\"169.254.91.2:20099\",transport=\"udp\"";
  double n = after.Get("fabric_probe_sent_total{" + dead + "}") -
             before.Get("fabric_probe_sent_total{" + dead + "}");
  double l = after.Get("fabric_probe_lost_total{" + dead + "}") -
             before.Get("fabric_probe_lost_total{" + dead + "}");
  // Snapshots are published once a second, so the window between two
  // scrapes is 1 to 3 s of probes; the count is not what is checked.
  ASSERT_GT(n, 200);
  // All lost but those still within probe_timeout (50 ms) at the scrape.
  EXPECT_NEAR(l / n, 1.0, 0.1) << l << " lost of " << n;
  EXPECT_EQ(after.Get("fabric_probe_rtt_seconds_count{" + dead + "}"), 0);
}

// Issue 40: ICMP port unreachables forged from the relay's address (on A's
// link, as anyone there could), quoting A's probe flow to B, flood A's
// probe socket. Each left an error pending that failed A's next send, and
// a failed send counted as lost: the flood made most probes "lost". Loss
// is only a probe sent whose authenticated answer did not come: A keeps
// sending to B (a failed send is retried) and loses none of them.
TEST_F(ProbeNetnsTest, ForgedPortUnreachablesAreNotLoss) {
  env_->ab->set_drop_every(0);
  env_->ab->set_delay(0us);
  testing::QuotedUdp flow{
      "169.254.91.1", "169.254.91.2", 10916, 20000,
      std::vector<std::uint8_t>{'F', 'M', 'P', 'B', 1, 1, 0, 0}};
  const auto forged = testing::ForgedIcmp("169.254.91.2", "169.254.91.1",
                                          /*type=*/3, /*code=*/3, flow);
  std::atomic<bool> stop{false};
  std::atomic<long> flood{0};
  std::string flood_error;
  std::thread attacker([&] {
    InNetns(env_->r, [&] {
      while (!stop) {
        if (!testing::SendRaw(forged, 50, &flood_error)) return false;
        flood += 50;
        std::this_thread::sleep_for(5ms);  // ~10,000 a second
      }
      return true;
    });
  });
  auto [before, after] = Window(3.0);
  stop = true;
  attacker.join();
  ASSERT_TRUE(flood_error.empty()) << flood_error;
  ASSERT_GT(flood.load(), 1000) << "the flood did not run";
  const std::string sent = std::string("fabric_probe_sent_total{") + kToB + "}";
  const std::string lost = std::string("fabric_probe_lost_total{") + kToB + "}";
  const std::string count =
      std::string("fabric_probe_rtt_seconds_count{") + kToB + "}";
  const double n = after.Get(sent) - before.Get(sent);
  const double l = after.Get(lost) - before.Get(lost);
  const double answered = after.Get(count) - before.Get(count);
  std::cout << flood.load() << " forged port unreachables: " << l << " lost of "
            << n << " sent, " << answered << " answered\n";
  ASSERT_GT(n, 500) << "too few probes in the window";
  // As LossEqualsTheDropRate at drop 0: within 0.5 points of none.
  EXPECT_NEAR(l / (l + answered), 0.0, 0.005) << l << " lost of " << n;
  EXPECT_FALSE(std::isnan(
      after.Get("fabric_probe_send_errors_total{transport=\"udp\"}")));
}

// Probes that know their ports (issue 29): A's pair with B names A's port
// (behind pa, the netdev B's answers arrive by) and B's (behind pb, the
// netdev A's request reached B by), once, as fabric_probe_pair_info; the
// dead peer, which never answers, has none.
TEST_F(ProbeNetnsTest, PairInfoNamesThePortsBothEndsUse) {
  auto pair_info = [](const Scrape& s, const std::string& peer) {
    for (const auto& [series, value] : s.samples) {
      if (series.rfind("fabric_probe_pair_info{", 0) == 0 &&
          series.find("peer=\"" + peer + "\"") != std::string::npos) {
        return series;
      }
    }
    return std::string();
  };
  Scrape a;
  for (int i = 0; i < 50; ++i) {
    a = ScrapePublishedAfter(UnixSeconds() + 0.1);
    if (!pair_info(a, "169.254.91.2:20000").empty()) break;
  }
  const std::string info = pair_info(a, "169.254.91.2:20000");
  ASSERT_FALSE(info.empty()) << "no pair info for B";
  for (const char* label :
       {"local_node_guid=\"0x0000000000000a0a\"",
        "local_gid=\"fe80:0000:0000:0000:0000:0000:0000:0a01\"",
        "local_port_guid=\"\"", "local_lid=\"\"",
        "remote_node_guid=\"0x0000000000000b0b\"",
        "remote_gid=\"fe80:0000:0000:0000:0000:0000:0000:0b01\"",
        "remote_port_guid=\"\"", "remote_lid=\"\""}) {
    EXPECT_NE(info.find(label), std::string::npos) << label << " in " << info;
  }
  EXPECT_EQ(a.Get(info), 1);
  EXPECT_EQ(pair_info(a, "169.254.91.2:20099"), "");
}

TEST_F(ProbeNetnsTest, ReplayedProbeIsRejected) {
  const std::string replay = "fabric_probe_rejected_total{reason=\"replay\"}";
  // SetUpTestSuite waited until A's probes flow through the relay, so it
  // has a packet to replay.
  ASSERT_GE(env_->ab->forwarded(), 10u) << "no probes through the relay";
  Scrape b0 = Get(env_->db);
  // The relay sends the last probe from A that it forwarded once more: a
  // valid, signed packet seen before.
  for (int i = 0; i < 5; ++i) {
    env_->ab->ReplayLast();
    std::this_thread::sleep_for(20ms);
  }
  Scrape b1 = ScrapePublishedAfter(UnixSeconds() + 0.1, env_->db);
  auto delta = [&](const std::string& reason) {
    std::string series =
        "fabric_probe_rejected_total{reason=\"" + reason + "\"}";
    return b1.Get(series) - b0.Get(series);
  };
  EXPECT_EQ(b1.Get(replay) - b0.Get(replay), 5)
      << "bad_mac " << delta("bad_mac") << ", malformed " << delta("malformed")
      << ", rate_limited " << delta("rate_limited") << ", relay forwarded "
      << env_->ab->forwarded();
}

// Issue 30: B runs at the defaults: its pair with A costs at most 8
// series, none of them buckets; the RTT distribution is its port's.
TEST_F(ProbeNetnsTest, DefaultDaemonExportsAtMostEightSeriesPerPair) {
  const std::string peer = "peer=\"169.254.92.2:20001\"";
  Scrape b;
  std::vector<std::string> series;
  for (int i = 0; i < 50; ++i) {
    b = ScrapePublishedAfter(UnixSeconds() + 0.1, env_->db);
    series.clear();
    for (const auto& [name, value] : b.samples) {
      if (name.find(peer) != std::string::npos) series.push_back(name);
    }
    if (series.size() == 8) break;  // the pair info and max are there
  }
  std::string all;
  for (const auto& name : series) all += name + "\n";
  EXPECT_LE(series.size(), 8u) << all;
  EXPECT_GE(series.size(), 6u) << all;
  EXPECT_EQ(all.find("_bucket{"), std::string::npos) << all;
  EXPECT_GT(b.Get("fabric_probe_port_rtt_seconds_count{transport=\"udp\"}"), 0);
}

class ProbeRailsNetnsTest : public ::testing::Test {
 protected:
  ProbeRailsNetnsTest() = default;
  // `by_device`: rails named by device/port (see the file comment).
  explicit ProbeRailsNetnsTest(bool by_device) : by_device_(by_device) {}

  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root to create netns");
    if (!Sh("ip -V")) MISSING_DEPENDENCY("iproute2 `ip` not installed");
    const std::string id = std::to_string(::getpid());
    x_ = "fmpx" + id;
    y_ = "fmpy" + id;
    dir_ = tmp_.path();
    fs::create_directories(dir_ / "sysfs");
    for (const auto& ns : {x_, y_}) {
      ASSERT_TRUE(Sh("ip netns add " + ns)) << ns;
      ASSERT_TRUE(Sh("ip -n " + ns + " link set lo up"));
    }
    for (int r = 0; r < 2; ++r) {
      const std::string rail = std::to_string(r);
      const std::string net = "169.254." + std::to_string(95 + r) + ".";
      for (const auto& c :
           {"ip -n " + x_ + " link add px" + rail + " type veth peer name py" +
                rail + " netns " + y_,
            "ip -n " + x_ + " addr add " + net + "1/30 dev px" + rail,
            "ip -n " + y_ + " addr add " + net + "2/30 dev py" + rail,
            "ip -n " + x_ + " link set px" + rail + " up",
            "ip -n " + y_ + " link set py" + rail + " up"}) {
        ASSERT_TRUE(Sh(c)) << c;
      }
      if (by_device_ && r == 1) {
        FakeIpoibPort(dir_ / "sysfs", "ib_x1", "px1", "0000:0000:0000:0a01",
                      "0a01", 0x11);
        FakeIpoibPort(dir_ / "sysfs", "ib_y1", "py1", "0000:0000:0000:0b01",
                      "0b01", 0x21);
        continue;
      }
      FakeRocePort(dir_ / "sysfs", "rxe_x" + rail, "px" + rail,
                   "0000:0000:0000:0a0" + rail, "0a0" + rail);
      FakeRocePort(dir_ / "sysfs", "rxe_y" + rail, "py" + rail,
                   "0000:0000:0000:0b0" + rail, "0b0" + rail);
    }
    std::ofstream(dir_ / "key") << kKey;
    ::chmod((dir_ / "key").c_str(), 0600);
    dx_ = Start(x_, "x", "1", "2", "x");
    dy_ = Start(y_, "y", "2", "1", "y");
    ASSERT_TRUE(Ready(dx_, kMetricsPort) && Ready(dy_, kMetricsPort));
  }

  void TearDown() override {
    for (Daemon* d : {&dx_, &dy_}) {
      if (d->pid > 0) {
        ::kill(d->pid, SIGTERM);
        ::waitpid(d->pid, nullptr, 0);
      }
    }
    for (const auto& ns : {x_, y_}) {
      if (!ns.empty()) Sh("ip netns del " + ns);
    }
  }

  // A daemon whose rail r<k> listens on 169.254.(95+k).<own> and probes
  // .<other> on the same rail; by device, its rails are host `host`'s
  // devices and X has a rail r9 on a device no host has.
  Daemon Start(const std::string& ns, const std::string& name,
               const std::string& own, const std::string& other,
               const std::string& host) {
    const fs::path config = dir_ / (name + ".yaml");
    std::ofstream out(config);
    out << DaemonConfigHead() << "    probe_timeout: 200ms\n"
        << "    key_file: " << (dir_ / "key").string() << "\n    rails:\n";
    for (int r = 0; r < 2; ++r) {
      const std::string net = "169.254." + std::to_string(95 + r) + ".";
      out << "      - name: r" << r << "\n";
      if (by_device_) {
        out << "        device: " << (r == 0 ? "rxe_" : "ib_") << host << r
            << "\n        port: 1\n        listen_port: 10916\n";
      } else {
        out << "        listen_address: \"" << net << own << ":10916\"\n";
      }
      out << "        peers: [\"" << net << other << ":10916\"]\n";
    }
    if (by_device_ && host == "x") {
      out << "      - name: r9\n        device: mlx5_9\n";
    }
    out.close();
    return Spawn(ns, config, dir_ / (name + ".log"), dir_ / "sysfs",
                 kMetricsPort);
  }

  Scrape Get(const Daemon& d) {
    auto body = InNetns(
        d.ns, [&] { return testing::HttpGetOk(kMetricsPort, "/metrics"); });
    EXPECT_TRUE(body) << "scrape of " << d.ns << " failed";
    return Scrape{body ? testing::ParseSamples(*body)
                       : std::map<std::string, double>{}};
  }

  // Each rail probes its own peer and its pair info names its ports at both
  // ends; returns X's last scrape.
  Scrape CheckEachRailProbesItsPeerAndNamesItsPorts();

  const bool by_device_ = false;
  std::string x_, y_;
  testing::TempDir tmp_{"fabricmon-probe-rails"};
  fs::path dir_;
  Daemon dx_, dy_;
};

class ProbeRailsByDeviceNetnsTest : public ProbeRailsNetnsTest {
 protected:
  ProbeRailsByDeviceNetnsTest() : ProbeRailsNetnsTest(true) {}
};

TEST_F(ProbeRailsNetnsTest, EachRailProbesItsPeerAndNamesItsPorts) {
  CheckEachRailProbesItsPeerAndNamesItsPorts();
}

// By device: the same, each rail on its own port's netdev address, the IB
// rail's pair info with both ends' LIDs and port GUIDs, and the rail on a
// missing device down, saying so, without stopping the others.
TEST_F(ProbeRailsByDeviceNetnsTest, EachRailBindsItsPortsNetdevAddress) {
  const Scrape x = CheckEachRailProbesItsPeerAndNamesItsPorts();
  EXPECT_EQ(x.Get("fabric_probe_rail_info{address=\"169.254.95.1\",device="
                  "\"rxe_x0\",netdev=\"px0\",port=\"1\",rail=\"r0\"}"),
            1);
  EXPECT_EQ(x.Get("fabric_probe_rail_info{address=\"169.254.96.1\",device="
                  "\"ib_x1\",netdev=\"px1\",port=\"1\",rail=\"r1\"}"),
            1);
  EXPECT_EQ(x.Get("fabric_probe_rail_up{rail=\"r0\"}"), 1);
  EXPECT_EQ(x.Get("fabric_probe_rail_up{rail=\"r1\"}"), 1);
  EXPECT_EQ(x.Get("fabric_probe_rail_up{rail=\"r9\"}"), 0);
  std::string ib_info;
  for (const auto& [series, value] : x.samples) {
    if (series.rfind("fabric_probe_pair_info{", 0) == 0 &&
        series.find("rail=\"r1\"") != std::string::npos) {
      ib_info = series;
    }
  }
  for (const char* label : {"local_lid=\"17\"", "remote_lid=\"33\"",
                            "local_port_guid=\"0x0002c90300000a01\"",
                            "remote_port_guid=\"0x0002c90300000b01\""}) {
    EXPECT_NE(ib_info.find(label), std::string::npos)
        << label << " in " << ib_info;
  }
  std::ifstream log(dx_.log);
  const std::string text((std::istreambuf_iterator<char>(log)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("probe rail r9: no RDMA device mlx5_9"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("probe rail r1: ib_x1 port 1 is px1, listening on "
                      "169.254.96.1:10916"),
            std::string::npos)
      << text;
}

Scrape ProbeRailsNetnsTest::CheckEachRailProbesItsPeerAndNamesItsPorts() {
  // The pair info of rail r<k> in a scrape of X.
  auto pair_info = [](const Scrape& s, int r) {
    const std::string peer = "peer=\"169.254." + std::to_string(95 + r) +
                             ".2:10916\",rail=\"r" + std::to_string(r) + "\"";
    for (const auto& [series, value] : s.samples) {
      if (series.rfind("fabric_probe_pair_info{", 0) == 0 &&
          series.find(peer) != std::string::npos) {
        return series;
      }
    }
    return std::string();
  };
  const auto count = [](int r) {
    return "fabric_probe_rtt_seconds_count{peer=\"169.254." +
           std::to_string(95 + r) + ".2:10916\",rail=\"r" + std::to_string(r) +
           "\",transport=\"udp\"}";
  };
  Scrape x;
  for (int i = 0; i < 100; ++i) {
    x = Get(dx_);
    if (!pair_info(x, 0).empty() && !pair_info(x, 1).empty() &&
        x.Get(count(0)) > 100 && x.Get(count(1)) > 100) {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  for (int r = 0; r < 2; ++r) {
    const std::string k = std::to_string(r);
    EXPECT_GT(x.Get(count(r)), 100) << "rail r" << k;
    const std::string info = pair_info(x, r);
    if (info.empty()) {
      ADD_FAILURE() << "no pair info on rail r" << k;
      continue;
    }
    // Its own rail's ports at both ends, not the other rail's.
    EXPECT_NE(info.find("local_node_guid=\"0x0000000000000a0" + k + "\""),
              std::string::npos)
        << info;
    EXPECT_NE(info.find("remote_node_guid=\"0x0000000000000b0" + k + "\""),
              std::string::npos)
        << info;
    // Each rail's own responder answers, on Y.
    EXPECT_GT(x.Get("fabric_probe_port_rtt_seconds_count{rail=\"r" + k +
                    "\",transport=\"udp\"}"),
              100);
  }
  const Scrape y = Get(dy_);
  for (const char* rail : {"r0", "r1"}) {
    EXPECT_GT(y.Get(std::string("fabric_probe_answered_total{rail=\"") + rail +
                    "\"}"),
              100)
        << rail;
  }
  // No probe series without its rail.
  for (const auto& [series, value] : x.samples) {
    if (series.rfind("fabric_probe_", 0) == 0) {
      EXPECT_NE(series.find("rail=\"r"), std::string::npos) << series;
    }
  }
  return x;
}

}  // namespace
}  // namespace fabric
