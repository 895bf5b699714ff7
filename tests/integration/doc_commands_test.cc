// The shell commands of README.md and docs/ run as written (issue 39 item
// 4), as the runbooks' PromQL already does (alerts_e2e_test):
//  - every ```sh block (tests/integration/doc_commands.h) runs with bash
//    -e -o pipefail in a scratch copy of the source tree, the built
//    binaries first on PATH, and must exit 0 (a `grep` that finds nothing
//    fails it), unless it is on the skip list below, each entry with why;
//    an entry that matches no block fails the test (the list stays small
//    and true);
//  - the runbooks' infiniband-diags lines (iblinkinfo, perfquery, ...) run
//    against a real ibsim fabric with OpenSM, their <placeholders> filled
//    with that fabric's device, port, LIDs and GUID; each must exit 0, and
//    the iblinkinfo line must name the switch port at the other end of the
//    host's cable.
// Bounded: each block gets 300 s (coreutils timeout).
#include "tests/integration/doc_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "tests/integration/nspawn_machine.h"
#include "tests/support/ci.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using ::testing::HasSubstr;
using testing::Shell;
using testing::ShellQuote;

struct Skip {
  const char* file;    // the block's file, or a directory prefix
  const char* marker;  // a string the block holds ("" = any block there)
  const char* why;
};

// Commands that need what a test cannot give: real RDMA hardware, root on
// the host's own package and service manager, minutes of fuzzing, a
// process that runs until Ctrl-C. Each names what tests it instead.
const Skip kSkips[] = {
    {"README.md", "scripts/run.sh",
     "installs packages and runs the demo until Ctrl-C; sim_demo_test runs "
     "the demo"},
    {"README.md", "scripts/test.sh", "the whole suite, this test included"},
    {"docs/deploy.md", "apt install ./fabricmon",
     "installs the .deb and its unit on the host: deb_package_test, "
     "systemd_nspawn_test"},
    {"docs/deploy.md", "fabricmon-kubelet.socket",
     "enables the kubelet relay in the host's systemd on a Kubernetes node: "
     "kubelet_pods_test reads pods through its systemd-socket-proxyd"},
    {"docs/deploy.md", "/etc/fabricmon/peers.json",
     "writes /etc/fabricmon on the admin host from its Prometheus targets"},
    {"docs/deploy.md", "apt install victoria-metrics",
     "installs and starts VictoriaMetrics' services: vm_deploy_test runs "
     "the same stack"},
    {"docs/install.md", "cpack -G DEB",
     "builds and installs the .deb on the host: deb_package_test"},
    {"docs/install.md", "cmake --install build",
     "installs into /usr/local and starts the unit: systemd_nspawn_test"},
    {"docs/measurements.md", "scripts/fuzz.sh",
     "a clang libFuzzer build and minutes per target: the fuzz corpora "
     "replay test"},
    {"docs/measurements.md", "scripts/cpu_vs_wall.py",
     "runs the 9-minute tour test under a CPU meter: the tour test itself "
     "runs in the suite"},
    {"docs/rdma.md", "validate-rdma",
     "two hosts with RDMA NICs (the scripts exit 2 without them)"},
    {"docs/simulator.md", "scripts/demo.sh",
     "the demo runs until Ctrl-C: sim_demo_test"},
    {"docs/simulator.md", "prometheus-node-exporter",
     "a server in the foreground: sim_node_exporter_test"},
    {"docs/runbooks/", "",
     "run on a node of a real fabric with the alert's labels as "
     "<placeholders>; their infiniband-diags lines run on ibsim below"},
};

const Skip* SkipOf(const testing::DocBlock& b) {
  for (const auto& s : kSkips) {
    if (b.file.rfind(s.file, 0) == 0 &&
        b.text.find(s.marker) != std::string::npos) {
      return &s;
    }
  }
  return nullptr;
}

TEST(DocCommandsTest, EveryShellBlockRunsOrIsSkippedWithItsReason) {
  testing::TempDir scratch("doc-commands");
  ASSERT_FALSE(scratch.path().empty());
  const std::string tree = scratch.path() + "/src";
  // A copy of the tree: some commands edit files (alerting.md's sed).
  ASSERT_EQ(
      Shell("mkdir " + tree + " && tar -C " + ShellQuote(testing::SourceDir()) +
            " --exclude='./build*' --exclude=./.git -cf - . | tar -C " + tree +
            " -xf -")
          .rc,
      0);
  const auto blocks = testing::ShellBlocks();
  ASSERT_GT(blocks.size(), 10u);
  std::set<const Skip*> used;
  int ran = 0;
  for (const auto& b : blocks) {
    const std::string where = b.file + ":" + std::to_string(b.line);
    if (const Skip* s = SkipOf(b)) {
      used.insert(s);
      std::cout << "[ skipped ] " << where << ": " << s->why << "\n";
      continue;
    }
    const auto r = Shell(
        "cd " + tree + " && PATH=" + ShellQuote(testing::BinaryDir()) +
        ":$PATH timeout 300 bash -e -o pipefail -c " + ShellQuote(b.text));
    EXPECT_EQ(r.rc, 0) << where << ":\n" << b.text << "---\n" << r.output;
    ++ran;
  }
  EXPECT_GE(ran, 4);
  for (const auto& s : kSkips) {
    EXPECT_TRUE(used.count(&s))
        << "skip entry matches no block: " << s.file << " " << s.marker;
  }
}

