// Peer parity: on the same sysfs tree, node_exporter's infiniband collector
// (the Debian prometheus-node-exporter, started by this test on 127.0.0.1)
// and `fabricmon --once` must agree on every value both export: bytes,
// packets, each error counter, transmit wait, state, physical state, rate,
// and the device inventory labels. Also checks fabricmon against
// node_exporter's own recorded e2e output for real/sysfs-node_exporter.
//
// Mapping rule for legacy counters_ext/: fabricmon exports the 64-bit
// counters_ext/ value in place of the counters/ one (docs/metrics.md), so when
// node_exporter has node_infiniband_legacy_X for a port, fabricmon's metric
// must equal legacy_X and node_exporter's 32-bit port_X is not compared.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/node_exporter_mapping.h"
#include "tests/support/http.h"

namespace fabric {
namespace {

using testing::Mapping;
using testing::Target;

// node_exporter legacy_X -> the port metric it supersedes.
const std::map<std::string, std::string>& LegacyMapping() {
  static const std::map<std::string, std::string> m = {
      {"legacy_data_received_bytes_total", "port_data_received_bytes_total"},
      {"legacy_data_transmitted_bytes_total",
       "port_data_transmitted_bytes_total"},
      {"legacy_packets_received_total", "port_packets_received_total"},
      {"legacy_packets_transmitted_total", "port_packets_transmitted_total"},
      {"legacy_unicast_packets_received_total",
       "unicast_packets_received_total"},
      {"legacy_unicast_packets_transmitted_total",
       "unicast_packets_transmitted_total"},
      {"legacy_multicast_packets_received_total",
       "multicast_packets_received_total"},
      {"legacy_multicast_packets_transmitted_total",
       "multicast_packets_transmitted_total"},
  };
  return m;
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

// Parses exposition sample lines, honouring quoted label values.
std::vector<Sample> Parse(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i != std::string::npos && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        i = eq + 2;  // skip ="
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) ++i;
          value += line[i++];
        }
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;  // '}'
    }
    s.value = std::stod(line.substr(line.find_first_not_of(' ', i)));
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> FindValue(
    const std::vector<Sample>& samples, const std::string& name,
    const std::map<std::string, std::string>& want) {
  std::optional<double> found;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.labels.find(k);
      match &= it != s.labels.end() && it->second == v;
    }
    if (match) {
      if (found) return std::nullopt;  // ambiguous
      found = s.value;
    }
  }
  return found;
}

// Compares every node_infiniband_* sample with fabricmon's. Returns the
// number of values compared.
int Compare(const std::vector<Sample>& node, const std::vector<Sample>& fabric,
            const std::string& what) {
  const std::string prefix = "node_infiniband_";
  int compared = 0;
  for (const auto& s : node) {
    if (s.name.rfind(prefix, 0) != 0) continue;
    std::string short_name = s.name.substr(prefix.size());
    SCOPED_TRACE(
        what + ": " + s.name + " device=" + s.labels.at("device") +
        (s.labels.count("port") ? " port=" + s.labels.at("port") : ""));
    if (short_name == "info") {
      const std::map<std::string, std::string> dev = {
          {"device", s.labels.at("device")}};
      bool seen = false;
      for (const auto& f : fabric) {
        if (f.name != "fabric_device_info" ||
            f.labels.at("device") != dev.at("device")) {
          continue;
        }
        seen = true;
        EXPECT_EQ(f.labels.at("board_id"), s.labels.at("board_id"));
        EXPECT_EQ(f.labels.at("fw_ver"), s.labels.at("firmware_version"));
        EXPECT_EQ(f.labels.at("hca_type"), s.labels.at("hca_type"));
      }
      EXPECT_TRUE(seen);
      ++compared;
      continue;
    }
    const std::map<std::string, std::string> port = {
        {"device", s.labels.at("device")}, {"port", s.labels.at("port")}};
    std::string base = short_name;
    if (auto legacy = LegacyMapping().find(short_name);
        legacy != LegacyMapping().end()) {
      base = legacy->second;
    } else {
      // A port metric superseded by a legacy one on this port is skipped.
      bool superseded = false;
      for (const auto& [legacy_name, port_name] : LegacyMapping()) {
        if (port_name == short_name &&
            FindValue(node, prefix + legacy_name, port).has_value()) {
          superseded = true;
        }
      }
      if (superseded) continue;
    }
    auto target = Mapping().find(base);
    if (target == Mapping().end()) {
      ADD_FAILURE() << "unmapped node_exporter metric";
      continue;
    }
    auto want = port;
    if (!target->second.error.empty()) want["error"] = target->second.error;
    auto got = FindValue(fabric, target->second.metric, want);
    if (!got) {
      ADD_FAILURE() << "fabricmon lacks " << target->second.metric;
      continue;
    }
    EXPECT_DOUBLE_EQ(*got, s.value);
    ++compared;
  }
  return compared;
}

// node_exporter on one tree; killed on destruction.
class NodeExporter {
 public:
  explicit NodeExporter(const std::string& root)
      : port_(testing::FreeLoopbackPort()) {
    const std::string sysfs = "--path.sysfs=" + root;
    const std::string listen =
        "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    pid_ = ::fork();
    if (pid_ == 0) {
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl("/usr/bin/prometheus-node-exporter", "prometheus-node-exporter",
              sysfs.c_str(), "--collector.disable-defaults",
              "--collector.infiniband", listen.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~NodeExporter() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Scrapes once it is up; bounded wait (10 s) so a broken binary fails
  // the test instead of hanging it.
  std::optional<std::string> ScrapeWhenReady() {
    for (int i = 0; i < 200; ++i) {
      if (auto body = testing::HttpGetOk(port_, "/metrics")) return body;
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return std::nullopt;  // exited
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

class ParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ParityTest, AgreesWithNodeExporter) {
  const std::string tree = GetParam();
  // FreeLoopbackPort() can race with another process taking the port;
  // node_exporter then exits at once, so retry on a fresh port a few times.
  std::optional<std::string> scraped;
  for (int attempt = 0; attempt < 3 && !scraped; ++attempt) {
    NodeExporter node(testing::Fixture(tree));
    scraped = node.ScrapeWhenReady();
  }
  ASSERT_TRUE(scraped.has_value()) << "node_exporter did not serve /metrics";
  auto node_samples = Parse(*scraped);
  ASSERT_EQ(FindValue(node_samples, "node_scrape_collector_success",
                      {{"collector", "infiniband"}}),
            1.0);
  auto run = testing::RunOnce(tree);
  ASSERT_EQ(run.exit_code, 0);
  int compared = Compare(node_samples, Parse(run.out), tree);
  EXPECT_GT(compared, 20) << "too few values compared on " << tree;
}

INSTANTIATE_TEST_SUITE_P(Trees, ParityTest,
                         ::testing::ValuesIn(testing::FixtureTrees()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

TEST(ParityReferenceTest, AgreesWithNodeExporterE2eOutput) {
  std::ifstream in(testing::Fixture(
      "real/reference/node_exporter-e2e-output-infiniband.prom"));
  std::stringstream ref;
  ref << in.rdbuf();
  auto run = testing::RunOnce("real/sysfs-node_exporter");
  ASSERT_EQ(run.exit_code, 0);
  int compared = Compare(Parse(ref.str()), Parse(run.out), "e2e reference");
  // 51 samples in the reference; 14 port_* ones are superseded by legacy_*.
  EXPECT_EQ(compared, 37);
}

}  // namespace
}  // namespace fabric
