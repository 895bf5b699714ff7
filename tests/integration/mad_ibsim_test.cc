// The mad/ library (through fabricmon-mad, attached to ibsim as hca1 under
// umad2sim) against the real peer on the same fabric: OpenSM's SMInfo as
// `sminfo` reports it, the switches `ibswitches` lists, the switch links
// `ibnetdiscover` finds, counters `PerformanceSet` wrote, an Unlinked port,
// a MAD drop rate, and shards.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "tests/support/ci.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using Link = std::tuple<std::uint64_t, int, std::uint64_t, int>;

std::uint64_t Hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

struct MadOutput {
  std::map<std::uint64_t, std::pair<int, std::string>> switches;  // lid, name
  std::set<Link> switch_links;
  std::map<std::pair<std::uint64_t, int>, std::map<std::string, std::string>>
      ports;  // (switch, port) -> field -> value
  std::map<std::string, std::map<std::string, long long>> stats;
  std::vector<std::string> sms;  // "guid priority state"
};

MadOutput ParseMad(const std::string& text) {
  MadOutput out;
  std::set<std::uint64_t> switch_guids;
  std::vector<Link> links;
  std::istringstream in(text);
  std::string line;
  const std::regex node_re(
      R"re(^node 0x([0-9a-f]+) type (\d) lid (\d+) ports \d+ "(.*)"$)re");
  const std::regex link_re(
      R"re(^link 0x([0-9a-f]+) (\d+) 0x([0-9a-f]+) (\d+)$)re");
  const std::regex sm_re(
      R"re(^sm lid \d+ guid 0x([0-9a-f]+) priority (\d+) state (\d+))re");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, node_re) && m[2] == "2") {
      out.switches[Hex(m[1])] = {std::stoi(m[3]), m[4]};
    } else if (std::regex_match(line, m, link_re)) {
      links.emplace_back(Hex(m[1]), std::stoi(m[2]), Hex(m[3]),
                         std::stoi(m[4]));
    } else if (std::regex_search(line, m, sm_re)) {
      out.sms.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str());
    } else if (line.rfind("port ", 0) == 0 || line.rfind("stats ", 0) == 0) {
      std::istringstream f(line);
      std::string kind, a, b, k, v;
      f >> kind >> a >> b;
      std::map<std::string, std::string> fields;
      while (f >> k >> v) fields[k] = v;
      if (kind == "port") {
        out.ports[{Hex(a.substr(2)), std::stoi(b)}] = fields;
      } else {
        // "stats discovery ok N ..." : a = discovery, b = "ok"
        std::istringstream g(line);
        std::string s1, name, key, val;
        g >> s1 >> name;
        while (g >> key >> val) out.stats[name][key] = std::stoll(val);
      }
    }
  }
  for (const Link& l : links) {
    if (out.switches.count(std::get<0>(l))) out.switch_links.insert(l);
  }
  return out;
}

// ibnetdiscover's switch blocks: "switchguid=0x..." then
// `[port]	"S-<guid>"[rport]` / `"H-<guid>"[rport](portguid)` lines.
std::set<Link> IbnetdiscoverSwitchLinks(const std::string& text) {
  std::set<Link> links;
  std::istringstream in(text);
  std::string line;
  std::uint64_t current = 0;
  const std::regex sw_re(R"re(^switchguid=0x([0-9a-f]+))re");
  const std::regex port_re(R"re(^\[(\d+)\]\s+"[SH]-([0-9a-f]+)"\[(\d+)\])re");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, sw_re)) {
      current = Hex(m[1]);
    } else if (line.empty() || line.rfind("Ca", 0) == 0) {
      if (line.rfind("Ca", 0) == 0) current = 0;
    } else if (current && std::regex_search(line, m, port_re)) {
      links.emplace(current, std::stoi(m[1]), Hex(m[2]), std::stoi(m[3]));
    }
  }
  return links;
}

