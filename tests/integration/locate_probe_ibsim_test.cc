// fabricmon-locate end to end with REAL probes on ibsim + a real OpenSM:
// one fabricmon daemon per ibsim HCA, each in a network namespace of its
// own, probing every other one over UDP; a real Prometheus scrapes them;
// the test's relay drops and delays exactly the pairs whose OpenSM route
// crosses the chosen switch-to-switch cables, and the locator must name
// those cables.
//
// ibsim simulates MADs only, so the probes' data path is a veth per host
// into the test's own namespace, where one UdpRelay (tests/support) per
// ordered pair forwards host i's probes to host j. Each daemon reads a
// fake sysfs tree in which its veth "ib0" is an IPoIB netdev of its HCA:
// node GUID, port GUID (the GID's interface id) and LID are that ibsim
// HCA's as OpenSM assigned them (read with fabricmon-mad and smpquery), so
// the pair info the daemons learn in their port exchange names the real
// LIDs the locator traces. Which pairs suffer is decided from the real
// `ibtracert` (the oracle); the locator traces with its own tracer.
//
// The test process enters a namespace of its own first, so that ibsim's
// abstract sockets, OpenSM, Prometheus, the relays and fabricmon-locate all
// share it, and the host namespaces hang off it by veth.
//
// Phases, each judged over its own 30 s window: no fault (no link stands
// out), one bad cable (ranked first), two bad cables (the top two); and
// the same on a random topology the test generates (seed printed).
// Needs root, iproute2, ibsim/OpenSM/infiniband-diags and Prometheus.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/shell.h"
#include "tests/support/udp_relay.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr char kKey[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
constexpr int kProbePort = 10916;
constexpr int kMetricsPort = 9100;
constexpr auto kFaultDelay = 20ms;
constexpr int kDropEvery = 4;  // 25 % of a bad pair's probes
constexpr char kWindow[] = "30s";
// After a change of the relays: the window plus scrapes and publication.
constexpr auto kSettle = 38s;

// 169.254.200.<4i+1> is host i's ib0; <4i+2> the test's end of its veth.
std::string HostIp(int i) { return "169.254.200." + std::to_string(4 * i + 1); }
std::string RelayIp(int i) {
  return "169.254.200." + std::to_string(4 * i + 2);
}

// A cable, both ends "name[port]", the smaller first.
using Cable = std::pair<std::string, std::string>;
Cable MakeCable(const std::string& a, int pa, const std::string& b, int pb) {
  std::string x = a + "[" + std::to_string(pa) + "]";
  std::string y = b + "[" + std::to_string(pb) + "]";
  return x < y ? Cable{x, y} : Cable{y, x};
}

struct Host {
  std::string name;                  // "hca3"
  std::string node_guid, port_guid;  // "0x..."
  int lid = 0;
  std::string ns;
  pid_t daemon = -1;
};

