// The ibsim harness itself, against the real tools: a generated fat tree
// comes up under a real OpenSM, infiniband-diags see what the generator
// described, and console commands (PerformanceSet, Unlink) take effect.
#include "tests/support/ibsim_fabric.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/support/ci.h"

namespace fabric::testing {
namespace {

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(FatTreeNetfile, ShapesTheTree) {
  const std::string net = FatTreeNetfile(4, 6);  // 1 spine, 3 leaves
  EXPECT_EQ(CountLines(net, "Switch\t"), 4);
  EXPECT_EQ(CountLines(net, "Hca\t"), 6);
  EXPECT_EQ(net.rfind("Hca\t1 \"hca0\"", 0), 0u);  // first node is hca0
  EXPECT_NE(net.find("Switch\t3 \"spine0\"\n[1]\t\"leaf0\"[3]"),
            std::string::npos);
  EXPECT_NE(net.find("Switch\t3 \"leaf0\"\n[1]\t\"hca0\"[1]\n[2]\t\"hca3\"[1]"
                     "\n[3]\t\"spine0\"[1]"),
            std::string::npos);
  const std::string single = FatTreeNetfile(1, 2);
  EXPECT_EQ(CountLines(single, "Switch\t"), 1);
  EXPECT_EQ(single.find("spine"), std::string::npos);
}

TEST(IbsimFabric, OpenSmBringsUpTheGeneratedTree) {
  IbsimFabric fabric(FatTreeNetfile(4, 6));
  FABRIC_START_IBSIM(fabric);
  fabric.StartOpenSm({.sim_host = "hca0", .priority = 5});
  ASSERT_TRUE(fabric.WaitForMaster(std::chrono::seconds(60), "hca1"));

  const ToolOutput sminfo = fabric.Run({"sminfo"}, "hca2");
  EXPECT_NE(sminfo.out.find("priority 5 state 3 SMINFO_MASTER"),
            std::string::npos)
      << sminfo.out;
  const ToolOutput switches = fabric.Run({"ibswitches"}, "hca1");
  EXPECT_EQ(CountLines(switches.out, "Switch\t:"), 4) << switches.out;
  for (const char* name : {"\"leaf0\"", "\"leaf2\"", "\"spine0\""}) {
    EXPECT_NE(switches.out.find(name), std::string::npos) << name;
  }

  // PerformanceSet on leaf0 port 1: perfquery at leaf0's LID sees it.
  const std::regex lid_re("\"leaf0\" base port 0 lid ([0-9]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(switches.out, m, lid_re)) << switches.out;
  const std::string answer = fabric.Console(
      "PerformanceSet \"leaf0\"[1] PortCounters.SymbolErrorCounter=77");
  EXPECT_NE(answer.find("has been set to 77"), std::string::npos) << answer;
  const ToolOutput pq = fabric.Run({"perfquery", m[1].str(), "1"}, "hca1");
  EXPECT_NE(pq.out.find("SymbolErrorCounter:..............77"),
            std::string::npos)
      << pq.out << pq.err;

  // Unlink leaf0 port 1 (hca0's cable): ibnetdiscover no longer shows it.
  fabric.Console("Unlink \"leaf0\"[1]");
  const ToolOutput net = fabric.Run({"ibnetdiscover"}, "hca1");
  EXPECT_EQ(net.out.find("# \"hca0\""), std::string::npos) << net.out;
  EXPECT_NE(net.out.find("# \"hca3\""), std::string::npos) << net.out;
}

}  // namespace
}  // namespace fabric::testing
