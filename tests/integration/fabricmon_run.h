// Helpers for the golden, parity and metrics-doc tests: run a command and
// capture its stdout, run `fabricmon --once` on a fixture tree, parse
// exposition text into (series -> value), and scrape a running daemon until
// its samples say what a test waits for.
// Thread-safety: none needed (test-only, single thread).
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/exposition.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"

namespace fabric::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs `command` through /bin/sh and captures stdout (stderr is left alone
// unless the command redirects it).
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    result.out.append(buf, n);
  }
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The fixture trees the golden/parity/doc tests run on (relative to
// tests/fixtures/).
inline const std::vector<std::string>& FixtureTrees() {
  static const std::vector<std::string> trees = {
      "real/sysfs", "real/sysfs-node_exporter", "real/sysfs-gpud-h100",
      "synthetic/sysfs-roce"};
  return trees;
}

// `fabricmon --once` on a fixture tree with built-in defaults (an empty
// config file, so a host /etc/fabricmon/fabricmon.yaml cannot leak in).
inline CommandResult RunOnce(const std::string& tree) {
  return RunCommand(Binary("fabricmon") + " --once --config /dev/null" +
                    " --sysfs.root " + Fixture(tree) + " 2>/dev/null");
}

// Parses exposition text into "name{labels}" -> value (labels as printed,
// which for fabricmon and node_exporter is sorted by name). A series that
// appears twice is a test failure (tests/support/exposition.h), so every
// exposition a test reads through here is checked for duplicates.
inline std::map<std::string, double> ParseSamples(const std::string& text) {
  ExpectUniqueSeries(text, "exposition");
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

// Scrapes 127.0.0.1:`port`/metrics every 200 ms until `done` holds for its
// samples; nullopt after `bound` (a bound against a broken daemon hanging
// the test, not a timing assertion).
inline std::optional<std::map<std::string, double>> ScrapeUntil(
    int port,
    const std::function<bool(const std::map<std::string, double>&)>& done,
    std::chrono::seconds bound) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < end) {
    if (auto body = HttpGetOk(port, "/metrics")) {
      auto samples = ParseSamples(*body);
      if (done(samples)) return samples;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return std::nullopt;
}

// Metric family names with at least one sample in `text`.
inline std::set<std::string> MetricNames(const std::string& text) {
  std::set<std::string> names;
  for (const auto& [series, value] : ParseSamples(text)) {
    names.insert(series.substr(0, series.find('{')));
  }
  return names;
}

// A config with only the sm and fabric collectors, at the short intervals
// the ibsim tests use, serving on 127.0.0.1:`port`.
inline std::string SmFabricConfig(int port,
                                  const std::string& discovery_interval) {
  return "listen_address: \"127.0.0.1:" + std::to_string(port) +
         "\"\n"
         "collectors:\n"
         "  ib_port: {enabled: false}\n"
         "  hw_counters: {enabled: false}\n"
         "  congestion: {enabled: false}\n"
         "  roce: {enabled: false}\n"
         "  nic_identity: {enabled: false}\n"
         "  sm: {interval: 1s, timeout: 5s, mad_timeout: 200ms}\n"
         "  fabric: {enabled: true, interval: 1s, timeout: 5s, "
         "mad_timeout: 200ms, discovery_interval: " +
         discovery_interval + "}\n";
}

}  // namespace fabric::testing