class LocateProbeIbsim : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& r : relays_) r->Stop();
    relays_.clear();
    for (Host& h : hosts_) {
      if (fabric_) fabric_->StopClient(h.daemon);
      if (!h.ns.empty()) Sh("ip netns del " + h.ns);
    }
    fabric_.reset();  // ibsim, OpenSM, Prometheus
    if (home_ns_ >= 0) {
      ::setns(home_ns_, CLONE_NEWNET);
      ::close(home_ns_);
    }
    if (!relay_ns_.empty()) Sh("ip netns del " + relay_ns_);
  }

  // Everything up on `netfile`: ASSERTs, so callers wrap it in
  // ASSERT_NO_FATAL_FAILURE.
  void Up(const std::string& netfile) {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root to create netns");
    if (!Sh("ip -V")) MISSING_DEPENDENCY("iproute2 `ip` not installed");
    if (access("/usr/bin/prometheus", X_OK) != 0) {
      MISSING_DEPENDENCY("prometheus (Debian prometheus)");
    }
    RemoveStaleNamespaces();
    const std::string id = std::to_string(::getpid());
    relay_ns_ = "fmlo" + id + "r";
    ASSERT_TRUE(Sh("ip netns add " + relay_ns_));
    home_ns_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int fd =
        ::open(("/run/netns/" + relay_ns_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::setns(fd, CLONE_NEWNET), 0) << "setns: " << errno;
    ::close(fd);
    ASSERT_TRUE(Sh("ip link set lo up"));

    fabric_ = std::make_unique<IbsimFabric>(netfile);
    FABRIC_START_IBSIM(*fabric_);
    fabric_->StartOpenSm({.sim_host = "hca0", .priority = 7});
    ASSERT_TRUE(fabric_->WaitForMaster(std::chrono::seconds(60), "hca1"));
    ASSERT_NO_FATAL_FAILURE(ReadHcas());
    std::ofstream(dir() / "key") << kKey;
    ::chmod((dir() / "key").c_str(), 0600);
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      ASSERT_NO_FATAL_FAILURE(StartHost(static_cast<int>(i)));
    }
    const int n = static_cast<int>(hosts_.size());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        relays_.push_back(std::make_unique<UdpRelay>("", RelayIp(i), 20000 + j,
                                                     HostIp(j), kProbePort));
        relay_of_[{i, j}] = relays_.back().get();
        std::string error;
        ASSERT_TRUE(relays_.back()->Start(&error)) << error;
      }
    }
    ASSERT_NO_FATAL_FAILURE(StartPrometheus());
    // Every pair probed, with both ends' LIDs learned, in Prometheus.
    const int pairs = n * (n - 1);
    int mapped = 0, probed = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
          mapped = Count(
              "count(fabric_probe_pair_info{local_lid!=\"\","
              "remote_lid!=\"\"})");
          probed = Count("count(increase(fabric_probe_sent_total[10s]) > 0)");
          return mapped == pairs && probed == pairs;
        },
        std::chrono::seconds(120)))
        << mapped << " pairs mapped and " << probed << " probed of " << pairs
        << "; logs in " << dir();
    // The pair info names the HCAs' real LIDs.
    const std::string peer0 = RelayIp(1) + ":" + std::to_string(20000);
    EXPECT_EQ(Count("count(fabric_probe_pair_info{instance=\"" + HostIp(1) +
                    ":9100\",peer=\"" + peer0 + "\",local_lid=\"" +
                    std::to_string(hosts_[1].lid) + "\",remote_lid=\"" +
                    std::to_string(hosts_[0].lid) + "\"})"),
              1);
  }

  fs::path dir() const { return fabric_->dir(); }

  // Name, node GUID, LID from fabricmon-mad's discovery; port GUID from
  // the real smpquery.
  void ReadHcas() {
    const ToolOutput d = fabric_->Run({Binary("fabricmon-mad")}, "hca1");
    const std::regex re(
        R"re(^node (0x[0-9a-f]+) type 1 lid (\d+) ports \d+ "(hca\d+)"$)re");
    std::istringstream in(d.out);
    std::string line;
    std::smatch m;
    std::map<int, Host> by_number;
    while (std::getline(in, line)) {
      if (!std::regex_match(line, m, re)) continue;
      Host h;
      h.node_guid = m[1];
      h.lid = std::stoi(m[2]);
      h.name = m[3];
      by_number[std::stoi(h.name.substr(3))] = h;
    }
    ASSERT_GE(by_number.size(), 2u) << d.out << d.err;
    for (auto& [number, h] : by_number) {
      const ToolOutput q =
          fabric_->Run({"smpquery", "nodeinfo", std::to_string(h.lid)}, "hca1");
      std::smatch g;
      const std::regex guid_re(R"re(PortGuid:\.*(0x[0-9a-f]+))re");
      ASSERT_TRUE(std::regex_search(q.out, g, guid_re)) << q.out << q.err;
      h.port_guid = g[1];
      hosts_.push_back(h);
    }
  }

  // Host i: its namespace, the veth "ib0" <-> "h<i>", its fake sysfs (ib0
  // an IPoIB netdev of its HCA) and its daemon probing every other host
  // through the relays.
  void StartHost(int i) {
    Host& h = hosts_[i];
    h.ns = "fmlo" + std::to_string(::getpid()) + "h" + std::to_string(i);
    const std::string hv = "h" + std::to_string(i);
    for (const std::string& c :
         {"ip netns add " + h.ns, "ip -n " + h.ns + " link set lo up",
          "ip link add " + hv + " type veth peer name ib0 netns " + h.ns,
          "ip addr add " + RelayIp(i) + "/30 dev " + hv,
          "ip -n " + h.ns + " addr add " + HostIp(i) + "/30 dev ib0",
          "ip link set " + hv + " up", "ip -n " + h.ns + " link set ib0 up"}) {
      ASSERT_TRUE(Sh(c)) << c;
    }
    const fs::path sysfs = dir() / ("sysfs-" + h.name);
    WriteIpoibPort(sysfs, h);
    const fs::path config = dir() / (h.name + ".yaml");
    std::ofstream out(config);
    out << "collectors:\n";
    for (const char* off :
         {"ib_port", "hw_counters", "congestion", "roce", "nic_identity", "sm",
          "fabric", "ib_link", "fabric_class", "transceiver", "opensm"}) {
      out << "  " << off << ": {enabled: false}\n";
    }
    out << "  probe:\n    enabled: true\n    interval: 100ms\n"
        << "    probe_timeout: 500ms\n    transport: udp\n"
        << "    listen_address: \":" << kProbePort << "\"\n"
        << "    key_file: " << (dir() / "key").string() << "\n    peers:\n";
    for (std::size_t j = 0; j < hosts_.size(); ++j) {
      if (static_cast<int>(j) == i) continue;
      out << "      - \"" << RelayIp(i) << ":" << 20000 + j << "\"\n";
    }
    out.close();
    // Not a client of ibsim: no umad2sim in its environment.
    h.daemon = fabric_->StartProcess(
        {"ip", "netns", "exec", h.ns, Binary("fabricmon"), "--config",
         config.string(), "--sysfs.root", sysfs.string(),
         "--web.listen-address", HostIp(i) + ":" + std::to_string(kMetricsPort),
         "--log.level", "warn"},
        (dir() / (h.name + ".log")).string());
    ASSERT_GT(h.daemon, 0);
  }

  // sysfs as the kernel shows an IPoIB netdev and its port: the netdev's
  // 20-byte hardware address ends with the port's GID, whose interface id
  // is the port GUID.
  static void WriteIpoibPort(const fs::path& root, const Host& h) {
    const std::uint64_t port_guid = std::stoull(h.port_guid, nullptr, 16);
    const std::uint64_t node_guid = std::stoull(h.node_guid, nullptr, 16);
    std::string address = "80:00:00:48:fe:80:00:00:00:00:00:00";
    char gid[64], node[32];
    for (int b = 7; b >= 0; --b) {
      char byte[4];
      std::snprintf(byte, sizeof(byte), ":%02x",
                    static_cast<unsigned>((port_guid >> (8 * b)) & 0xff));
      address += byte;
    }
    std::snprintf(gid, sizeof(gid), "fe80:0000:0000:0000:%04x:%04x:%04x:%04x",
                  static_cast<unsigned>(port_guid >> 48),
                  static_cast<unsigned>((port_guid >> 32) & 0xffff),
                  static_cast<unsigned>((port_guid >> 16) & 0xffff),
                  static_cast<unsigned>(port_guid & 0xffff));
    std::snprintf(node, sizeof(node), "%04x:%04x:%04x:%04x",
                  static_cast<unsigned>(node_guid >> 48),
                  static_cast<unsigned>((node_guid >> 32) & 0xffff),
                  static_cast<unsigned>((node_guid >> 16) & 0xffff),
                  static_cast<unsigned>(node_guid & 0xffff));
    const fs::path net = root / "class/net/ib0";
    const fs::path dev = root / "class/infiniband/mlx5_0";
    const fs::path port = dev / "ports/1";
    fs::create_directories(net);
    fs::create_directories(port / "gids");
    std::ofstream(net / "type") << "32\n";
    std::ofstream(net / "address") << address << "\n";
    std::ofstream(dev / "node_guid") << node << "\n";
    std::ofstream(port / "gids/0") << gid << "\n";
    std::ofstream(port / "link_layer") << "InfiniBand\n";
    char lid[16];
    std::snprintf(lid, sizeof(lid), "0x%x", h.lid);
    std::ofstream(port / "lid") << lid << "\n";
  }

  void StartPrometheus() {
    std::ofstream cfg(dir() / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets:\n";
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      cfg << "          - \"" << HostIp(static_cast<int>(i)) << ":"
          << kMetricsPort << "\"\n";
    }
    cfg.close();
    prom_port_ = FreeLoopbackPort();
    const pid_t prom = fabric_->StartClient(
        {"/usr/bin/prometheus",
         "--config.file=" + (dir() / "prometheus.yml").string(),
         "--storage.tsdb.path=" + (dir() / "prometheus-data").string(),
         "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_),
         "--log.level=warn"},
        "", (dir() / "prometheus.log").string());
    ASSERT_GT(prom, 0);
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto r = HttpGet(prom_port_, "/-/ready");
          return r && r->status == 200;
        },
        std::chrono::seconds(60)));
  }

  // The single value of an instant query (-1 when empty or failing).
  int Count(const std::string& promql) {
    const auto body =
        HttpGetOk(prom_port_, "/api/v1/query?query=" + UrlEncode(promql));
    if (!body) return -1;
    const auto j = nlohmann::json::parse(*body, nullptr, false);
    if (j.is_discarded() || !j["data"]["result"].is_array() ||
        j["data"]["result"].empty()) {
      return -1;
    }
    return std::stoi(j["data"]["result"][0]["value"][1].get<std::string>());
  }

  // The cables ibtracert's route SRC -> DST crosses, host cables included.
  std::set<Cable> Route(int src, int dst) {
    const auto key = std::make_pair(src, dst);
    if (auto it = routes_.find(key); it != routes_.end()) return it->second;
    const ToolOutput r = fabric_->Run(
        {"ibtracert", std::to_string(src), std::to_string(dst)}, "hca1");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::set<Cable> out;
    for (const TracertHop& h : ParseIbtracert(r.out)) {
      out.insert(MakeCable(h.from, h.out, h.to, h.in));
    }
    routes_[key] = out;
    return out;
  }

  // Ordered host pairs (i, j) by cable, either direction of the probe's
  // round trip counting.
  std::map<Cable, std::set<std::pair<int, int>>> PairsByCable() {
    std::map<Cable, std::set<std::pair<int, int>>> out;
    const int n = static_cast<int>(hosts_.size());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        for (const Cable& c : Route(hosts_[i].lid, hosts_[j].lid)) {
          out[c].insert({i, j});
          out[c].insert({j, i});
        }
      }
    }
    return out;
  }

  static bool SwitchToSwitch(const Cable& c) {
    return c.first.rfind("hca", 0) != 0 && c.second.rfind("hca", 0) != 0;
  }

  // The switch-to-switch cables a vote can single out: the pairs crossing
  // one must not all cross another cable too (a host's cable included),
  // else no tomography tells the two apart. Sorted by name.
  static std::vector<Cable> Identifiable(
      const std::map<Cable, std::set<std::pair<int, int>>>& by_cable) {
    std::vector<Cable> out;
    for (const auto& [c, pairs] : by_cable) {
      if (!SwitchToSwitch(c)) continue;
      bool shadowed = false;
      for (const auto& [other, others] : by_cable) {
        if (other != c && std::includes(others.begin(), others.end(),
                                        pairs.begin(), pairs.end())) {
          shadowed = true;
        }
      }
      if (!shadowed) out.push_back(c);
    }
    return out;
  }

  // The relays of the pairs crossing `bad` drop and delay; all others are
  // clean. Returns how many ordered pairs suffer.
  int Fault(const std::set<std::pair<int, int>>& bad) {
    for (auto& [pair, relay] : relay_of_) {
      const bool b = bad.count(pair) > 0;
      relay->set_drop_every(b ? kDropEvery : 0);
      relay->set_delay(
          b ? std::chrono::duration_cast<std::chrono::microseconds>(kFaultDelay)
            : 0us);
    }
    return static_cast<int>(bad.size());
  }

  struct Located {
    int exit_code = -1;
    nlohmann::json json;
    std::string out, err;
  };
  Located Locate() {
    const ToolOutput r = fabric_->Run(
        {Binary("fabricmon-locate"), "--prometheus",
         "http://127.0.0.1:" + std::to_string(prom_port_), "--window", kWindow,
         "--loss-ratio", "0.05", "--rtt-excess-floor-us", "10000", "--json"},
        "hca1");
    Located l{r.exit_code, nlohmann::json::parse(r.out, nullptr, false), r.out,
              r.err};
    // The top of the ranking, for the log.
    if (l.json.is_object() && l.json["links"].is_array()) {
      int shown = 0;
      for (const auto& link : l.json["links"]) {
        if (shown++ == 3) break;
        const Cable c = CableOf(link);
        std::printf("  rank %d: %s <-> %s votes %.2f bad %d good %d\n", shown,
                    c.first.c_str(), c.second.c_str(),
                    link["votes"].get<double>(), link["bad_pairs"].get<int>(),
                    link["good_pairs"].get<int>());
      }
    }
    return l;
  }

  // The cable of a ranked link in the locator's JSON.
  static Cable CableOf(const nlohmann::json& link) {
    return MakeCable(link["a"]["name"], link["a"]["port"], link["b"]["name"],
                     link["b"]["port"]);
  }

  static void RemoveStaleNamespaces() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/run/netns", ec)) {
      const std::string name = e.path().filename();
      if (name.rfind("fmlo", 0) != 0) continue;
      const pid_t pid = std::atoi(name.c_str() + 4);
      if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
        Sh("ip netns del " + name);
      }
    }
  }

  std::unique_ptr<IbsimFabric> fabric_;
  std::string relay_ns_;
  int home_ns_ = -1;
  std::vector<Host> hosts_;
  std::vector<std::unique_ptr<UdpRelay>> relays_;
  std::map<std::pair<int, int>, UdpRelay*> relay_of_;
  int prom_port_ = 0;
  std::map<std::pair<int, int>, std::set<Cable>> routes_;
};