// The first match of group 1 of `re` in `text`, or "".
std::string Find(const std::string& text, const std::string& re) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(re)) ? m[1].str() : "";
}

const std::set<std::string> kIbTools = {
    "iblinkinfo", "perfquery", "ibqueryerrors", "sminfo",
    "smpquery",   "ibtracert", "ibstat",        "ibportstate"};

TEST(DocCommandsTest, RunbookInfinibandCommandsRunOnIbsim) {
  // One switch, leaf0, with hca0 (the SM) on port 1 and hca1, where the
  // commands run as the runbooks' host, on port 2.
  testing::IbsimFabric fabric(testing::FatTreeNetfile(1, 2));
  FABRIC_START_IBSIM(fabric);
  fabric.StartOpenSm({.sim_host = "hca0"});
  ASSERT_TRUE(fabric.WaitForMaster(std::chrono::seconds(60), "hca1"));
  const std::string dev =
      Find(fabric.Run({"ibstat", "-l"}, "hca0").out, R"(^(\S+))");
  const std::string stat0 = fabric.Run({"ibstat", dev, "1"}, "hca0").out;
  const std::string stat1 = fabric.Run({"ibstat", dev, "1"}, "hca1").out;
  const std::string switches = fabric.Run({"ibswitches"}, "hca0").out;
  const std::map<std::string, std::string> values = {
      {"<dev>", dev},
      {"<port>", "1"},
      {"<lid>", Find(stat1, R"(Base lid: (\d+))")},
      {"<port_guid>", Find(stat1, R"(Port GUID: (0x[0-9a-f]+))")},
      {"<switch_lid>", Find(switches, R"("leaf0" base port 0 lid (\d+))")},
      {"<switch_port>", "1"},
      {"<prober_lid>", Find(stat1, R"(Base lid: (\d+))")},
      {"<peer_lid>", Find(stat0, R"(Base lid: (\d+))")},
      {"<old_sm_lid>", Find(stat0, R"(Base lid: (\d+))")},
      {"<sm_lid>", Find(stat0, R"(Base lid: (\d+))")},
      {"<switch_guid>",
       Find(switches, R"(Switch\s*: (0x[0-9a-f]+) ports \d+ "leaf0")")},
      {"<issuer-lid>", Find(switches, R"("leaf0" base port 0 lid (\d+))")},
  };
  for (const auto& [name, value] : values) ASSERT_FALSE(value.empty()) << name;

  int ran = 0, links = 0;
  for (const auto& b : testing::ShellBlocks()) {
    if (b.file.rfind("docs/runbooks/", 0) != 0) continue;
    std::istringstream lines(b.text);
    for (std::string line; std::getline(lines, line);) {
      // Comments off; `a; sleep 10; a` is two runs of a (the sleep is for
      // a person watching a counter move).
      line = std::regex_replace(line, std::regex(R"((^|\s)#.*$)"), "");
      std::istringstream commands(line);
      for (std::string command; std::getline(commands, command, ';');) {
        command = std::regex_replace(command, std::regex(R"(^\s+|\s+$)"), "");
        const std::string tool = Find(command, R"(^(\S+))");
        if (!kIbTools.count(tool)) continue;
        // ibsim's PMA does not answer PortSamplesControl (perfquery -c
        // times out); a real HCA's does.
        if (command.rfind("perfquery -c", 0) == 0) continue;
        // -G GUID resolves the GUID through an SA path query, which
        // OpenSM on ibsim left unanswered here (120 s each); not run.
        if (command.find("-G <switch_guid>") != std::string::npos) continue;
        std::string filled = command;
        for (const auto& [name, value] : values) {
          filled = std::regex_replace(filled, std::regex(name), value);
        }
        EXPECT_EQ(filled.find('<'), std::string::npos)
            << b.file << ": a placeholder this test does not know: " << command;
        if (filled.find('<') != std::string::npos) continue;
        const auto r =
            Shell(fabric.ShellPrefix("hca1") +
                  "timeout 120 bash -o pipefail -c " + ShellQuote(filled));
        EXPECT_EQ(r.rc, 0) << b.file << ": " << command << "\n"
                           << filled << "\n"
                           << r.output;
        if (tool == "iblinkinfo" &&
            command.find("<port_guid>") != std::string::npos) {
          // This cable: hca1 port 1 to leaf0 port 2, on one line.
          EXPECT_TRUE(std::regex_search(
              r.output, std::regex(values.at("<port_guid>") +
                                   R"([^\n]*==>[^\n]* 2\[[^\n]*"leaf0")")))
              << b.file << ": " << r.output;
          ++links;
        }
        ++ran;
      }
    }
  }
  EXPECT_GT(ran, 20);
  EXPECT_GE(links, 7);
}

}  // namespace
}  // namespace fabric
