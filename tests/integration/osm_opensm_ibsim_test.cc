// libfabricmon_osm.so inside a real OpenSM (with PerfMgr) on an ibsim
// fabric, found through LD_LIBRARY_PATH. First with a socket this test binds
// in place of the daemon: the SM's events and PerfMgr's readings arrive,
// a counter set with ibsim's PerformanceSet arrives exactly, OpenSM keeps
// sweeping with nobody listening, and a re-bound receiver gets events again.
// Then the same through the real daemon's `opensm` collector and /metrics,
// killing and restarting the daemon.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/osm_plugin_harness.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;

// SMInfo ActCount of the master as `sminfo` prints it; -1 when unreadable.
long long ActivityCount(const IbsimFabric& fabric) {
  const ToolOutput r = fabric.Run({"sminfo"}, "hca1");
  std::smatch m;
  static const std::regex re("activity count (\\d+)");
  if (r.exit_code != 0 || !std::regex_search(r.out, m, re)) return -1;
  return std::stoll(m[1]);
}

// Waits until OpenSM's SMInfo ActCount has moved by two (it sweeps on
// with nobody listening) and at least 3 s have passed, so PerfMgr (every
// second) has reported into the void; returns whether ActCount moved.
bool SweepsWhileNobodyListens(const IbsimFabric& fabric) {
  const long long before = ActivityCount(fabric);
  if (before < 0) return false;
  const auto start = std::chrono::steady_clock::now();
  long long after = before;
  for (int i = 0; i < 120; ++i) {
    std::this_thread::sleep_for(250ms);
    after = ActivityCount(fabric);
    if (after >= before + 2 && std::chrono::steady_clock::now() - start > 3s) {
      break;
    }
  }
  return after >= before + 2;
}

class OsmOpenSmTest : public ::testing::Test {
 protected:
  void StartSm(IbsimFabric& fabric, const std::string& socket) {
    IbsimFabric::OpenSmOptions options;
    options.sim_host = "hca0";
    options.config_lines = {"event_plugin_name fabricmon_osm",
                            "event_plugin_options " + socket, "perfmgr TRUE",
                            "perfmgr_sweep_time_s 1"};
    options.sweep_interval = 1;
    options.env = {"LD_LIBRARY_PATH=" + BinaryDir() + "/lib"};
    fabric.StartOpenSm(options);
  }
};

