// Issue 39 item 10, "never hurt the subnet manager": a real OpenSM 3.3.23
// attached at a switch (port 0 of "sw0", the first node of the netfile) on
// ibsim, and the real fabricmon daemon on hca1 sweeping the fabric with
// PESC on. ibsim answers PMA ClassPortInfo, PortCounters and
// PortCountersExtended itself but forwards every other PerfMgt request to
// the SM client attached at the destination port; OpenSM's PerfMgr receive
// callback takes any MAD for a response to its own request and segfaults on
// an unsolicited one. The sweep must never send PESC to a switch whose LID
// is an SM's, so OpenSM is still master after many sweeps.
//
// The first test pins the mechanism (what makes the second meaningful): one
// `perfquery -T` at the SM's switch LID kills that OpenSM, while the same
// PESC to the other switch is merely unanswered.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

// The SM's switch first (ibsim attaches a client without SIM_HOST to it),
// a second switch behind it, three hosts.
constexpr char kNet[] = R"(Switch	4 "sw0"
[1]	"hca0"[1]
[2]	"hca1"[1]
[3]	"sw1"[1]

Switch	4 "sw1"
[1]	"sw0"[3]
[2]	"hca2"[1]

Hca	1 "hca0"
[1]	"sw0"[1]

Hca	1 "hca1"
[1]	"sw0"[2]

Hca	1 "hca2"
[1]	"sw1"[2]
)";

// The LID `ibswitches` gives the switch named `name` (0 when absent).
int SwitchLid(IbsimFabric& fabric, const std::string& name) {
  const std::string out = fabric.Run({"ibswitches"}, "hca2").out;
  std::smatch m;
  const std::regex re("\"" + name + "\" base port 0 lid (\\d+)");
  return std::regex_search(out, m, re) ? std::stoi(m[1]) : 0;
}

class SmSwitchPescIbsim : public ::testing::Test {
 protected:
  SmSwitchPescIbsim() : fabric_(kNet) {}
  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    fabric_.StartOpenSm({.sim_host = "sw0", .priority = 10});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca2"));
  }
  // OpenSM still answers as master (a dead one leaves no SM at all).
  bool SmAlive() {
    return fabric_.WaitForMaster(std::chrono::seconds(20), "hca2");
  }
  IbsimFabric fabric_;
};

TEST_F(SmSwitchPescIbsim, PescAtTheSmSwitchLidKillsOpenSm) {
  const int sw0 = SwitchLid(fabric_, "sw0"), sw1 = SwitchLid(fabric_, "sw1");
  ASSERT_GT(sw0, 0);
  ASSERT_GT(sw1, 0);
  // Any other switch: no one handles 0x1F, the Get times out, SM unharmed.
  fabric_.Run({"perfquery", "-T", std::to_string(sw1), "1"}, "hca1");
  EXPECT_TRUE(SmAlive());
  // The SM's switch: ibsim hands the Get to OpenSM, which dies.
  fabric_.Run({"perfquery", "-T", std::to_string(sw0), "1"}, "hca1");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(fabric_.WaitForMaster(std::chrono::seconds(5), "hca2"))
      << "ibsim no longer forwards PESC to the SM: the next test proves "
         "nothing any more";
}

TEST_F(SmSwitchPescIbsim, DaemonSweepsWithPescAndOpenSmSurvives) {
  const std::string dir = fabric_.dir();
  const int port = FreeLoopbackPort();
  std::ofstream(dir + "/fabricmon.yaml")
      << SmFabricConfig(port, "10m")
      << "  ib_link: {enabled: true, pesc: true}\n";
  const pid_t daemon = fabric_.StartClient(
      {Binary("fabricmon"), "--config", dir + "/fabricmon.yaml"}, "hca1",
      dir + "/fabricmon.log");
  ASSERT_GT(daemon, 0);
  // sw1's PMA is probed (and found without PESC: ibsim has none) while sw0
  // is never asked; then several more sweeps, each of which would have
  // reached the SM.
  std::optional<double> sweeps_at;
  const auto s = ScrapeUntil(
      port,
      [&](const std::map<std::string, double>& x) {
        auto u = x.find("fabric_sweep_pesc_unsupported_switches");
        auto ok = x.find("fabric_sweep_mads_total{result=\"ok\"}");
        if (u == x.end() || u->second != 1 || ok == x.end()) return false;
        if (!sweeps_at) sweeps_at = ok->second;
        return ok->second >= *sweeps_at + 120;  // 24 a sweep: 5 more
      },
      std::chrono::seconds(120));
  const std::string log = fabric_.Run({"cat", dir + "/fabricmon.log"}).out;
  ASSERT_TRUE(s) << log;
  EXPECT_TRUE(SmAlive())
      << "OpenSM died; its log:\n"
      << fabric_.Run({"tail", "-20", dir + "/opensm0/opensm.log"}).out;
  EXPECT_NE(log.find("not reading PortExtendedSpeedsCounters of sw0"),
            std::string::npos)
      << log;
  // PortCounters of the SM's switch are still read (ibsim's own PMA).
  bool sw0_counters = false;
  for (const auto& [k, v] : *s) {
    sw0_counters |=
        k.rfind("fabric_switch_port_transmit_bytes_total{", 0) == 0 &&
        k.find("switch=\"sw0\"") != std::string::npos;
  }
  EXPECT_TRUE(sw0_counters);
  fabric_.StopClient(daemon);
}

}  // namespace
}  // namespace fabric::testing
