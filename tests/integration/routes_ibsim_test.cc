// Routes (sources/mad/routes.h, through `fabricmon-mad route`) against the
// real `ibtracert` on ibsim with a real OpenSM: for every ordered pair of
// HCAs of a two-spine fat tree, and of the same tree after one leaf-spine
// link was unlinked and OpenSM re-routed around it, our route (read from
// the LFTs OpenSM wrote) prints exactly what ibtracert prints, hop by hop.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/ci.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

// Two spines, six leaves, twelve HCAs (two per leaf): every leaf reaches
// every other through either spine, so OpenSM's choice is in the LFTs.
constexpr int kSwitches = 8;
constexpr int kHcas = 12;

class RoutesIbsim : public ::testing::Test {
 protected:
  RoutesIbsim() : fabric_(FatTreeNetfile(kSwitches, kHcas)) {}

  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    // Light sweeps every second: OpenSM notices an Unlink and re-routes.
    fabric_.StartOpenSm(
        {.sim_host = "hca0", .priority = 7, .sweep_interval = 1});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  }

  ToolOutput Mad(std::vector<std::string> args) {
    args.insert(args.begin(), Binary("fabricmon-mad"));
    return fabric_.Run(args, "hca1");
  }

  // HCA name -> LID, as `fabricmon-mad` discovery lists the nodes (the
  // LIDs only pick the pairs; ibtracert is the oracle for the routes).
  std::map<std::string, int> HcaLids() {
    const ToolOutput d = Mad({});
    std::map<std::string, int> lids;
    const std::regex node_re(
        R"re(^node 0x[0-9a-f]+ type 1 lid (\d+) ports \d+ "(hca\d+)"$)re");
    std::istringstream in(d.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, node_re)) lids[m[2]] = std::stoi(m[1]);
    }
    return lids;
  }

  // What ibtracert prints for SRC DST (stdout), "" when it fails.
  std::string Ibtracert(int src, int dst) {
    const ToolOutput r = fabric_.Run(
        {"ibtracert", std::to_string(src), std::to_string(dst)}, "hca1");
    return r.exit_code == 0 ? r.out : "";
  }

  // `fabricmon-mad route --pairs-file` over every ordered pair: one
  // discovery, every LFT block read once. (src, dst) -> its block.
  std::map<std::pair<int, int>, std::string> OurRoutes(
      const std::vector<std::pair<int, int>>& pairs, std::string* stats) {
    const std::string file = fabric_.dir() + "/pairs";
    {
      std::ofstream out(file);
      for (auto [s, d] : pairs) out << s << " " << d << "\n";
    }
    const ToolOutput r = Mad({"route", "--pairs-file", file});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    *stats = r.err;
    std::map<std::pair<int, int>, std::string> routes;
    std::istringstream in(r.out);
    std::string line;
    std::pair<int, int> current{0, 0};
    const std::regex head(R"re(^route (\d+) (\d+)$)re");
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, head)) {
        current = {std::stoi(m[1]), std::stoi(m[2])};
        routes[current];
      } else {
        routes[current] += line + "\n";
      }
    }
    return routes;
  }

  // Every ordered pair of HCAs: ours equals ibtracert's text. Returns how
  // many agreed; *ib gets ibtracert's routes.
  int CompareAllPairs(std::map<std::pair<int, int>, std::string>* ib) {
    const std::map<std::string, int> lids = HcaLids();
    EXPECT_EQ(lids.size(), static_cast<std::size_t>(kHcas));
    std::vector<std::pair<int, int>> pairs;
    for (const auto& [a, la] : lids) {
      for (const auto& [b, lb] : lids) {
        if (a != b) pairs.emplace_back(la, lb);
      }
    }
    std::string stats;
    const auto ours = OurRoutes(pairs, &stats);
    // Each switch's SwitchInfo and LFT block 0 once (LIDs < 64 here).
    std::smatch m;
    EXPECT_TRUE(std::regex_search(
        stats, m, std::regex(R"re(switch_info (\d+) lft_blocks (\d+))re")))
        << stats;
    if (!m.empty()) {
      EXPECT_LE(std::stoi(m[1]), kSwitches) << stats;
      EXPECT_EQ(m[1], m[2]) << stats;
    }
    int agree = 0;
    for (auto [s, d] : pairs) {
      const std::string want = Ibtracert(s, d);
      (*ib)[{s, d}] = want;
      EXPECT_FALSE(want.empty()) << "ibtracert " << s << " " << d;
      auto it = ours.find({s, d});
      if (it == ours.end()) {
        ADD_FAILURE() << "no route printed for " << s << " " << d;
        continue;
      }
      EXPECT_EQ(it->second, want) << "route " << s << " -> " << d;
      if (it->second == want) ++agree;
    }
    std::printf("routes agreeing with ibtracert: %d of %zu pairs\n", agree,
                pairs.size());
    return agree;
  }

  IbsimFabric fabric_;
};