class MadIbsim : public ::testing::Test {
 protected:
  MadIbsim() : fabric_(FatTreeNetfile(4, 6)) {}

  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    fabric_.StartOpenSm(
        {.sim_host = "hca0", .priority = 7, .sweep_interval = 0});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  }

  ToolOutput Mad(std::vector<std::string> args = {}) {
    args.insert(args.begin(), Binary("fabricmon-mad"));
    ToolOutput r = fabric_.Run(args, "hca1");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r;
  }

  std::uint64_t SwitchGuid(const MadOutput& m, const std::string& name) {
    for (const auto& [guid, v] : m.switches) {
      if (v.second == name) return guid;
    }
    ADD_FAILURE() << "no switch " << name;
    return 0;
  }

  IbsimFabric fabric_;
};

TEST_F(MadIbsim, AgreesWithSminfoIbswitchesAndIbnetdiscover) {
  const MadOutput m = ParseMad(Mad().out);
  EXPECT_EQ(m.stats.at("discovery").at("timeouts"), 0);
  EXPECT_EQ(m.stats.at("discovery").at("unreachable"), 0);
  EXPECT_EQ(m.stats.at("sweep").at("timeouts"), 0);

  // Switches: GUID, LID and name as ibswitches lists them.
  const std::string ibswitches = fabric_.Run({"ibswitches"}, "hca2").out;
  const std::regex sw_re(
      R"re(Switch\s*: 0x([0-9a-f]+) ports \d+ "([^"]*)" base port 0 lid (\d+))re");
  std::map<std::uint64_t, std::pair<int, std::string>> peer;
  for (std::sregex_iterator it(ibswitches.begin(), ibswitches.end(), sw_re), e;
       it != e; ++it) {
    peer[Hex((*it)[1])] = {std::stoi((*it)[3]), (*it)[2]};
  }
  EXPECT_EQ(peer.size(), 4u) << ibswitches;
  EXPECT_EQ(m.switches, peer);

  // Every switch port's remote end, as ibnetdiscover finds it.
  const std::string net = fabric_.Run({"ibnetdiscover"}, "hca2").out;
  const std::set<Link> peer_links = IbnetdiscoverSwitchLinks(net);
  EXPECT_EQ(peer_links.size(), 6u + 2 * 3);  // 6 HCA cables, 3 uplinks
  EXPECT_EQ(m.switch_links, peer_links) << net;
  for (const auto& [guid, v] : m.switches) {
    for (const Link& l : peer_links) {
      if (std::get<0>(l) != guid) continue;
      EXPECT_EQ(m.ports.at({guid, std::get<1>(l)}).at("state"), "4");
    }
  }

  // The master SM: GUID, priority and state as sminfo reports them.
  const std::string sminfo = fabric_.Run({"sminfo"}, "hca2").out;
  std::smatch s;
  ASSERT_TRUE(std::regex_search(
      sminfo, s,
      std::regex(
          R"re(sm guid 0x([0-9a-f]+), activity count \d+ priority (\d+) )re"
          R"re(state (\d+))re")))
      << sminfo;
  char want[64];
  std::snprintf(want, sizeof(want), "%016llx %s %s",
                static_cast<unsigned long long>(Hex(s[1])), s[2].str().c_str(),
                s[3].str().c_str());
  ASSERT_FALSE(m.sms.empty());
  EXPECT_EQ(m.sms[0], want);
  EXPECT_EQ(s[2], "7");
  EXPECT_EQ(s[3], "3");
}

TEST_F(MadIbsim, PerformanceSetValuesComeOutExactly) {
  // leaf2 port 1 is hca2's cable; hca1 (the sweeper) is on leaf1.
  for (const char* set :
       {"PortCounters.SymbolErrorCounter=77",
        "PortCounters.LinkDownedCounter=5", "PortCounters.PortRcvErrors=1001",
        "PortCounters.PortXmitDiscards=1234", "PortCounters.PortXmitWait=99"}) {
    const std::string answer =
        fabric_.Console(std::string("PerformanceSet \"leaf2\"[1] ") + set);
    EXPECT_NE(answer.find("has been set"), std::string::npos) << answer;
  }
  const MadOutput m = ParseMad(Mad().out);
  const auto& port = m.ports.at({SwitchGuid(m, "leaf2"), 1});
  EXPECT_EQ(port.at("symbol_error"), "77");
  EXPECT_EQ(port.at("link_downed"), "5");
  EXPECT_EQ(port.at("port_rcv_errors"), "1001");
  EXPECT_EQ(port.at("port_xmit_discards"), "1234");
  EXPECT_EQ(port.at("xmit_wait"), "99");
  // And perfquery reads the same 64-bit data counters as the sweep did
  // (nothing but the sweep itself moves them with light sweeps off, and
  // the sweep's own MADs end at the switch, not on port 1).
  const auto lid = std::to_string(m.switches.at(SwitchGuid(m, "leaf2")).first);
  const std::string pq = fabric_.Run({"perfquery", "-x", lid, "1"}, "hca1").out;
  std::smatch x;
  ASSERT_TRUE(
      std::regex_search(pq, x, std::regex(R"re(PortXmitData:\.*(\d+))re")));
  EXPECT_EQ(port.at("xmit_data"), x[1].str());
}

TEST_F(MadIbsim, UnlinkedPortIsNotActive) {
  MadOutput before = ParseMad(Mad().out);
  const std::uint64_t leaf0 = SwitchGuid(before, "leaf0");
  EXPECT_EQ(before.ports.at({leaf0, 1}).at("state"), "4");
  fabric_.Console("Unlink \"leaf0\"[1]");
  const MadOutput after = ParseMad(Mad().out);
  EXPECT_NE(after.ports.at({leaf0, 1}).at("state"), "4");
  for (const Link& l : after.switch_links) {
    EXPECT_FALSE(std::get<0>(l) == leaf0 && std::get<1>(l) == 1);
  }
  EXPECT_EQ(after.switch_links.size(), before.switch_links.size() - 1);
}

TEST_F(MadIbsim, MadDropRateShowsAsRetriesNotWrongValues) {
  const std::string answer = fabric_.Console(
      "PerformanceSet \"leaf2\"[1] "
      "PortCounters.SymbolErrorCounter=321");
  ASSERT_NE(answer.find("has been set"), std::string::npos);
  const MadOutput clean = ParseMad(Mad().out);
  fabric_.Console("Error \"leaf2\" 50");
  const MadOutput lossy =
      ParseMad(Mad({"--mad-timeout-ms", "50", "--mad-retries", "30"}).out);
  EXPECT_GT(lossy.stats.at("sweep").at("retries") +
                lossy.stats.at("discovery").at("retries"),
            0);
  EXPECT_EQ(lossy.stats.at("sweep").at("timeouts"), 0);
  EXPECT_EQ(lossy.switches, clean.switches);
  EXPECT_EQ(lossy.switch_links, clean.switch_links);
  EXPECT_EQ(lossy.ports.at({SwitchGuid(lossy, "leaf2"), 1}).at("symbol_error"),
            "321");
  // With no retries the same loss surfaces as timeouts, never as values.
  const MadOutput no_retry =
      ParseMad(Mad({"--mad-timeout-ms", "50", "--mad-retries", "0"}).out);
  EXPECT_GT(no_retry.stats.at("sweep").at("timeouts") +
                no_retry.stats.at("discovery").at("timeouts"),
            0);
  for (const auto& [key, fields] : no_retry.ports) {
    auto it = fields.find("symbol_error");
    if (key.first == SwitchGuid(lossy, "leaf2") && key.second == 1 &&
        it != fields.end()) {
      EXPECT_EQ(it->second, "321");
    }
  }
}

TEST_F(MadIbsim, ShardsCoverEverySwitchOnce) {
  const MadOutput all = ParseMad(Mad().out);
  std::map<std::uint64_t, int> seen;
  for (const char* shard : {"1/3", "2/3", "3/3"}) {
    const MadOutput part = ParseMad(Mad({"--shard", shard}).out);
    std::set<std::uint64_t> swept;
    for (const auto& [key, fields] : part.ports) swept.insert(key.first);
    for (std::uint64_t g : swept) ++seen[g];
  }
  EXPECT_EQ(seen.size(), all.switches.size());
  for (const auto& [guid, n] : seen) EXPECT_EQ(n, 1) << std::hex << guid;
}

}  // namespace
}  // namespace fabric::testing
