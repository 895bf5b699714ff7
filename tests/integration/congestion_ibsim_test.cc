// Congestion trees against a real subnet manager (issue 42 item 5): ibsim
// with a real OpenSM routing a fat tree; the test lays a slow-receiver
// tree along the routes the real `ibtracert` reports (sources on three
// leaves, one HCA as the receiver) by setting each port's PortXmitWait and
// PortXmitData through ibsim's console (`PerformanceSet "node"[port]
// PortCounters.PortXmitWait=N`, `PortCountersExtended.PortXmitData=N`),
// raised every half second as a real tree's counters grow; the real
// fabricmon daemon (fabric collector, attached as an HCA through umad2sim,
// its sweep reading the LFTs OpenSM programmed) must name the receiver's
// leaf port the root, cause slow_receiver, and every other switch port on
// those routes a victim naming it.
//
// ibsim answers PerformanceSet for both fields (ibsim/sim_cmd.c; the sweep
// tests sm_fabric_ibsim_test and mad_ibsim_test read them back exactly).
// Its switches' DeviceID is none the ASIC table knows, so the wait is
// counted in the assumed 256 ns tick (congestion/xmit_wait.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using Samples = std::map<std::string, double>;
using namespace std::chrono_literals;

// Fallback PortXmitWait tick (s) and the share of time the root waits;
// each hop upstream waits 0.9 of its next hop's share (as the simulator's
// credit backpressure: simulator/model.h).
constexpr double kTick = 256e-9;
constexpr double kRootWait = 0.9;
constexpr double kPerHop = 0.9;
// Bytes per second: the slow receiver's port drains little; victims carry
// their share of it.
constexpr double kRootBytesPerSecond = 2e6;

class CongestionIbsim : public ::testing::Test {
 protected:
  // 2 spines, 6 leaves, 12 HCAs: hca<i> on leaf<i % 6>, port i / 6 + 1.
  CongestionIbsim() : fabric_(FatTreeNetfile(8, 12)) {}

  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    // No light sweeps: nothing but the test moves the counters.
    fabric_.StartOpenSm(
        {.sim_host = "hca0", .priority = 10, .sweep_interval = 0});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  }

  // Node description -> (node GUID, LID) from `fabricmon-mad` discovery.
  std::map<std::string, std::pair<std::string, int>> Nodes() {
    const ToolOutput d = fabric_.Run({Binary("fabricmon-mad")}, "hca1");
    std::map<std::string, std::pair<std::string, int>> out;
    const std::regex re(
        R"re(^node (0x[0-9a-f]+) type \d lid (\d+) ports \d+ "(.*)"$)re");
    std::istringstream in(d.out);
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_match(line, m, re)) out[m[3]] = {m[1], std::stoi(m[2])};
    }
    return out;
  }

  IbsimFabric fabric_;
};

