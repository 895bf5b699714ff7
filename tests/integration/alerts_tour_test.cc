// The demo tour (scenarios/demo-tour.yaml) played as ONE run, as a user
// plays it with scripts/demo.sh: one fabricmon-sim, one fabricmon per
// simulated host (4), a real Prometheus with the shipped rules and a real
// Alertmanager with the shipped route.yml and inhibit_rules.yml, whose
// notifications go to a webhook receiver in this test. Each fault of the
// tour must give exactly one notification group (issue 39: one page per
// fault), and the steady lead-in none.
//
// What is counted: a fault's window runs from its start to the next
// fault's start (the last one to the end of the run); every alert a
// notification carries is put in the window its `startsAt` falls in, and
// the window's count is the number of distinct groups (Alertmanager's
// groupKey) with an alert there. So an alert of one fault that starts late,
// during the next fault, counts as a group of that next window: the
// windows are long enough for every alert of a fault to start in its own.
//
// Timing: the tour as shipped lasts ~13 min. The test plays the same
// scenarios in the same order (checked against the tour file, whose
// traffic and fabric sections it keeps) with shorter gaps and durations,
// each long enough for its alerts to fire with demo.sh's shortened `for:`
// (see its header; group_by, the routes and the inhibit rules are the
// shipped ones, group_wait 5 s and group_interval 30 s). About 9 minutes
// of wall time. docs/alerting.md ("The tour, end to end") says what it
// counts.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/fake_http_server.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;
using Clock = std::chrono::system_clock;

// One fault of the tour, compressed: `window` seconds from its start to the
// next fault's, of which it lasts `duration`; `groups` notification groups
// expected from it.
struct Fault {
  const char* scenario;
  int window;
  int duration;
  int groups;
};

// The steady lead-in: the daemons and Prometheus are up and scraping
// before the first fault.
constexpr int kLeadIn = 25;
// After the last window: Alertmanager's group_wait (5 s) and one
// evaluation to spare.
constexpr int kTail = 15;

