// The gnmi collector's pure parts (collectors/gnmi_parse.h) on protobuf
// messages built here, and its settings through ParseConfig.
#include "collectors/gnmi_parse.h"

#include <gtest/gtest.h>

#include <cmath>

#include "collectors/gnmi_client.h"
#include "collectors/gnmi_switch.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "gnmi.pb.h"

namespace fabric::gnmi_switch {
namespace {

// "/a/b[k=v]/c" -> Path (no '/' or ']' inside keys in these tests).
gnmi::Path P(const std::string& text) {
  gnmi::Path path;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '/') ++i;
    std::size_t end = i;
    while (end < text.size() && text[end] != '/' && text[end] != '[') ++end;
    auto* e = path.add_elem();
    e->set_name(text.substr(i, end - i));
    while (end < text.size() && text[end] == '[') {
      std::size_t eq = text.find('=', end), close = text.find(']', end);
      (*e->mutable_key())[text.substr(end + 1, eq - end - 1)] =
          text.substr(eq + 1, close - eq - 1);
      end = close + 1;
    }
    i = end;
  }
  return path;
}

void AddUint(gnmi::Notification& n, const std::string& path, uint64_t v) {
  auto* u = n.add_update();
  *u->mutable_path() = P(path);
  u->mutable_val()->set_uint_val(v);
}

void AddString(gnmi::Notification& n, const std::string& path,
               const std::string& v) {
  auto* u = n.add_update();
  *u->mutable_path() = P(path);
  u->mutable_val()->set_string_val(v);
}

// The value of series `metric` of `port` whose extra labels are `labels`
// (name=value, in order: the path's key, then the leaf's fixed one).
const PortValue* Find(
    const ParsedNotification& p, const std::string& metric,
    const std::string& port,
    std::vector<std::pair<std::string, std::string>> labels = {}) {
  for (const auto& v : p.values) {
    std::vector<std::pair<std::string, std::string>> have;
    if (!v.key.key_label.empty())
      have.emplace_back(v.key.key_label, v.key.key_value);
    if (!v.key.fixed_label.empty())
      have.emplace_back(v.key.fixed_label, v.key.fixed_value);
    if (v.key.metric == metric && v.key.port == port && have == labels)
      return &v;
  }
  return nullptr;
}

