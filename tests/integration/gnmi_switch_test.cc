// The gnmi collector end to end against a gNMI target that is not ours
// (tests/gnmi/server.js: Node.js, @grpc/grpc-js, loading proto/gnmi/*.proto
// itself): the real fabricmon binary subscribes, a real Prometheus scrapes
// it, and the values Prometheus holds equal what the test set on the
// target. Bad input on the same daemon: a stream dropped mid-update, unknown
// paths and malformed values, a switch that accepts the stream and says
// nothing (deadline), one that is not there, wrong credentials; and over
// TLS, a server whose certificate the CA did not sign and one without TLS.
// Each costs its own switch's series only. Everything on 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/gnmi_target.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;

const std::string kIf = "/interfaces/interface[name=swp1]";
const std::string kQueue =
    "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
    "queue[name=3]/state/";
const std::string kPrio =
    "/qos/interfaces/interface[interface-id=swp1]/switch-priority[priority=3]/"
    "state/";
const std::string kLldp =
    "/lldp/interfaces/interface[name=swp1]/neighbors/neighbor[id=1]/state/";

struct Leaf {
  std::string path, kind, value;
  std::string query;  // PromQL whose one sample must equal `expected`
  double expected;
};

// The documented paths (docs/gnmi.md) and the series they become.
std::vector<Leaf> Leaves() {
  const std::string sw = "{switch=\"leaf1\",port=\"swp1\"";
  return {
      {kIf + "/state/counters/in-octets", "uint", "123456789012",
       "fabric_switch_port_receive_bytes_total" + sw + "}", 123456789012},
      {kIf + "/state/counters/out-octets", "uint", "987654321098",
       "fabric_switch_port_transmit_bytes_total" + sw + "}", 987654321098},
      {kIf + "/state/counters/in-pkts", "uint", "1000001",
       "fabric_switch_port_receive_packets_total" + sw + "}", 1000001},
      {kIf + "/state/counters/out-pkts", "uint", "2000002",
       "fabric_switch_port_transmit_packets_total" + sw + "}", 2000002},
      {kIf + "/state/counters/in-errors", "uint", "3",
       "fabric_switch_port_errors_total" + sw + ",error=\"port_rcv_errors\"}",
       3},
      {kIf + "/state/counters/out-discards", "uint", "4",
       "fabric_switch_port_errors_total" + sw +
           ",error=\"port_xmit_discards\"}",
       4},
      {kIf + "/state/oper-status", "string", "UP",
       "fabric_switch_port_state" + sw + "}", 4},
      {"/interfaces/interface[name=swp2]/state/oper-status", "string", "DOWN",
       "fabric_switch_port_state{switch=\"leaf1\",port=\"swp2\"}", 1},
      {kIf + "/ethernet/state/port-speed", "string", "SPEED_400GB",
       "fabric_switch_port_rate_bytes_per_second" + sw + "}", 50e9},
      {kQueue + "ecn-marked-pkts", "uint", "5555",
       "fabric_switch_port_queue_ecn_marked_packets_total" + sw +
           ",queue=\"3\"}",
       5555},
      {kQueue + "no-buffer-uc-dropped-pkts", "uint", "66",
       "fabric_switch_port_queue_no_buffer_dropped_packets_total" + sw +
           ",queue=\"3\"}",
       66},
      {kQueue + "max-queue-len", "uint", "777000",
       "fabric_switch_port_queue_watermark_bytes" + sw + ",queue=\"3\"}",
       777000},
      {kPrio + "counters/in-pause-pkts", "uint", "88",
       "fabric_switch_port_pfc_pause_frames_total" + sw +
           ",priority=\"3\",direction=\"rx\"}",
       88},
      {kPrio + "counters/out-pause-pkts", "uint", "99",
       "fabric_switch_port_pfc_pause_frames_total" + sw +
           ",priority=\"3\",direction=\"tx\"}",
       99},
      {kPrio + "in-pause-duration", "uint", "1500000",
       "fabric_switch_port_pfc_pause_duration_seconds_total" + sw +
           ",priority=\"3\",direction=\"rx\"}",
       1.5},
      {kLldp + "system-name", "string", "gpu-node-07",
       "fabric_switch_port_link_info" + sw +
           ",remote_name=\"gpu-node-07\",remote_port_description=\"eth2\"}",
       1},
      {kLldp + "port-description", "string", "eth2", "", 0},
  };
}

// The one sample of `expr` equals `want` (waits for Prometheus to have it).
bool PromEquals(int port, const std::string& expr, double want,
                std::string* got) {
  const bool ok = WaitFor(
      [&] {
        auto r = prom::Query(port, expr);
        if (!r) {
          *got = "<no answer>";
          return false;
        }
        *got = r->size() == 1 ? r->front().text
                              : std::to_string(r->size()) + " samples";
        return r->size() == 1 && r->front().value == want;
      },
      60s, 250ms);
  return ok;
}

class GnmiSwitchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = GnmiStackMissing(); !why.empty())
      MISSING_DEPENDENCY(why);
    ASSERT_FALSE(dir_.path().empty());
    std::filesystem::create_directory(dir_.path() + "/sys");
  }

  std::unique_ptr<GnmiTarget> Target(const std::string& name,
                                     std::vector<std::string> args = {}) {
    auto t =
        std::make_unique<GnmiTarget>(dir_.path() + "/" + name + ".log", args);
    EXPECT_GT(t->port(), 0) << name << ": " << t->log();
    return t;
  }

  void StartDaemon(const std::string& gnmi_yaml) {
    daemon_port_ = FreeLoopbackPort();
    const std::string config = dir_.path() + "/fabricmon.yaml";
    std::ofstream(config) << "collectors:\n  gnmi:\n    enabled: true\n"
                          << "    interval: 500ms\n"
                          << "    sample_interval: 200ms\n"
                          << "    deadline: 2s\n    max_backoff: 2s\n"
                          << gnmi_yaml;
    daemon_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + config + " --sysfs.root " +
            dir_.path() + "/sys --web.listen-address 127.0.0.1:" +
            std::to_string(daemon_port_),
        dir_.path() + "/fabricmon.log");
  }

  void StartPrometheus() {
    const std::string dir = dir_.path();
    std::ofstream(dir + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n"
        << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << daemon_port_ << "']\n";
    prom_port_ = FreeLoopbackPort();
    prometheus_ = sim::StartPrometheus(dir, prom_port_);
  }

  std::string DaemonLog() { return ReadFile(dir_.path() + "/fabricmon.log"); }

  void Expect(const std::string& expr, double want) {
    std::string got;
    EXPECT_TRUE(PromEquals(prom_port_, expr, want, &got))
        << expr << " = " << got << ", want " << want << "\ndaemon log:\n"
        << DaemonLog();
  }

  void TearDown() override {
    prometheus_.reset();
    daemon_.reset();
  }

  TempDir dir_{"gnmi-switch-test"};
  int daemon_port_ = 0, prom_port_ = 0;
  std::unique_ptr<sim::Session> daemon_, prometheus_;
};