// In the order of scenarios/demo-tour.yaml. Every fault is one group:
// none of the tour's scenarios holds two faults (each breaks one cable,
// one RoCE port, one SM or one probe path, or makes one congestion tree;
// everything else it raises is a symptom the inhibit rules or the route
// fold into that one page).
constexpr Fault kTour[] = {
    {"congestion-hotspot", 40, 35, 1},  // one tree: root, victims inhibited
    {"symbol-errors", 35, 30, 1},
    {"link-flap", 35, 30, 1},      // both ends of the cable, one group
    {"link-degraded", 35, 30, 1},  // the slow link's root and victims too
    {"pfc-storm", 35, 30, 1},      // the paused hosts are its victims
    {"counter-saturation", 35, 30, 1},
    {"device-removed", 35, 30, 1},  // the switch end of its cable too
    {"sm-hung", 50, 45, 1},         // stall_after 15 s + `for:` 20 s
    {"sm-failover", 45, 40, 1},     // SmNoMaster/SmFailover: one per job
    {"probe-loss", 50, 45, 1},
    {"slow-receiver", 40, 35, 1},
    // The uplink's tree (its rails' ring traffic is the cross-rail flows;
    // the sending hosts are its victims though a slow-receiver root was
    // named at one's port minutes before).
    {"unbalanced-links", 45, 40, 1},
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// RFC 3339 time as Alertmanager sends it ("2026-12-06T10:53:51.12Z"), in
// seconds since the epoch; nullopt when unreadable.
std::optional<double> ParseTime(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  double frac = 0;
  if (in.peek() == '.') {
    std::string digits;
    in.get();
    while (std::isdigit(in.peek())) digits += static_cast<char>(in.get());
    if (!digits.empty()) frac = std::stod("0." + digits);
  }
  if (in.peek() != 'Z') return std::nullopt;  // Alertmanager sends UTC
  return static_cast<double>(timegm(&tm)) + frac;
}

// An alert as notified: when it started, and what and where it is.
struct Notified {
  double starts_at;
  std::string what;
};

// The compressed tour: the tour file's traffic and fabric sections, its
// scenarios (which must be kTour's, in order) at kTour's times.
std::string CompressedTour(std::string* error) {
  const YAML::Node tour =
      YAML::LoadFile(SourceDir() + "/scenarios/demo-tour.yaml");
  std::vector<std::string> faults;
  for (const auto& e : tour["events"]) {
    if (e["start"]) faults.push_back(e["scenario"].as<std::string>());
  }
  std::vector<std::string> want;
  for (const auto& f : kTour) want.push_back(f.scenario);
  if (faults != want) {
    *error = "scenarios/demo-tour.yaml's faults are not the test's kTour";
    return "";
  }
  YAML::Node out;
  out["traffic"] = tour["traffic"];
  out["fabric"] = tour["fabric"];
  YAML::Node steady;
  steady["scenario"] = "steady";
  out["events"].push_back(steady);
  int start = kLeadIn;
  for (const auto& f : kTour) {
    YAML::Node e;
    e["scenario"] = f.scenario;
    e["start"] = std::to_string(start) + "s";
    e["duration"] = std::to_string(f.duration) + "s";
    out["events"].push_back(e);
    start += f.window;
  }
  YAML::Emitter emit;
  emit << out;
  return emit.c_str();
}

TEST(AlertsTour, EveryFaultIsOneNotificationGroup) {
  for (const char* bin :
       {"/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager"}) {
    if (!fs::exists(bin)) MISSING_DEPENDENCY(std::string(bin) + " missing");
  }
  const std::string base = fs::temp_directory_path() /
                           ("alerts_tour_test." + std::to_string(getpid()));
  const std::string log = base + ".log", ports = base + ".ports",
                    timeline = base + ".yaml";
  std::string error;
  const std::string tour = CompressedTour(&error);
  ASSERT_TRUE(error.empty()) << error;
  std::ofstream(timeline) << tour;

  std::mutex mu;
  std::map<std::string, std::vector<Notified>> groups;  // groupKey -> alerts
  FakeHttpServer webhook([&](const std::string&, const std::string& body)
                             -> std::optional<FakeHttpAnswer> {
    pt::ptree tree;
    std::istringstream in(body);
    try {
      pt::read_json(in, tree);
    } catch (const pt::ptree_error&) {
      return FakeHttpAnswer{400};
    }
    std::lock_guard<std::mutex> lock(mu);
    auto& alerts = groups[tree.get<std::string>("groupKey", "")];
    for (const auto& [_, a] : tree.get_child("alerts", pt::ptree())) {
      std::string what = a.get<std::string>("labels.alertname", "?");
      for (const char* l : {"host", "device", "port", "switch_guid", "sm_guid",
                            "peer", "cable"}) {
        if (auto v = a.get_optional<std::string>(std::string("labels.") + l)) {
          what += std::string(" ") + l + "=" + *v;
        }
      }
      const auto at = ParseTime(a.get<std::string>("startsAt", ""));
      alerts.push_back({at.value_or(-1), what});
    }
    return FakeHttpAnswer{200};
  });
  ASSERT_NE(webhook.port(), 0);

  int run = kLeadIn + kTail;
  for (const auto& f : kTour) run += f.window;
  const double t0 =
      std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  {
    sim::Session demo(SourceDir() + "/scripts/demo.sh --build " + BinaryDir() +
                          " --quiet --timeline " + timeline + " --duration " +
                          std::to_string(run) + " --webhook http://127.0.0.1:" +
                          std::to_string(webhook.port()) + "/" +
                          sim::DemoPortArgs(1, ports),
                      log);
    const int status = demo.Wait(std::chrono::seconds(run + 120));
    ASSERT_NE(status, -1) << "demo.sh did not end after --duration";
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Slurp(log);
  }

  // Window w: [t0 + start of fault w, t0 + start of fault w + 1); window
  // 0 is the steady lead-in.
  std::vector<double> starts = {t0};
  std::vector<std::string> names = {"steady (before the first fault)"};
  std::vector<int> want = {0};
  double at = t0 + kLeadIn;
  for (const auto& f : kTour) {
    starts.push_back(at);
    names.push_back(f.scenario);
    want.push_back(f.groups);
    at += f.window;
  }
  auto window_of = [&](double t) {
    int w = -1;
    for (size_t i = 0; i < starts.size(); ++i) {
      if (t >= starts[i]) w = static_cast<int>(i);
    }
    return w;
  };
  std::vector<std::map<std::string, std::set<std::string>>> in_window(
      starts.size());
  std::string listing;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [key, alerts] : groups) {
      for (const auto& a : alerts) {
        const int w = window_of(a.starts_at);
        ASSERT_GE(w, 0) << "alert started before the run: " << a.what;
        char when[32];
        std::snprintf(when, sizeof(when), "+%.0fs ", a.starts_at - t0);
        in_window[w][key].insert(when + a.what);
      }
    }
  }
  for (size_t w = 0; w < starts.size(); ++w) {
    listing += names[w] + " (from +" +
               std::to_string(static_cast<int>(starts[w] - t0)) +
               "s): " + std::to_string(in_window[w].size()) + " group(s)\n";
    for (const auto& [key, alerts] : in_window[w]) {
      listing += "  " + key + "\n";
      for (const auto& a : alerts) listing += "    " + a + "\n";
    }
  }
  for (size_t w = 0; w < starts.size(); ++w) {
    EXPECT_EQ(in_window[w].size(), static_cast<size_t>(want[w]))
        << names[w] << "\n"
        << listing;
  }
  // The listing is the record of what the tour pages (docs/alerting.md).
  std::printf("%s", listing.c_str());
  std::remove(timeline.c_str());
  std::remove(ports.c_str());
  if (!::testing::Test::HasFailure()) std::remove(log.c_str());
}

}  // namespace
}  // namespace fabric::testing