TEST_F(OsmOpenSmTest, EventsAndExactPerfMgrCountersFromARealOpenSm) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an ASan-built plugin cannot load into the system opensm";
#endif
  IbsimFabric fabric(FatTreeNetfile(2, 2));
  FABRIC_START_IBSIM(fabric);
  TempDir dir;
  const std::string socket = dir.path() + "/osm-events.sock";
  DatagramReceiver daemon(socket);
  ASSERT_TRUE(daemon.bound());
  StartSm(fabric, socket);

  // Until the SM is up and PerfMgr has reported every port of both
  // switches once (bounded: each receive waits at most 10 s).
  std::set<osm::Event> seen;
  std::map<std::string, uint64_t> switch_guid;  // name -> GUID
  std::map<std::string, osm::NodeType> type_of;
  uint64_t dropped = 0;
  for (int i = 0; i < 2000; ++i) {
    auto m = daemon.Receive();
    ASSERT_TRUE(m.has_value())
        << "no datagram within 10 s; opensm log in " << fabric.dir();
    dropped += m->dropped;
    seen.insert(m->event);
    if (auto* pe = std::get_if<osm::PortErrors>(&m->body)) {
      const std::string name(pe->id.NameView());
      type_of[name] = pe->id.node_type;
      if (pe->id.node_type == osm::NodeType::kSwitch) {
        switch_guid[name] = pe->id.node_guid;
      }
    }
    if (seen.count(osm::Event::kSubnetUp) &&
        seen.count(osm::Event::kPortDataCounters) && type_of.size() >= 4) {
      break;
    }
  }
  EXPECT_TRUE(seen.count(osm::Event::kHeavySweepStart));
  EXPECT_TRUE(seen.count(osm::Event::kHeavySweepDone));
  EXPECT_TRUE(seen.count(osm::Event::kUcastRoutingDone));
  EXPECT_TRUE(seen.count(osm::Event::kSubnetUp));
  EXPECT_TRUE(seen.count(osm::Event::kPortErrors));
  EXPECT_TRUE(seen.count(osm::Event::kPortDataCounters));
  EXPECT_EQ(type_of["leaf0"], osm::NodeType::kSwitch);
  EXPECT_EQ(type_of["spine0"], osm::NodeType::kSwitch);
  EXPECT_EQ(type_of["hca0"], osm::NodeType::kChannelAdapter);
  EXPECT_EQ(type_of["hca1"], osm::NodeType::kChannelAdapter);
  EXPECT_EQ(dropped, 0u);
  ASSERT_TRUE(switch_guid.count("leaf0"));
  const uint64_t leaf0 = switch_guid["leaf0"];

  // PerformanceSet writes ibsim's PortCounters; PerfMgr's next readings
  // carry the difference as deltas, which must add up to exactly the value.
  const std::string out = fabric.Console(
      "PerformanceSet \"leaf0\"[1] PortCounters.SymbolErrorCounter=42");
  ASSERT_NE(out.find("has been set"), std::string::npos) << out;
  uint64_t symbol_errors = 0;
  int readings_after = 0;
  for (int i = 0; i < 5000 && readings_after < 2; ++i) {
    auto m = daemon.Receive();
    ASSERT_TRUE(m.has_value());
    dropped += m->dropped;
    auto* pe = std::get_if<osm::PortErrors>(&m->body);
    if (pe == nullptr || pe->id.node_guid != leaf0 || pe->id.port != 1) {
      continue;
    }
    symbol_errors += pe->symbol_error;
    // Two more readings after the one that carried the value: nothing
    // is counted twice.
    if (symbol_errors > 0) ++readings_after;
  }
  EXPECT_EQ(readings_after, 2);
  EXPECT_EQ(symbol_errors, 42u);
  EXPECT_EQ(dropped, 0u);

  // Nobody listening: OpenSM keeps sweeping (its ActCount moves).
  daemon.Close();
  EXPECT_TRUE(SweepsWhileNobodyListens(fabric))
      << "OpenSM stopped sweeping without a reader";

  // A new receiver at the same path gets events again, with the count of
  // those dropped meanwhile.
  daemon.Bind();
  ASSERT_TRUE(daemon.bound());
  uint64_t dropped_meanwhile = 0;
  bool perfmgr_again = false;
  for (int i = 0; i < 2000 && !perfmgr_again; ++i) {
    auto m = daemon.Receive();
    ASSERT_TRUE(m.has_value()) << "no events after re-binding";
    dropped_meanwhile += m->dropped;
    perfmgr_again = m->event == osm::Event::kPortErrors;
  }
  EXPECT_TRUE(perfmgr_again);
  EXPECT_GT(dropped_meanwhile, 0u);
}

// A fabricmon daemon with only the opensm collector enabled, in its own
// session (killed with it when the test ends).
class Daemon {
 public:
  Daemon(const std::string& dir, const std::string& socket)
      : port_(FreeLoopbackPort()) {
    const std::string config = dir + "/fabricmon.yaml";
    std::filesystem::create_directories(dir + "/sys");
    std::ofstream(config) << "listen_address: \"127.0.0.1:" << port_ << "\"\n"
                          << "sysfs_root: " << dir << "/sys\n"
                          << "collectors:\n  opensm:\n    enabled: true\n"
                          << "    socket: " << socket << "\n";
    session_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + config, dir + "/daemon.log");
  }
  void Kill() {
    session_->Signal(SIGKILL);
    session_->Wait(std::chrono::seconds(20));
  }
  // Scrapes until `done(samples)` holds; the last samples either way
  // (bounded: 60 s).
  template <typename F>
  std::map<std::string, double> ScrapeUntil(F done) {
    std::map<std::string, double> samples;
    for (int i = 0; i < 240; ++i) {
      if (auto body = HttpGetOk(port_, "/metrics")) {
        samples = ParseSamples(*body);
        if (done(samples)) break;
      }
      std::this_thread::sleep_for(250ms);
    }
    return samples;
  }

 private:
  int port_;
  std::unique_ptr<sim::Session> session_;
};