TEST_F(LocateProbeIbsim, FatTreeNoneOneAndTwoBadCables) {
  ASSERT_NO_FATAL_FAILURE(Up(FatTreeNetfile(8, 12)));  // 2 spines, 6 leaves
  const auto by_cable = PairsByCable();
  // Every leaf-spine cable carries pairs.
  ASSERT_EQ(
      std::count_if(by_cable.begin(), by_cable.end(),
                    [](const auto& c) { return SwitchToSwitch(c.first); }),
      12);
  const std::vector<Cable> candidates = Identifiable(by_cable);
  ASSERT_GE(candidates.size(), 2u);

  // No fault: every pair good, nothing to rank.
  Fault({});
  std::this_thread::sleep_for(kSettle);
  Located none = Locate();
  EXPECT_EQ(none.exit_code, 5) << none.out << none.err;
  EXPECT_NE(none.err.find("no pair is bad"), std::string::npos) << none.err;
  EXPECT_EQ(none.json["pairs"]["bad"], 0) << none.out;

  // One cable: leaf0's first uplink.
  const Cable one = candidates.front();
  const int suffering = Fault(by_cable.at(one));
  std::this_thread::sleep_for(kSettle);
  Located l1 = Locate();
  ASSERT_EQ(l1.exit_code, 0) << l1.out << l1.err;
  EXPECT_EQ(l1.json["pairs"]["bad"], suffering) << l1.out;
  EXPECT_EQ(l1.json["pairs"]["bad_traced"], suffering) << l1.out;
  ASSERT_FALSE(l1.json["links"].empty()) << l1.out;
  EXPECT_EQ(CableOf(l1.json["links"][0]), one) << l1.out;
  if (l1.json["links"].size() > 1) {
    EXPECT_GT(l1.json["links"][0]["votes"].get<double>(),
              l1.json["links"][1]["votes"].get<double>());
  }

  // Two cables, on different leaves and spines: both in the top two.
  std::optional<Cable> two;
  const auto leaf_of = [](const Cable& c) { return c.first.substr(0, 5); };
  for (const Cable& c : candidates) {
    if (leaf_of(c) != leaf_of(one) &&
        c.second.substr(0, 6) != one.second.substr(0, 6)) {
      two = c;
      break;
    }
  }
  ASSERT_TRUE(two) << "no second cable on another leaf and spine";
  std::set<std::pair<int, int>> bad = by_cable.at(one);
  bad.insert(by_cable.at(*two).begin(), by_cable.at(*two).end());
  Fault(bad);
  std::this_thread::sleep_for(kSettle);
  Located l2 = Locate();
  ASSERT_EQ(l2.exit_code, 0) << l2.out << l2.err;
  ASSERT_GE(l2.json["links"].size(), 2u) << l2.out;
  const std::set<Cable> top = {CableOf(l2.json["links"][0]),
                               CableOf(l2.json["links"][1])};
  EXPECT_EQ(top, (std::set<Cable>{one, *two})) << l2.out;
}

TEST_F(LocateProbeIbsim, RandomTopologyOneBadCable) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("random topology seed %u\n", seed);
  ASSERT_NO_FATAL_FAILURE(Up(RandomNetfile(seed, 7, 9, 4)));
  const auto by_cable = PairsByCable();
  const std::vector<Cable> candidates = Identifiable(by_cable);
  ASSERT_FALSE(candidates.empty()) << "no cable a vote could single out";
  std::mt19937 rng(seed);
  const Cable chosen = candidates[rng() % candidates.size()];
  SCOPED_TRACE("chosen " + chosen.first + " <-> " + chosen.second);
  const int suffering = Fault(by_cable.at(chosen));
  std::this_thread::sleep_for(kSettle);
  Located l = Locate();
  ASSERT_EQ(l.exit_code, 0) << l.out << l.err;
  EXPECT_EQ(l.json["pairs"]["bad"], suffering) << l.out;
  ASSERT_FALSE(l.json["links"].empty()) << l.out;
  EXPECT_EQ(CableOf(l.json["links"][0]), chosen) << l.out;
}

}  // namespace
}  // namespace fabric::testing