TEST(GnmiParse, InterfaceCountersUseTheSweepNames) {
  gnmi::Notification n;
  *n.mutable_prefix() = P("/interfaces/interface[name=swp1]/state/counters");
  AddUint(n, "in-octets", 1000);
  AddUint(n, "out-octets", 2000);
  AddUint(n, "in-pkts", 10);
  AddUint(n, "out-pkts", 20);
  AddUint(n, "in-errors", 3);
  AddUint(n, "out-discards", 4);
  AddUint(n, "tx-wait", 77);
  auto p = ParseNotification(n);
  EXPECT_EQ(p.unknown_paths, 0);
  EXPECT_EQ(p.bad_values, 0);
  ASSERT_EQ(p.values.size(), 7u);
  auto* v = Find(p, "fabric_switch_port_receive_bytes_total", "swp1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 1000);
  v = Find(p, "fabric_switch_port_transmit_bytes_total", "swp1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 2000);
  v = Find(p, "fabric_switch_port_errors_total", "swp1",
           {{"error", "port_rcv_errors"}});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 3);
  v = Find(p, "fabric_switch_port_errors_total", "swp1",
           {{"error", "port_xmit_discards"}});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 4);
  v = Find(p, "fabric_switch_port_transmit_wait_total", "swp1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 77);
}

TEST(GnmiParse, StateAndSpeed) {
  gnmi::Notification n;
  AddString(n, "/interfaces/interface[name=swp1]/state/oper-status", "UP");
  AddString(n, "/interfaces/interface[name=swp2]/state/oper-status", "DOWN");
  AddString(n, "/interfaces/interface[name=swp1]/ethernet/state/port-speed",
            "openconfig-if-ethernet:SPEED_400GB");
  AddUint(n, "/interfaces/interface[name=swp2]/ethernet/state/port-speed",
          100000);  // Mb/s
  auto p = ParseNotification(n);
  EXPECT_EQ(Find(p, "fabric_switch_port_state", "swp1")->value, 4);
  EXPECT_EQ(Find(p, "fabric_switch_port_state", "swp2")->value, 1);
  EXPECT_EQ(Find(p, "fabric_switch_port_rate_bytes_per_second", "swp1")->value,
            50e9);
  EXPECT_EQ(Find(p, "fabric_switch_port_rate_bytes_per_second", "swp2")->value,
            12.5e9);
}

TEST(GnmiParse, QueuesAndPriorities) {
  gnmi::Notification n;
  *n.mutable_prefix() = P("/qos/interfaces/interface[interface-id=swp3]");
  AddUint(n, "output/queues/queue[name=3]/state/ecn-marked-pkts", 11);
  AddUint(n, "output/queues/queue[name=3]/state/no-buffer-uc-dropped-pkts", 12);
  AddUint(n, "output/queues/queue[name=3]/state/max-queue-len", 13);
  AddUint(n, "switch-priority[priority=3]/state/counters/in-pause-pkts", 14);
  AddUint(n, "switch-priority[priority=3]/state/counters/out-pause-pkts", 15);
  AddUint(n, "switch-priority[priority=3]/state/in-pause-duration", 2500000);
  auto p = ParseNotification(n);
  EXPECT_EQ(p.unknown_paths, 0);
  EXPECT_EQ(Find(p, "fabric_switch_port_queue_ecn_marked_packets_total", "swp3",
                 {{"queue", "3"}})
                ->value,
            11);
  EXPECT_EQ(Find(p, "fabric_switch_port_queue_no_buffer_dropped_packets_total",
                 "swp3", {{"queue", "3"}})
                ->value,
            12);
  EXPECT_EQ(Find(p, "fabric_switch_port_queue_watermark_bytes", "swp3",
                 {{"queue", "3"}})
                ->value,
            13);
  EXPECT_EQ(Find(p, "fabric_switch_port_pfc_pause_frames_total", "swp3",
                 {{"priority", "3"}, {"direction", "rx"}})
                ->value,
            14);
  EXPECT_EQ(Find(p, "fabric_switch_port_pfc_pause_frames_total", "swp3",
                 {{"priority", "3"}, {"direction", "tx"}})
                ->value,
            15);
  EXPECT_DOUBLE_EQ(
      Find(p, "fabric_switch_port_pfc_pause_duration_seconds_total", "swp3",
           {{"priority", "3"}, {"direction", "rx"}})
          ->value,
      2.5);
}

TEST(GnmiParse, LldpNeighbour) {
  gnmi::Notification n;
  *n.mutable_prefix() =
      P("/lldp/interfaces/interface[name=swp1]/neighbors/neighbor[id=1]/state");
  AddString(n, "system-name", "gpu-node-07");
  AddString(n, "port-id", "b8:3f:d2:00:00:01");
  AddString(n, "port-description", "eth2");
  AddString(n, "age", "12");  // a leaf not read
  auto p = ParseNotification(n);
  ASSERT_EQ(p.lldp.size(), 3u);
  EXPECT_EQ(p.lldp[0].port, "swp1");
  EXPECT_EQ(p.lldp[0].neighbor_id, "1");
  EXPECT_EQ(p.lldp[0].field, "system-name");
  EXPECT_EQ(p.lldp[0].value, "gpu-node-07");
  EXPECT_EQ(p.unknown_paths, 1);
}

TEST(GnmiParse, ValueKinds) {
  gnmi::Notification n;
  const std::string base = "/interfaces/interface[name=swp1]/state/counters/";
  auto* u = n.add_update();
  *u->mutable_path() = P(base + "in-octets");
  u->mutable_val()->set_json_ietf_val("\"18446744073709551615\"");
  u = n.add_update();
  *u->mutable_path() = P(base + "out-octets");
  u->mutable_val()->set_int_val(5);
  u = n.add_update();
  *u->mutable_path() = P(base + "in-pkts");
  u->mutable_val()->mutable_decimal_val()->set_digits(1234);
  u->mutable_val()->mutable_decimal_val()->set_precision(1);
  auto p = ParseNotification(n);
  EXPECT_EQ(p.bad_values, 0);
  EXPECT_EQ(Find(p, "fabric_switch_port_receive_bytes_total", "swp1")->value,
            18446744073709551615.0);
  EXPECT_EQ(Find(p, "fabric_switch_port_transmit_bytes_total", "swp1")->value,
            5);
  EXPECT_DOUBLE_EQ(
      Find(p, "fabric_switch_port_receive_packets_total", "swp1")->value,
      123.4);
}

TEST(GnmiParse, BadInputIsCountedNeverFatal) {
  gnmi::Notification n;
  const std::string base = "/interfaces/interface[name=swp1]/state/counters/";
  AddString(n, base + "in-octets", "lots");  // not a number
  auto* u = n.add_update();                  // no value
  *u->mutable_path() = P(base + "out-octets");
  u = n.add_update();  // negative
  *u->mutable_path() = P(base + "in-pkts");
  u->mutable_val()->set_int_val(-1);
  u = n.add_update();  // NaN
  *u->mutable_path() = P(base + "out-pkts");
  u->mutable_val()->set_double_val(std::nan(""));
  AddUint(n, "/interfaces/interface/state/counters/in-octets", 1);  // no key
  AddUint(n, "/interfaces/interface[name=*]/state/counters/in-octets", 1);
  AddUint(n, "/interfaces/interface[name=swp1]/state/counters/bogus", 1);
  AddUint(n, "/system/state/hostname", 1);
  AddUint(n,
          "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
          "queue[name=0]/state/nonsense",
          1);
  AddUint(n,
          "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
          "queue/state/ecn-marked-pkts",
          1);      // queue without its key
  n.add_update();  // an empty path
  AddString(n, "/interfaces/interface[name=swp1]/ethernet/state/port-speed",
            "SPEED_UNKNOWN");
  auto p = ParseNotification(n);
  EXPECT_TRUE(p.values.empty());
  EXPECT_EQ(p.bad_values, 8);
  EXPECT_EQ(p.unknown_paths, 4);
}

TEST(GnmiParse, DeletedInterface) {
  gnmi::Notification n;
  *n.add_delete_() = P("/interfaces/interface[name=swp9]");
  auto p = ParseNotification(n);
  ASSERT_EQ(p.deleted_ports.size(), 1u);
  EXPECT_EQ(p.deleted_ports[0], "swp9");
}

TEST(GnmiParse, SonicCountersDbTable) {
  gnmi::Notification n;
  n.mutable_prefix()->set_target("COUNTERS_DB");
  auto* u = n.add_update();
  *u->mutable_path() = P("/COUNTERS/Ethernet8");
  u->mutable_val()->set_json_ietf_val(
      R"({"SAI_PORT_STAT_IF_IN_OCTETS": "1000",
          "SAI_PORT_STAT_IF_OUT_DISCARDS": "7",
          "SAI_PORT_STAT_PFC_3_RX_PKTS": "42",
          "SAI_PORT_STAT_PFC_3_TX_PAUSE_DURATION_US": "2000000",
          "SAI_PORT_STAT_ETHER_STATS_JABBERS": "0",
          "SAI_PORT_STAT_IF_OUT_OCTETS": "lots"})");
  AddString(n, "/COUNTERS/Ethernet8/SAI_PORT_STAT_PFC_9_RX_PKTS", "1");
  AddString(n, "/COUNTERS/Ethernet8/SAI_PORT_STAT_IF_OUT_OCTETS", "5");
  u = n.add_update();  // not JSON
  *u->mutable_path() = P("/COUNTERS/Ethernet9");
  u->mutable_val()->set_json_ietf_val("{oops");
  AddString(n, "/COUNTERS/Ethernet8:3/SAI_QUEUE_STAT_PACKETS", "1");
  auto p = ParseNotification(n);
  EXPECT_EQ(
      Find(p, "fabric_switch_port_receive_bytes_total", "Ethernet8")->value,
      1000);
  EXPECT_EQ(
      Find(p, "fabric_switch_port_transmit_bytes_total", "Ethernet8")->value,
      5);
  EXPECT_EQ(Find(p, "fabric_switch_port_errors_total", "Ethernet8",
                 {{"error", "port_xmit_discards"}})
                ->value,
            7);
  EXPECT_EQ(Find(p, "fabric_switch_port_pfc_pause_frames_total", "Ethernet8",
                 {{"priority", "3"}, {"direction", "rx"}})
                ->value,
            42);
  EXPECT_EQ(Find(p, "fabric_switch_port_pfc_pause_duration_seconds_total",
                 "Ethernet8", {{"priority", "3"}, {"direction", "tx"}})
                ->value,
            2);
  EXPECT_EQ(p.values.size(), 5u);
  // JABBERS, PFC_9, the queue table: unknown; "lots", "{oops": bad.
  EXPECT_EQ(p.unknown_paths, 3);
  EXPECT_EQ(p.bad_values, 2);
}