double Value(const std::map<std::string, double>& samples,
             const std::string& key) {
  const auto it = samples.find(key);
  return it == samples.end() ? -1 : it->second;
}

// The value of the first series whose "name{labels" starts with `prefix`.
double ValueWithPrefix(const std::map<std::string, double>& samples,
                       const std::string& prefix) {
  const auto it = samples.lower_bound(prefix);
  if (it == samples.end() || it->first.rfind(prefix, 0) != 0) return -1;
  return it->second;
}

std::string Events(const std::string& event) {
  return "fabric_opensm_events_total{event=\"" + event + "\"}";
}

TEST_F(OsmOpenSmTest, TheDaemonExportsOpenSmEventsAndSurvivesARestart) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an ASan-built plugin cannot load into the system opensm";
#endif
  IbsimFabric fabric(FatTreeNetfile(2, 2));
  FABRIC_START_IBSIM(fabric);
  TempDir dir;
  const std::string socket = dir.path() + "/osm-events.sock";
  auto daemon = std::make_unique<Daemon>(dir.path(), socket);
  // The daemon binds before OpenSM starts, so no event is lost.
  daemon->ScrapeUntil(
      [&](const auto& s) { return Value(s, Events("subnet_up")) == 0; });
  StartSm(fabric, socket);

  const std::string symbol_errors =
      "fabric_switch_port_errors_total{error=\"symbol_error\",port=\"1\","
      "switch=\"leaf0\",switch_guid=\"0x";
  auto s = daemon->ScrapeUntil([&](const auto& s) {
    return Value(s, Events("subnet_up")) >= 1 &&
           Value(s, Events("heavy_sweep_done")) >= 1 &&
           Value(s, Events("port_data_counters")) >= 1 &&
           ValueWithPrefix(s, symbol_errors) >= 0;
  });
  EXPECT_GE(Value(s, Events("heavy_sweep_start")), 1);
  EXPECT_GE(Value(s, Events("heavy_sweep_done")), 1);
  EXPECT_GE(Value(s, Events("subnet_up")), 1);
  EXPECT_GE(Value(s, Events("port_errors")), 1);
  EXPECT_GT(Value(s, "fabric_opensm_heavy_sweep_duration_seconds"), 0);
  ASSERT_EQ(ValueWithPrefix(s, symbol_errors), 0);
  EXPECT_EQ(Value(s, "fabric_opensm_events_dropped_total"), 0);
  // Host ports are not exported as switch ports.
  for (const auto& [series, value] : s) {
    EXPECT_EQ(series.find("switch=\"hca"), std::string::npos) << series;
  }

  const std::string out = fabric.Console(
      "PerformanceSet \"leaf0\"[1] PortCounters.SymbolErrorCounter=42");
  ASSERT_NE(out.find("has been set"), std::string::npos) << out;
  s = daemon->ScrapeUntil(
      [&](const auto& s) { return ValueWithPrefix(s, symbol_errors) >= 42; });
  EXPECT_EQ(ValueWithPrefix(s, symbol_errors), 42);
  // Several PerfMgr sweeps later it is still exactly 42.
  const double errors_events = Value(s, Events("port_errors"));
  s = daemon->ScrapeUntil([&](const auto& s) {
    return Value(s, Events("port_errors")) >= errors_events + 20;
  });
  EXPECT_EQ(ValueWithPrefix(s, symbol_errors), 42);

  // The daemon dies (leaving its socket file): OpenSM keeps sweeping.
  daemon->Kill();
  EXPECT_TRUE(SweepsWhileNobodyListens(fabric))
      << "OpenSM stopped sweeping without a daemon";

  // A restarted daemon gets events again, with the count of those lost.
  daemon = std::make_unique<Daemon>(dir.path(), socket);
  s = daemon->ScrapeUntil(
      [&](const auto& s) { return Value(s, Events("port_errors")) >= 1; });
  EXPECT_GE(Value(s, Events("port_errors")), 1);
  EXPECT_GT(Value(s, "fabric_opensm_events_dropped_total"), 0);
  EXPECT_EQ(Value(s, "fabric_collector_success{collector=\"opensm\"}"), 1);
}

}  // namespace
}  // namespace fabric::testing