TEST_F(GnmiSwitchTest, ValuesReachPrometheusAndBadSwitchesCostOnlyTheirOwn) {
  const std::vector<std::string> auth = {"--user", "fabricmon", "--password",
                                         "s3cret"};
  auto leaf1 = Target("leaf1", auth);
  auto leaf2 = Target("leaf2", auth);
  auto silent = Target("silent", auth);
  auto badauth = Target("badauth", {"--user", "fabricmon", "--password", "x"});
  // SONiC's COUNTERS_DB table (paths: sonic), JSON as sonic-gnmi sends it.
  auto sonic = Target("sonic", auth);
  ASSERT_TRUE(sonic->Set("/COUNTERS/Ethernet0", "json",
                         R"({"SAI_PORT_STAT_IF_IN_OCTETS":"4242",)"
                         R"("SAI_PORT_STAT_PFC_3_TX_PKTS":"17"})"));
  ASSERT_TRUE(silent->Command("mode silent"));
  for (const Leaf& l : Leaves())
    ASSERT_TRUE(leaf1->Set(l.path, l.kind, l.value)) << leaf1->log();
  // leaf2: one good leaf among unknown paths and malformed values.
  ASSERT_TRUE(leaf2->Set(kIf + "/state/counters/in-octets", "uint", "42"));
  ASSERT_TRUE(leaf2->Set(kIf + "/state/counters/out-pkts", "json", "\"77\""));
  ASSERT_TRUE(leaf2->Set("/system/state/hostname", "string", "leaf2"));
  ASSERT_TRUE(leaf2->Set(kIf + "/state/counters/bogus-leaf", "uint", "1"));
  ASSERT_TRUE(leaf2->Set(kIf + "/state/counters/out-octets", "string", "lots"));
  ASSERT_TRUE(leaf2->Set(kIf + "/state/counters/in-pkts", "double", "-5"));
  ASSERT_TRUE(leaf2->Set(
      "/interfaces/interface[name=*]/state/counters/in-octets", "uint", "9"));

  std::ofstream(dir_.path() + "/password") << "s3cret\n";
  const int nothing = FreeLoopbackPort();  // nobody listens there
  StartDaemon(
      "    insecure: true\n    username: fabricmon\n"
      "    password_file: " +
      dir_.path() +
      "/password\n"
      "    switches:\n"
      "      - {name: leaf1, address: " +
      leaf1->address() +
      "}\n"
      "      - {name: leaf2, address: " +
      leaf2->address() +
      "}\n"
      "      - {name: silent, address: " +
      silent->address() +
      "}\n"
      "      - {name: sonic, paths: sonic, address: " +
      sonic->address() +
      "}\n"
      "      - {name: badauth, address: " +
      badauth->address() +
      "}\n"
      "      - {name: dead, address: 127.0.0.1:" +
      std::to_string(nothing) + "}\n");
  StartPrometheus();

  for (const Leaf& l : Leaves()) {
    if (!l.query.empty()) Expect(l.query, l.expected);
  }
  Expect("fabric_gnmi_switch_up{switch=\"leaf1\"}", 1);
  Expect(
      "fabric_switch_port_receive_bytes_total{switch=\"sonic\","
      "port=\"Ethernet0\"}",
      4242);
  Expect(
      "fabric_switch_port_pfc_pause_frames_total{switch=\"sonic\","
      "port=\"Ethernet0\",priority=\"3\",direction=\"tx\"}",
      17);
  Expect("fabric_switch_port_receive_bytes_total{switch=\"leaf2\"}", 42);
  Expect("fabric_switch_port_transmit_packets_total{switch=\"leaf2\"}", 77);
  Expect(
      "count(fabric_switch_port_transmit_bytes_total{switch=\"leaf2\"}) "
      "or vector(0)",
      0);
  for (const char* reason : {"unknown_path", "bad_value"}) {
    Expect(std::string("fabric_gnmi_skipped_updates_total{switch=\"leaf2\","
                       "reason=\"") +
               reason + "\"} > bool 0",
           1);
  }
  // The dead, silent and refused switches: down, no port series.
  for (const char* sw : {"silent", "badauth", "dead"}) {
    Expect(std::string("fabric_gnmi_switch_up{switch=\"") + sw + "\"}", 0);
    Expect(std::string("count({__name__=~\"fabric_switch_port_.*\",switch=\"") +
               sw + "\"}) or vector(0)",
           0);
  }
  // The silent one is cut at its deadline and tried again.
  Expect("fabric_gnmi_connects_total{switch=\"silent\"} >= bool 2", 1);
  EXPECT_NE(DaemonLog().find("switch badauth"), std::string::npos);
  EXPECT_NE(DaemonLog().find("switch dead"), std::string::npos);

  // A value the test changes on the target reaches Prometheus.
  ASSERT_TRUE(
      leaf1->Set(kIf + "/state/counters/in-octets", "uint", "123456789999"));
  Expect(
      "fabric_switch_port_receive_bytes_total{switch=\"leaf1\","
      "port=\"swp1\"}",
      123456789999);

  // Dropped mid-update: leaf1 reconnects and serves on.
  const int before = leaf1->Subscribes();
  ASSERT_TRUE(leaf1->Command("mode drop"));
  ASSERT_TRUE(WaitFor([&] { return leaf1->Subscribes() > before; }, 60s))
      << DaemonLog();
  ASSERT_TRUE(
      leaf1->Set(kIf + "/state/counters/in-octets", "uint", "200000000000"));
  Expect(
      "fabric_switch_port_receive_bytes_total{switch=\"leaf1\","
      "port=\"swp1\"}",
      200000000000);
  Expect("fabric_gnmi_switch_up{switch=\"leaf1\"}", 1);
  Expect("fabric_gnmi_connects_total{switch=\"leaf1\"} >= bool 2", 1);
  EXPECT_NE(DaemonLog().find("dropped mid-update"), std::string::npos)
      << DaemonLog();
}

TEST_F(GnmiSwitchTest, TlsWithClientCertificateAndRefusals) {
  std::string error;
  ASSERT_TRUE(MakeTestCa(dir_.path(), &error)) << error;
  const std::string d = dir_.path() + "/";
  auto good = Target("tls", {"--cert", d + "server.crt", "--key",
                             d + "server.key", "--ca", d + "ca.crt"});
  auto stranger = Target(
      "stranger", {"--cert", d + "stranger.crt", "--key", d + "stranger.key"});
  auto plain = Target("plain");
  for (auto* t : {good.get(), stranger.get(), plain.get()})
    ASSERT_TRUE(t->Set(kIf + "/state/counters/in-octets", "uint", "31337"));
  StartDaemon("    ca_file: " + d + "ca.crt\n    cert_file: " + d +
              "client.crt\n    key_file: " + d +
              "client.key\n"
              "    switches:\n"
              "      - {name: tls, address: " +
              good->address() +
              "}\n"
              "      - {name: stranger, address: " +
              stranger->address() +
              "}\n      - {name: plain, address: " + plain->address() + "}\n");
  StartPrometheus();
  Expect("fabric_switch_port_receive_bytes_total{switch=\"tls\"}", 31337);
  Expect("fabric_gnmi_switch_up{switch=\"tls\"}", 1);
  for (const char* sw : {"stranger", "plain"}) {
    Expect(std::string("fabric_gnmi_switch_up{switch=\"") + sw + "\"}", 0);
    Expect(
        std::string("count(fabric_switch_port_receive_bytes_total{switch=\"") +
            sw + "\"}) or vector(0)",
        0);
  }
}

}  // namespace
}  // namespace fabric::testing