TEST(GnmiParse, PortSpeed) {
  double r = 0;
  EXPECT_TRUE(ParsePortSpeed("SPEED_2500MB", &r));
  EXPECT_EQ(r, 2500e6 / 8);
  EXPECT_TRUE(ParsePortSpeed("SPEED_800GB", &r));
  EXPECT_EQ(r, 100e9);
  for (const char* bad : {"", "SPEED_", "SPEED_GB", "SPEED_UNKNOWN", "fast",
                          "-5", "SPEED_-1GB", "nan"})
    EXPECT_FALSE(ParsePortSpeed(bad, &r)) << bad;
}

TEST(GnmiParse, SubscriptionPathsAreWhatTheParserReads) {
  auto paths = SubscriptionPathStrings();
  ASSERT_EQ(paths.size(), 5u);
  EXPECT_EQ(paths[0], "/interfaces/interface[name=*]/state");
  EXPECT_EQ(SubscriptionPathStrings(true),
            std::vector<std::string>{"/COUNTERS/Ethernet*"});
  EXPECT_EQ(paths[2],
            "/qos/interfaces/interface[interface-id=*]/output/queues/"
            "queue[name=*]/state");
}

TEST(GnmiShard, EverySwitchInExactlyOneShard) {
  for (int i = 0; i < 200; ++i) {
    const std::string name = "leaf" + std::to_string(i);
    int owners = 0;
    for (int s = 1; s <= 4; ++s) owners += GnmiShardContains(name, s, 4);
    EXPECT_EQ(owners, 1) << name;
  }
}

