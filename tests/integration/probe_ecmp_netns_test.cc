// Integration (issue 29 item 4): RoCE-style paths over the kernel's real
// ECMP. Network namespaces route at layer 3: three edge routers E1..E3,
// each with two hosts (10.E.0.0/24, gateway 10.E.0.254), and
// two spine routers S1, S2; every edge reaches the other edges' hosts by a
// multipath route over both spines (`nexthop via .. nexthop via ..`), with
// net.ipv4.fib_multipath_hash_policy=1 (the 5-tuple) in every router, and
// routers answering ICMP from the interface a packet came in by
// (icmp_errors_use_inbound_ifaddr), so a hop names the link it arrived on.
//
// Six fabricmon daemons, one per host namespace, probe every host behind
// the other edges over UDP and path-trace each probe flow
// (fabric_probe_path_info). The oracle is the kernel itself: `ip route get
// DST from SRC iif IF ipproto udp sport 10916 dport 10916`, walked router
// by router from the source's edge, names the next hop each router's ECMP
// picks for that 5-tuple; every traced path must equal that walk.
//
//   hosts 10.E.0.1, 10.E.0.2 --p1/p2-- E (10.E.0.254 on each)
//   E --s<j>/e<E>-- S<j>: 10.(100+E).j.1 (edge side) / .2 (spine side)
//
// End to end: a real Prometheus in the first host's namespace scrapes the
// six daemons over the routed fabric; fabricmon-locate runs there too. A
// lossy link is made with nftables in one edge router (a quarter of the
// probe datagrams it forwards out to one spine dropped). Every path through
// a spine crosses its two links, so the test picks an edge->spine link whose
// flows come from both hosts of the edge and go to both other edges: only
// that link is on every bad pair's paths, and the locator must rank it
// first (by address: the edge's gateway -> the spine's address on the
// link). The fault spares the 20-byte trace datagrams (`udp length > 40`):
// a trace that lost its hops' answers three times running would read as a
// shorter path, which is the tracer's weakness on a lossy link, not what
// this test judges. With no fault, no pair is bad and no link stands out.
//
// Needs root, `ip`, `nft`, curl and prometheus; skips outside CI without them
// (MISSING_DEPENDENCY).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/paths.h"
#include "tests/support/shell.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kEdges = 3, kSpines = 2, kHostsPerEdge = 2;
constexpr int kProbePort = 10916;
constexpr int kMetricsPort = 19915;
constexpr char kKey[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";

// A failed command is a test failure naming it.
using testing::ShOrFail;

// GET http://127.0.0.1:PORT/PATH from inside netns `ns` (curl): the body,
// or nullopt.
std::optional<std::string> GetIn(const std::string& ns, int port,
                                 const std::string& path) {
  const auto r = testing::RunCommand(
      "ip netns exec " + ns + " curl -sf --max-time 10 http://127.0.0.1:" +
      std::to_string(port) + path);
  if (r.exit_code != 0) return std::nullopt;
  return r.out;
}

struct Host {
  std::string ns, address;
  std::string port;  // its edge router's interface to it
  int edge = 0;
  pid_t pid = -1;
  std::string log;
};

// A router interface: which namespace and device own an address.
struct Interface {
  std::string ns, dev;
};

// The namespaces, links and routes; the daemons.
struct Fabric {
  std::string id;
  fs::path dir;
  std::vector<std::string> routers;
  std::vector<Host> hosts;
  std::map<std::string, Interface> owner;  // router address -> interface
  pid_t prometheus = -1;  // in hosts[0]'s namespace, 127.0.0.1:9090

  // Prometheus scraping every daemon each second, in hosts[0]'s namespace.
  bool StartPrometheus() {
    std::ofstream cfg(dir / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\nscrape_configs:\n"
        << "  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets: [";
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      cfg << (i ? ", " : "") << "\"" << hosts[i].address << ":" << kMetricsPort
          << "\"";
    }
    cfg << "]\n";
    cfg.close();
    const std::string log = (dir / "prometheus.log").string();
    prometheus = ::fork();
    if (prometheus == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string config =
          "--config.file=" + (dir / "prometheus.yml").string();
      const std::string data = "--storage.tsdb.path=" + (dir / "prom").string();
      ::execlp("ip", "ip", "netns", "exec", hosts[0].ns.c_str(),
               "/usr/bin/prometheus", config.c_str(), data.c_str(),
               "--web.listen-address=127.0.0.1:9090", "--log.level=warn",
               nullptr);
      ::_exit(127);
    }
    return testing::WaitFor(
        [&] { return GetIn(hosts[0].ns, 9090, "/-/ready").has_value(); }, 60s,
        200ms);
  }

  // fabricmon-locate in hosts[0]'s namespace, judging loss only (RTTs on
  // a shared machine are noise here): exit code and stdout (JSON).
  testing::CommandResult Locate(const std::string& window) const {
    return testing::RunCommand(
        "ip netns exec " + hosts[0].ns + " " +
        testing::Binary("fabricmon-locate") +
        " --prometheus http://127.0.0.1:9090 --window " + window +
        " --json --loss-ratio 0.05 --rtt-excess-floor-us 1000000 2>" +
        (dir / "locate.err").string());
  }

  static std::string FaultTable() { return "fmecmpfault"; }
  // Drops a quarter of the probe-sized datagrams edge `e` forwards out to
  // spine `s`.
  bool AddFault(int e, int s) const {
    const std::string nft = "ip netns exec " + Edge(e) + " nft ";
    return ShOrFail(nft + "add table inet " + FaultTable()) &&
           ShOrFail(nft + "'add chain inet " + FaultTable() +
                    " probes { type filter hook forward priority 0; }'") &&
           ShOrFail(nft + "add rule inet " + FaultTable() +
                    " probes oifname s" + std::to_string(s) + " udp dport " +
                    std::to_string(kProbePort) +
                    " udp length \\> 40 numgen random mod 4 == 0 drop");
  }
  void RemoveFaults() const {
    for (int e = 1; e <= kEdges; ++e) {
      std::system(("ip netns exec " + Edge(e) + " nft delete table inet " +
                   FaultTable() + " >/dev/null 2>&1")
                      .c_str());
    }
  }

  std::string Edge(int e) const { return "fme" + id + "e" + std::to_string(e); }
  std::string Spine(int s) const {
    return "fme" + id + "s" + std::to_string(s);
  }
  static std::string EdgeSide(int e, int s) {
    return "10." + std::to_string(100 + e) + "." + std::to_string(s) + ".1";
  }
  static std::string SpineSide(int e, int s) {
    return "10." + std::to_string(100 + e) + "." + std::to_string(s) + ".2";
  }
  static std::string Gateway(int e) {
    return "10." + std::to_string(e) + ".0.254";
  }

  bool Up() {
    id = std::to_string(::getpid());
    dir = fs::temp_directory_path() / ("fabricmon-ecmp-" + id);
    fs::create_directories(dir / "sysfs");
    std::vector<std::string> cmds;
    auto add_ns = [&](const std::string& ns) {
      cmds.push_back("ip netns add " + ns);
      cmds.push_back("ip -n " + ns + " link set lo up");
    };
    for (int e = 1; e <= kEdges; ++e) {
      routers.push_back(Edge(e));
      add_ns(Edge(e));
      for (int h = 1; h <= kHostsPerEdge; ++h) {
        Host host;
        host.edge = e;
        host.ns = "fme" + id + "h" + std::to_string(e) + std::to_string(h);
        host.address = "10." + std::to_string(e) + ".0." + std::to_string(h);
        host.port = "p" + std::to_string(h);
        add_ns(host.ns);
        // One veth per host, the gateway's address on each edge end (no
        // bridge module here): every host of an edge sees one gateway.
        cmds.push_back("ip -n " + Edge(e) + " link add " + host.port +
                       " type veth peer name eth0 netns " + host.ns);
        cmds.push_back("ip -n " + Edge(e) + " addr add " + Gateway(e) +
                       "/32 dev " + host.port);
        cmds.push_back("ip -n " + Edge(e) + " link set " + host.port + " up");
        cmds.push_back("ip -n " + Edge(e) + " route add " + host.address +
                       "/32 dev " + host.port);
        cmds.push_back("ip -n " + host.ns + " addr add " + host.address +
                       "/32 dev eth0");
        cmds.push_back("ip -n " + host.ns + " link set eth0 up");
        cmds.push_back("ip -n " + host.ns + " route add " + Gateway(e) +
                       " dev eth0");
        cmds.push_back("ip -n " + host.ns + " route add default via " +
                       Gateway(e));
        hosts.push_back(host);
      }
    }
    for (int s = 1; s <= kSpines; ++s) {
      routers.push_back(Spine(s));
      add_ns(Spine(s));
      for (int e = 1; e <= kEdges; ++e) {
        const std::string es = "s" + std::to_string(s);
        const std::string se = "e" + std::to_string(e);
        cmds.push_back("ip -n " + Edge(e) + " link add " + es +
                       " type veth peer name " + se + " netns " + Spine(s));
        cmds.push_back("ip -n " + Edge(e) + " addr add " + EdgeSide(e, s) +
                       "/24 dev " + es);
        cmds.push_back("ip -n " + Spine(s) + " addr add " + SpineSide(e, s) +
                       "/24 dev " + se);
        cmds.push_back("ip -n " + Edge(e) + " link set " + es + " up");
        cmds.push_back("ip -n " + Spine(s) + " link set " + se + " up");
        owner[EdgeSide(e, s)] = {Edge(e), es};
        owner[SpineSide(e, s)] = {Spine(s), se};
        // The spine reaches edge e's hosts by its one link to e.
        cmds.push_back("ip -n " + Spine(s) + " route add 10." +
                       std::to_string(e) + ".0.0/24 via " + EdgeSide(e, s));
      }
    }
    for (int e = 1; e <= kEdges; ++e) {
      for (int f = 1; f <= kEdges; ++f) {
        if (f == e) continue;
        std::string route = "ip -n " + Edge(e) + " route add 10." +
                            std::to_string(f) + ".0.0/24";
        for (int s = 1; s <= kSpines; ++s) {
          route +=
              " nexthop via " + SpineSide(e, s) + " dev s" + std::to_string(s);
        }
        cmds.push_back(route);
      }
    }
    for (const auto& r : routers) {
      for (const char* sysctl :
           {"net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
            "net.ipv4.icmp_errors_use_inbound_ifaddr=1",
            "net.ipv4.icmp_ratelimit=0", "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0"}) {
        cmds.push_back("ip netns exec " + r + " sysctl -qw " + sysctl);
      }
    }
    for (const auto& c : cmds) {
      if (!ShOrFail(c)) return false;
    }
    std::ofstream(dir / "key") << kKey;
    ::chmod((dir / "key").c_str(), 0600);
    for (Host& h : hosts) {
      if (!Start(h)) return false;
    }
    return StartPrometheus();
  }

  // fabricmon in `h`'s namespace: probes only, every host behind another
  // edge, each flow traced every 2 s.
  bool Start(Host& h) {
    const fs::path config = dir / (h.ns + ".yaml");
    std::ofstream out(config);
    out << "collectors:\n";
    for (const char* off : {"ib_port", "hw_counters", "congestion", "roce",
                            "nic_identity", "sm", "fabric"}) {
      out << "  " << off << ": {enabled: false}\n";
    }
    out << "  probe:\n    enabled: true\n    interval: 20ms\n"
        << "    probe_timeout: 200ms\n    trace_interval: 2s\n"
        << "    transport: udp\n    listen_address: \":" << kProbePort
        << "\"\n    key_file: " << (dir / "key").string() << "\n"
        << "    peers:\n";
    for (const Host& p : hosts) {
      if (p.edge == h.edge) continue;
      out << "      - \"" << p.address << ":" << kProbePort << "\"\n";
    }
    out.close();
    h.log = (dir / (h.ns + ".log")).string();
    h.pid = ::fork();
    if (h.pid == 0) {
      int fd = ::open(h.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string bin = testing::Binary("fabricmon");
      const std::string web = "0.0.0.0:" + std::to_string(kMetricsPort);
      const std::string cfg = config.string(), root = (dir / "sysfs").string();
      ::execlp("ip", "ip", "netns", "exec", h.ns.c_str(), bin.c_str(),
               "--config", cfg.c_str(), "--sysfs.root", root.c_str(),
               "--web.listen-address", web.c_str(), nullptr);
      ::_exit(127);
    }
    return h.pid > 0;
  }

  void Down() {
    for (Host& h : hosts) {
      if (h.pid > 0) {
        ::kill(h.pid, SIGTERM);
        ::waitpid(h.pid, nullptr, 0);
        h.pid = -1;
      }
    }
    for (const Host& h : hosts) {
      std::system(("ip netns del " + h.ns + " >/dev/null 2>&1").c_str());
    }
    if (prometheus > 0) {
      ::kill(prometheus, SIGTERM);
      ::waitpid(prometheus, nullptr, 0);
      prometheus = -1;
    }
    for (const auto& r : routers) {
      std::system(("ip netns del " + r + " >/dev/null 2>&1").c_str());
    }
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }

  // The kernel's own choice for the probe flow src -> dst: from the
  // source's edge router, `ip route get` with the flow's 5-tuple and the
  // interface it arrives by, hop after hop, each router's ingress address
  // (the `via` of the router before) in order.
  std::vector<std::string> OraclePath(const Host& src, const std::string& dst,
                                      int sport = kProbePort) const {
    std::vector<std::string> path = {Gateway(src.edge)};
    Interface at{Edge(src.edge), src.port};
    static const std::regex via(R"( via (\S+) dev (\S+))");
    for (int guard = 0; guard < 8; ++guard) {
      const auto r = testing::RunCommand(
          "ip -n " + at.ns + " route get " + dst + " from " + src.address +
          " iif " + at.dev + " ipproto udp sport " + std::to_string(sport) +
          " dport " + std::to_string(kProbePort));
      std::smatch m;
      if (r.exit_code != 0) {
        ADD_FAILURE() << "route get in " << at.ns << ": " << r.out;
        return {};
      }
      if (!std::regex_search(r.out, m, via)) return path;  // connected
      path.push_back(m[1]);
      auto it = owner.find(m[1]);
      if (it == owner.end()) {
        ADD_FAILURE() << "no router owns " << m[1];
        return {};
      }
      at = it->second;
    }
    ADD_FAILURE() << "route walk from " << src.address << " to " << dst
                  << " does not end";
    return {};
  }
};

// fabric_probe_path_info of one daemon: peer address -> path label.
std::map<std::string, std::string> TracedPaths(const Host& h) {
  std::map<std::string, std::string> out;
  auto body = GetIn(h.ns, kMetricsPort, "/metrics");
  if (!body) return out;
  static const std::regex info(R"re(fabric_probe_path_info\{([^}]*)\} 1)re");
  static const std::regex dst(R"re(dst="([^"]*)")re");
  static const std::regex path(R"re(path="([^"]*)")re");
  for (auto it = std::sregex_iterator(body->begin(), body->end(), info);
       it != std::sregex_iterator(); ++it) {
    const std::string labels = (*it)[1];
    std::smatch d, p;
    if (std::regex_search(labels, d, dst) &&
        std::regex_search(labels, p, path)) {
      out[d[1]] = p[1];
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

class ProbeEcmpNetns : public ::testing::Test {
 protected:
  static bool Have(const std::string& tool) {
    return std::system((tool + " >/dev/null 2>&1").c_str()) == 0;
  }
  static bool HaveAll() {
    return ::geteuid() == 0 && Have("ip -V") && Have("nft --version") &&
           Have("curl --version") && ::access("/usr/bin/prometheus", X_OK) == 0;
  }
  static void SetUpTestSuite() {
    if (!HaveAll()) return;
    fabric_ = new Fabric();
    if (!fabric_->Up()) {
      fabric_->Down();
      delete fabric_;
      fabric_ = nullptr;
      setup_failed_ = true;
    }
  }
  static void TearDownTestSuite() {
    if (fabric_) fabric_->Down();
    delete fabric_;
    fabric_ = nullptr;
  }
  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root to create netns");
    if (!Have("ip -V")) MISSING_DEPENDENCY("iproute2 `ip` not installed");
    if (!Have("nft --version")) MISSING_DEPENDENCY("nft (Debian nftables)");
    if (!Have("curl --version")) MISSING_DEPENDENCY("curl not installed");
    if (::access("/usr/bin/prometheus", X_OK) != 0) {
      MISSING_DEPENDENCY("prometheus (Debian prometheus)");
    }
    ASSERT_FALSE(setup_failed_) << "namespace/daemon setup failed";
    ASSERT_NE(fabric_, nullptr);
  }

  // Waits until every daemon exports a traced path for each of its peers.
  static bool AllTraced() {
    return testing::WaitFor(
        [] {
          for (const Host& h : fabric_->hosts) {
            if (::waitpid(h.pid, nullptr, WNOHANG) != 0) return false;
            if (TracedPaths(h).size() !=
                static_cast<std::size_t>((kEdges - 1) * kHostsPerEdge)) {
              return false;
            }
          }
          return true;
        },
        90s, 500ms);
  }

  static Fabric* fabric_;
  static bool setup_failed_;
};

Fabric* ProbeEcmpNetns::fabric_ = nullptr;
bool ProbeEcmpNetns::setup_failed_ = false;

// Every probe flow's traced path is the kernel's multipath choice for its
// 5-tuple, router by router; and the flows do spread over both spines (else
// the topology would not test ECMP at all).
TEST_F(ProbeEcmpNetns, TracedPathsEqualTheKernelsMultipathChoice) {
  ASSERT_TRUE(AllTraced()) << "not every flow traced; logs in " << fabric_->dir;
  std::set<std::string> spines_used;
  int flows = 0;
  for (const Host& h : fabric_->hosts) {
    const auto traced = TracedPaths(h);
    for (const Host& p : fabric_->hosts) {
      if (p.edge == h.edge) continue;
      const auto oracle = fabric_->OraclePath(h, p.address);
      ASSERT_EQ(oracle.size(), 3u) << h.address << " -> " << p.address;
      spines_used.insert(oracle[1]);
      auto it = traced.find(p.address);
      ASSERT_NE(it, traced.end()) << h.address << " -> " << p.address;
      EXPECT_EQ(it->second, Join(oracle)) << h.address << " -> " << p.address;
      ++flows;
    }
  }
  EXPECT_EQ(flows, kEdges * kHostsPerEdge * (kEdges - 1) * kHostsPerEdge);
  // The source port moves flows to other spines: a tracer that left from
  // any other port than the probes' would trace other paths.
  int moved = 0;
  for (const Host& h : fabric_->hosts) {
    for (const Host& p : fabric_->hosts) {
      if (p.edge == h.edge) continue;
      const auto probe = fabric_->OraclePath(h, p.address);
      for (int sport = kProbePort + 1; sport < kProbePort + 4; ++sport) {
        if (fabric_->OraclePath(h, p.address, sport) != probe) {
          ++moved;
          break;
        }
      }
    }
  }
  EXPECT_GT(moved, 0) << "the source port moves no flow: not a 5-tuple hash";
  // Spine ingress addresses are 10.(100+E).S.2: count distinct spines.
  std::set<char> spines;
  for (const auto& a : spines_used) spines.insert(a[a.size() - 3]);
  EXPECT_EQ(spines.size(), static_cast<std::size_t>(kSpines))
      << "every flow hashed onto one spine";
}

}  // namespace
}  // namespace fabric

namespace fabric {
namespace {

// The oracle's flows over each edge -> spine link: (edge, spine) -> the
// (source host, destination) flows whose kernel path takes it.
std::map<std::pair<int, int>, std::vector<std::pair<const Host*, const Host*>>>
FlowsByUplink(const Fabric& f) {
  std::map<std::pair<int, int>,
           std::vector<std::pair<const Host*, const Host*>>>
      out;
  for (const Host& h : f.hosts) {
    for (const Host& p : f.hosts) {
      if (p.edge == h.edge) continue;
      const auto path = f.OraclePath(h, p.address);
      if (path.size() != 3) continue;
      for (int s = 1; s <= kSpines; ++s) {
        if (path[1] == Fabric::SpineSide(h.edge, s)) {
          out[{h.edge, s}].push_back({&h, &p});
        }
      }
    }
  }
  return out;
}

TEST_F(ProbeEcmpNetns, LocatorRanksTheLossyLinkFirst) {
  ASSERT_TRUE(AllTraced()) << "not every flow traced; logs in " << fabric_->dir;
  // A link only it explains: flows from both of its edge's hosts, to both
  // other edges.
  std::optional<std::pair<int, int>> chosen;
  std::vector<std::pair<const Host*, const Host*>> flows;
  for (const auto& [link, f] : FlowsByUplink(*fabric_)) {
    std::set<std::string> sources;
    std::set<int> edges;
    for (const auto& [src, dst] : f) {
      sources.insert(src->address);
      edges.insert(dst->edge);
    }
    if (sources.size() == kHostsPerEdge && edges.size() == kEdges - 1) {
      chosen = link;
      flows = f;
      break;
    }
  }
  ASSERT_TRUE(chosen) << "no edge->spine link carries flows from both hosts "
                         "to both other edges (the hash put them elsewhere)";
  const auto [e, s] = *chosen;
  ASSERT_TRUE(fabric_->AddFault(e, s));
  // The window starts after the fault and the paths' last traces. On a
  // loaded machine a trace can land inside the window (exit 7: a pair whose
  // path changed in it is not placed): ask again once the window has moved
  // past it.
  std::this_thread::sleep_for(35s);
  auto r = fabric_->Locate("25s");
  for (int again = 0; again < 3 && r.exit_code == 7; ++again) {
    std::this_thread::sleep_for(10s);
    r = fabric_->Locate("25s");
  }
  fabric_->RemoveFaults();
  ASSERT_EQ(r.exit_code, 0)
      << r.out << testing::ReadFile(fabric_->dir / "locate.err");
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  // Each lossy flow makes two bad pairs: its prober's (requests lost) and
  // its peer's (answers lost: they take the same 5-tuple's path).
  EXPECT_EQ(j["pairs"]["bad"], static_cast<int>(2 * flows.size())) << r.out;
  EXPECT_EQ(j["pairs"]["bad_traced"], j["pairs"]["bad"]) << r.out;
  EXPECT_TRUE(j["unplaced_bad_pairs"].empty()) << r.out;
  ASSERT_FALSE(j["links"].empty()) << r.out;
  EXPECT_EQ(j["links"][0]["a"]["address"], Fabric::Gateway(e)) << r.out;
  EXPECT_EQ(j["links"][0]["b"]["address"], Fabric::SpineSide(e, s)) << r.out;
  EXPECT_EQ(j["links"][0]["bad_pairs"], j["pairs"]["bad"]) << r.out;
  EXPECT_EQ(j["links"][0]["good_pairs"], 0) << r.out;
  // Strictly first: no other link has as many votes.
  if (j["links"].size() > 1) {
    EXPECT_LT(j["links"][1]["votes"].get<double>(),
              j["links"][0]["votes"].get<double>())
        << r.out;
  }
}

TEST_F(ProbeEcmpNetns, WithoutAFaultNoLinkStandsOut) {
  ASSERT_TRUE(AllTraced()) << "not every flow traced; logs in " << fabric_->dir;
  fabric_->RemoveFaults();
  std::this_thread::sleep_for(30s);
  const auto r = fabric_->Locate("25s");
  // 5: no pair is bad, nothing to locate.
  EXPECT_EQ(r.exit_code, 5)
      << r.out << testing::ReadFile(fabric_->dir / "locate.err");
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["pairs"]["bad"], 0) << r.out;
  EXPECT_GT(j["pairs"]["good"], 0) << r.out;
  EXPECT_TRUE(j["links"].empty()) << r.out;
}

}  // namespace
}  // namespace fabric