TEST_F(RoutesIbsim, EveryHostPairAgreesWithIbtracert) {
  std::map<std::pair<int, int>, std::string> ib;
  EXPECT_EQ(CompareAllPairs(&ib), kHcas * (kHcas - 1));
  // The single-pair form prints exactly ibtracert's output, nothing else
  // on stdout; an unknown LID fails with a message, as ibtracert does.
  const auto& [pair, text] = *ib.begin();
  const ToolOutput one =
      Mad({"route", std::to_string(pair.first), std::to_string(pair.second)});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, text);
  const ToolOutput bad = Mad({"route", std::to_string(pair.first), "999"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("destination LID 999 not found"), std::string::npos)
      << bad.err;
  // LID-routed table reads find the same route.
  const ToolOutput lid =
      Mad({"route", "--lid-routed", std::to_string(pair.first),
           std::to_string(pair.second)});
  EXPECT_EQ(lid.out, text) << lid.err;
}

TEST_F(RoutesIbsim, AgreesAfterOpenSmRoutedAroundAnUnlinkedUplink) {
  // leaf0's uplink to spine0 (FatTreeNetfile: spine s on leaf port
  // hcas_per_leaf + 1 + s). hca0 and hca6 sit on leaf0.
  const std::map<std::string, int> lids = HcaLids();
  ASSERT_EQ(lids.size(), static_cast<std::size_t>(kHcas));
  const std::string answer = fabric_.Console("Unlink \"leaf0\"[3]");
  // Wait for OpenSM's re-sweep: every route out of leaf0's hosts works
  // again and none leaves leaf0 by the dead port.
  const bool rerouted = WaitFor(
      [&] {
        for (const auto& [name, lid] : lids) {
          for (int src : {lids.at("hca0"), lids.at("hca6")}) {
            if (lid == src) continue;
            const std::string r = Ibtracert(src, lid);
            if (r.empty() ||
                r.find("\"leaf0\"\n[3] -> ") != std::string::npos) {
              return false;
            }
          }
        }
        return true;
      },
      std::chrono::seconds(90), std::chrono::milliseconds(500));
  ASSERT_TRUE(rerouted) << answer;
  std::map<std::pair<int, int>, std::string> ib;
  EXPECT_EQ(CompareAllPairs(&ib), kHcas * (kHcas - 1));
  // And the routes do go around: every route from leaf0's hosts to another
  // leaf leaves leaf0 by spine1's port (4).
  int around = 0;
  for (const auto& [pair, text] : ib) {
    if (pair.first != lids.at("hca0")) continue;
    if (text.find("\"leaf0\"\n[4] -> switch") != std::string::npos) ++around;
    EXPECT_EQ(text.find("\"leaf0\"\n[3] -> switch"), std::string::npos) << text;
  }
  EXPECT_EQ(around, kHcas - 2);  // all but itself and hca6 (same leaf)
}

}  // namespace
}  // namespace fabric::testing