TEST_F(CongestionIbsim, SweepNamesTheRootOfATreeLaidAlongIbtracertRoutes) {
  const auto nodes = Nodes();
  ASSERT_EQ(nodes.count("hca11"), 1u) << "discovery found no hca11";
  // The tree: (switch, out port) -> hops from the root, along the routes
  // ibtracert reports from hca2, hca3 and hca4 (leaves 2, 3, 4) to hca11
  // (leaf5): their leaf's uplink, a spine's port to leaf5, leaf5's port to
  // hca11 (the root).
  std::map<std::pair<std::string, int>, int> tree;
  TracertHop root;
  for (const char* src : {"hca2", "hca3", "hca4"}) {
    const ToolOutput r =
        fabric_.Run({"ibtracert", std::to_string(nodes.at(src).second),
                     std::to_string(nodes.at("hca11").second)},
                    "hca1");
    const std::vector<TracertHop> hops = ParseIbtracert(r.out);
    ASSERT_GE(hops.size(), 3u) << r.out << r.err;
    ASSERT_EQ(hops.back().to, "hca11") << r.out;
    root = hops.back();
    for (std::size_t i = 0; i < hops.size(); ++i) {
      if (hops[i].from.rfind("hca", 0) == 0) continue;  // not a switch port
      const int depth = static_cast<int>(hops.size() - 1 - i);
      auto [it, fresh] = tree.try_emplace({hops[i].from, hops[i].out}, depth);
      if (!fresh) it->second = std::min(it->second, depth);
    }
  }
  ASSERT_EQ(root.from, "leaf5");
  ASSERT_GE(tree.size(), 4u);  // the root, a spine port, three uplinks

  const int port = FreeLoopbackPort();
  const std::string config = fabric_.dir() + "/fabricmon.yaml";
  {
    std::string text = SmFabricConfig(port, "10m");
    // Sweeps 3 s apart: the counters below move every 0.5 s, so each
    // sweep's deltas are within a sixth of the rates.
    text = std::regex_replace(
        text, std::regex("fabric: \\{enabled: true, interval: 1s, timeout: 5s"),
        "fabric: {enabled: true, interval: 3s, timeout: 2500ms");
    std::ofstream(config) << text;
  }
  const pid_t daemon =
      fabric_.StartClient({Binary("fabricmon"), "--config", config}, "hca1",
                          fabric_.dir() + "/fabricmon.log");
  ASSERT_GT(daemon, 0);

  const std::string root_guid = nodes.at("leaf5").first;
  const std::string root_series =
      "fabric_congestion_root{cause=\"slow_receiver\",port=\"" +
      std::to_string(root.out) + "\",switch=\"leaf5\",switch_guid=\"" +
      root_guid + "\"}";
  // Every other switch port of the tree is a victim naming the root (its
  // tables are read after the root's: a sweep or two later).
  std::vector<std::string> victims;
  for (const auto& [where, depth] : tree) {
    if (depth == 0) continue;
    victims.push_back("fabric_congestion_victim{port=\"" +
                      std::to_string(where.second) + "\",root_guid=\"" +
                      root_guid + "\",root_port=\"" + std::to_string(root.out) +
                      "\",switch=\"" + where.first + "\",switch_guid=\"" +
                      nodes.at(where.first).first + "\"}");
  }
  auto has = [](const Samples& s, const std::string& series) {
    const auto it = s.find(series);
    return it != s.end() && it->second == 1;
  };
  Samples found, last;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 150s) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    for (const auto& [where, depth] : tree) {
      const double wait = kRootWait * std::pow(kPerHop, depth);
      const std::string at = "PerformanceSet \"" + where.first + "\"[" +
                             std::to_string(where.second) + "] ";
      fabric_.Console(
          at + "PortCounters.PortXmitWait=" +
          std::to_string(static_cast<std::uint64_t>(wait * t / kTick)));
      fabric_.Console(at + "PortCountersExtended.PortXmitData=" +
                      std::to_string(static_cast<std::uint64_t>(
                          kRootBytesPerSecond * t / 4)));
    }
    if (auto body = HttpGetOk(port, "/metrics")) {
      last = ParseSamples(*body);
      if (has(last, root_series) &&
          std::all_of(victims.begin(), victims.end(),
                      [&](const auto& v) { return has(last, v); })) {
        found = last;
        break;
      }
    }
    std::this_thread::sleep_for(500ms);
  }
  ASSERT_FALSE(found.empty())
      << "not all of " << root_series << " and its "
      << ::testing::PrintToString(victims) << "; last scrape:\n"
      << ::testing::PrintToString(last) << "\nlog:\n"
      << fabric_.Run({"cat", fabric_.dir() + "/fabricmon.log"}).out;
  int roots = 0;
  for (const auto& [k, v] : found) {
    if (k.rfind("fabric_congestion_root{", 0) == 0 && v == 1) {
      ++roots;
      EXPECT_EQ(k, root_series);
    }
  }
  EXPECT_EQ(roots, 1);
  for (const std::string& v : victims) EXPECT_TRUE(has(found, v)) << v;
  fabric_.StopClient(daemon);
}

}  // namespace
}  // namespace fabric::testing
