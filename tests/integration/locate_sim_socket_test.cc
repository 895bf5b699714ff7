// fabricmon-locate against the in-house simulator across a process
// boundary: a real `fabricmon-sim --mad-socket` (steady scenario, 3 hosts)
// answers discovery, SwitchInfo and the LFTs it computes (simulator/
// routing.h), and `fabricmon-locate --link --sim-mad-socket` lists the
// LIDs routed out of a leaf's host port and out of its uplink. The oracle
// is the model itself (which port owns each LID), not fabric code.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "locate/counters.h"
#include "simulator/model.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

TEST(LocateSimSocket, LinkListsTheLidsTheSimulatorRoutesOutOfAPort) {
  testing::TempDir tmp("fabricmon-locate-sim-socket");
  const fs::path dir = tmp.path();
  sim::SimConfig config;
  config.hosts = 3;
  const sim::Cluster model(config);  // the same fabric fabricmon-sim builds
  const sim::Port* local = model.FindPort(0, "mlx5_0");
  ASSERT_NE(local, nullptr);
  const sim::Port& leaf_port = model.ports()[local->peer];  // ib-leaf0[1]
  // The oracle: host port -> its LID; leaf0's uplink carries every IB LID
  // that is not leaf0 itself or behind it.
  std::set<int> behind_port1 = {local->lid}, uplink;
  int uplink_port = 0;
  for (const sim::Port& p : model.ports()) {
    if (p.link_layer != sim::LinkLayer::kInfiniBand) continue;
    if (p.device == leaf_port.device && p.peer >= 0 &&
        model.ports()[p.peer].host < 0) {
      uplink_port = p.port_num;
    }
    const bool on_leaf0 =
        p.device == leaf_port.device ||
        (p.peer >= 0 && model.ports()[p.peer].device == leaf_port.device &&
         p.host >= 0);
    if (!on_leaf0 && p.lid != 0) uplink.insert(p.lid);
  }
  ASSERT_GT(uplink_port, 0);

  const fs::path sock = dir / "mad.sock";
  auto locate = [&](int port) {
    return Binary("fabricmon-locate") + " --json --link " +
           locate::GuidText(leaf_port.guid) + ":" + std::to_string(port) +
           " --sim-mad-socket " + sock.string() + " --sim-port-guid " +
           locate::GuidText(local->guid) + " --mad-timeout-ms 5000 2>>" +
           (dir / "locate.err").string() + "; echo \"rc=$?\"";
  };
  // One shell: start the simulator (its pid only is killed), wait for its
  // socket, run the locator twice, stop the simulator.
  const std::string script =
      Binary("fabricmon-sim") + " --out " + (dir / "trees").string() +
      " --hosts 3 --scenario steady --mad-socket " + sock.string() + " >" +
      (dir / "sim.log").string() + " 2>&1 & sim=$!; " +
      "for i in $(seq 600); do [ -S " + sock.string() +
      " ] && break; sleep 0.1; done; " + locate(leaf_port.port_num) +
      "; echo ----; " + locate(uplink_port) + "; kill $sim; wait $sim";
  const CommandResult r = RunCommand("sh -c '" + script + "'");
  const std::string err = ReadFile(dir / "locate.err");
  const std::size_t split = r.out.find("----\n");
  ASSERT_NE(split, std::string::npos) << r.out << err;
  auto lids = [&](std::string text) {
    std::set<int> out;
    EXPECT_NE(text.find("rc=0"), std::string::npos) << text << err;
    text = text.substr(0, text.rfind("rc="));
    const auto j = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << text;
    if (j.is_discarded()) return out;
    for (const auto& d : j["destinations"]) out.insert(d["lid"].get<int>());
    return out;
  };
  EXPECT_EQ(lids(r.out.substr(0, split)), behind_port1);
  EXPECT_EQ(lids(r.out.substr(split + 5)), uplink);
}

}  // namespace
}  // namespace fabric::testing
