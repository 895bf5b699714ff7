// A fabricmon daemon started before the subnet manager (issue 11): its
// port is INIT with no SM LID, and umad2sim's copy of the port that
// libibumad reads stays INIT for the life of the process. The daemon, with
// sm + fabric, must be healthy and export no SM sample while there is no
// SM, then start reporting once a real OpenSM brings the port ACTIVE:
// fabric_sm_masters 1 and the master GUID that `sminfo` reports; and
// follow its port going down (Unlink) and coming back (Link).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using Samples = std::map<std::string, double>;

std::optional<double> Get(const Samples& s, const std::string& series) {
  auto it = s.find(series);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

// Series whose name starts with `prefix`.
int Count(const Samples& s, const std::string& prefix) {
  int n = 0;
  for (const auto& [k, v] : s) n += k.rfind(prefix, 0) == 0;
  return n;
}

class SmLateActiveIbsim : public ::testing::Test {
 protected:
  SmLateActiveIbsim() : fabric_(FatTreeNetfile(2, 4)) {}
  void SetUp() override { FABRIC_START_IBSIM(fabric_); }

  // Scrapes until `pred` holds (tests/integration/fabricmon_run.h).
  Samples ScrapeUntil(int port, const std::function<bool(const Samples&)>& pred,
                      std::chrono::seconds bound = std::chrono::seconds(120)) {
    if (auto s = testing::ScrapeUntil(port, pred, bound)) return *s;
    ADD_FAILURE() << "condition not reached; log:\n" << Log();
    return {};
  }

  std::string Log() {
    return fabric_.Run({"cat", fabric_.dir() + "/fabricmon.log"}).out;
  }

  IbsimFabric fabric_;
};

TEST_F(SmLateActiveIbsim, DaemonStartedBeforeOpenSmReportsOnceThePortIsUp) {
  const int port = FreeLoopbackPort();
  const std::string config = fabric_.dir() + "/fabricmon.yaml";
  std::ofstream(config) << SmFabricConfig(port, "2s");
  // hca1's port: link up, INIT, no LID and no SM LID (no SM yet).
  const ToolOutput before = fabric_.Run({"ibstat"}, "hca1");
  ASSERT_NE(before.out.find("State: Initializing"), std::string::npos)
      << before.out << before.err;
  const pid_t daemon =
      fabric_.StartClient({Binary("fabricmon"), "--config", config}, "hca1",
                          fabric_.dir() + "/fabricmon.log");
  ASSERT_GT(daemon, 0);

  // Two collections of each (the timestamps moved): healthy, and nothing
  // about SMs or switches, since there is no SM and the port is not ACTIVE.
  std::map<std::string, double> first;
  Samples s = ScrapeUntil(port, [&](const Samples& x) {
    bool moved = true;
    for (const std::string c : {"sm", "fabric"}) {
      const auto ts = Get(x,
                          "fabric_collector_last_success_timestamp_seconds"
                          "{collector=\"" +
                              c + "\"}");
      if (!ts || *ts == 0) return false;
      if (!first.count(c)) first[c] = *ts;
      moved = moved && *ts > first[c];
    }
    return moved;
  });
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"sm\"}"), 1);
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);
  EXPECT_EQ(Count(s, "fabric_sm_"), 0);
  EXPECT_EQ(Count(s, "fabric_switch_"), 0);
  EXPECT_EQ(Log().find("cannot open"), std::string::npos) << Log();

  // The SM comes up after the daemon: the same daemon process reports it.
  fabric_.StartOpenSm({.sim_host = "hca0", .priority = 10});
  ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(90), "hca2"));
  const std::string out = fabric_.Run({"sminfo"}, "hca2").out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("sm guid 0x([0-9a-f]+),")))
      << out;
  char guid[24];
  std::snprintf(guid, sizeof(guid), "0x%016llx",
                std::stoull(m[1].str(), nullptr, 16));
  const std::string g = guid;
  s = ScrapeUntil(port, [&](const Samples& x) {
    return Get(x, "fabric_sm_masters") == 1.0 &&
           Get(x, "fabric_sm_state{sm_guid=\"" + g + "\"}") == 3.0;
  });
  EXPECT_EQ(Get(s, "fabric_sm_masters"), 1);
  EXPECT_EQ(Get(s, "fabric_sm_state{sm_guid=\"" + g + "\"}"), 3);
  EXPECT_EQ(Get(s, "fabric_sm_priority{sm_guid=\"" + g + "\"}"), 10);
  bool info = false;
  for (const auto& [k, v] : s) {
    if (k.rfind("fabric_sm_info{node=\"hca0\",sm_guid=\"" + g + "\"", 0) == 0) {
      info = v == 1;
    }
  }
  EXPECT_TRUE(info) << "no fabric_sm_info for " << g;
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"sm\"}"), 1);
  // The fabric collector swept from the port it could not use before.
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);
  EXPECT_GT(Count(s, "fabric_switch_info{"), 0);

  // The daemon's own port goes down (cable pulled): both collectors drop
  // it and stay healthy with nothing to say; cabled again, the SM brings
  // it back and they report again.
  fabric_.Console("Unlink \"hca1\"[1]");
  s = ScrapeUntil(port, [&](const Samples& x) {
    return Count(x, "fabric_sm_") == 0 && Count(x, "fabric_switch_") == 0;
  });
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"sm\"}"), 1);
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);
  EXPECT_NE(Log().find("is no longer ACTIVE"), std::string::npos) << Log();
  fabric_.Console("Link \"hca1\"[1] \"leaf0\"[2]");
  s = ScrapeUntil(port, [&](const Samples& x) {
    return Get(x, "fabric_sm_masters") == 1.0 &&
           Get(x, "fabric_sm_state{sm_guid=\"" + g + "\"}") == 3.0 &&
           Count(x, "fabric_switch_info{") > 0;
  });
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"sm\"}"), 1);
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);
  fabric_.StopClient(daemon);
}

}  // namespace
}  // namespace fabric::testing