TEST(GnmiSettings, DefaultsKeysAndErrors) {
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  EXPECT_FALSE(config->Collector("gnmi").enabled);
  EXPECT_TRUE(
      SettingsAs<GnmiSettings>(config->Collector("gnmi")).switches.empty());

  config = ParseConfig(
      "collectors:\n"
      "  gnmi:\n"
      "    enabled: true\n"
      "    switches:\n"
      "      - {name: leaf1, address: 10.0.0.1:9339}\n"
      "      - {address: 10.0.0.2:9339, paths: sonic}\n"
      "    insecure: true\n"
      "    username: fabricmon\n"
      "    sample_interval: 1s\n"
      "    deadline: 4s\n"
      "    shard: 2/3\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const auto& s = SettingsAs<GnmiSettings>(config->Collector("gnmi"));
  ASSERT_EQ(s.switches.size(), 2u);
  EXPECT_EQ(s.switches[0].name, "leaf1");
  EXPECT_EQ(s.switches[1].name, "10.0.0.2:9339");
  EXPECT_FALSE(s.switches[0].sonic_counters_db);
  EXPECT_TRUE(s.switches[1].sonic_counters_db);
  EXPECT_TRUE(s.insecure);
  EXPECT_EQ(s.username, "fabricmon");
  EXPECT_EQ(s.sample_interval, std::chrono::seconds(1));
  EXPECT_EQ(s.deadline, std::chrono::seconds(4));
  EXPECT_EQ(s.shard_index, 2);
  EXPECT_EQ(s.shard_count, 3);

  struct Bad {
    const char* yaml;
    const char* names;
  };
  for (const Bad& bad : {
           Bad{"    switches: leaf1\n", "collectors.gnmi.switches (line 3)"},
           Bad{"    switches:\n      - name: x\n",
               "collectors.gnmi.switches[0]"},
           Bad{"    switches:\n      - {address: a:1, port: 2}\n",
               "collectors.gnmi.switches[0].port"},
           Bad{"    switches:\n      - {name: a, address: a:1}\n"
               "      - {name: a, address: b:1}\n",
               "listed twice"},
           Bad{"    switches:\n      - {address: a:1, paths: yang}\n",
               "collectors.gnmi.switches[0].paths"},
           Bad{"    shard: 3/2\n", "collectors.gnmi.shard (line 3)"},
           Bad{"    shard: x\n", "collectors.gnmi.shard (line 3)"},
           Bad{"    sample_interval: 1ms\n",
               "collectors.gnmi.sample_interval (line 3)"},
           Bad{"    password_file: /etc/pw\n", "needs a username"},
           Bad{"    insecure: true\n    ca_file: /etc/ca.pem\n",
               "insecure turns TLS off"},
           Bad{"    cert_file: /etc/c.pem\n", "go together"},
           Bad{"    password_file: credential:gnmi.pw\n    username: u\n",
               "collectors.gnmi.password_file"},
       }) {
    EXPECT_FALSE(ParseConfig(std::string("collectors:\n  gnmi:\n") + bad.yaml,
                             AllCollectorKeys(), &error))
        << bad.yaml;
    EXPECT_NE(error.find(bad.names), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace fabric::gnmi_switch
