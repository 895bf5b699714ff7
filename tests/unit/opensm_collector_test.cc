// The `opensm` collector: node-name-map parsing, the accumulation of decoded
// plugin events into samples, its settings, its docs rows, and the whole
// path from the real plugin (dlopen()ed, driven as OpenSM drives it) through
// the collector's socket to the exposition.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "collectors/opensm.h"
#include "collectors/opensm_parse.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "core/metric_names.h"
#include "tests/support/osm_plugin_harness.h"

namespace fabric {
namespace {

using testing::DatagramReceiver;

osm::PortId Port(uint64_t guid, uint8_t port, osm::NodeType type,
                 const char* name) {
  osm::PortId id;
  id.node_guid = guid;
  id.port = port;
  id.node_type = type;
  id.SetName(name, 64);
  return id;
}

osm::Message Errors(const osm::PortId& id, uint64_t symbol, uint64_t vl15) {
  osm::PortErrors pe;
  pe.id = id;
  pe.symbol_error = symbol;
  pe.vl15_dropped = vl15;
  pe.port_xmit_wait = 10;
  osm::Message m;
  m.event = osm::Event::kPortErrors;
  m.body = pe;
  return m;
}

std::string Emit(const OpensmTotals& totals, const NodeNameMap& names = {}) {
  MetricSink sink;
  totals.Emit(sink, names);
  return ToText(sink.Take());
}

TEST(OpensmTotals, AccumulatesSwitchPortDeltasOnly) {
  OpensmTotals t;
  const auto sw = Port(0x2, 5, osm::NodeType::kSwitch, "leaf01");
  const auto host = Port(0x3, 1, osm::NodeType::kChannelAdapter, "node01");
  t.Apply(Errors(sw, 40, 1));
  t.Apply(Errors(sw, 2, 0));
  t.Apply(Errors(host, 1000, 0));
  // Unknown type, but the GUID was reported as a switch before.
  t.Apply(Errors(Port(0x2, 5, osm::NodeType::kUnknown, "leaf01"), 1, 0));
  // Unknown and never seen: not accumulated, counted.
  t.Apply(Errors(Port(0x9, 1, osm::NodeType::kUnknown, "?"), 7, 0));
  osm::PortData dc;
  dc.id = sw;
  dc.xmit_data = 100;
  dc.rcv_pkts = 3;
  osm::Message m;
  m.event = osm::Event::kPortDataCounters;
  m.body = dc;
  t.Apply(m);
  EXPECT_EQ(t.unclassified(), 1u);

  const std::string text = Emit(t);
  const std::string labels =
      "port=\"5\",switch=\"leaf01\",switch_guid=\"0x0000000000000002\"";
  EXPECT_NE(
      text.find("fabric_switch_port_errors_total{error=\"symbol_error\"," +
                labels + "} 43\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("fabric_switch_port_errors_total{error=\"VL15_dropped\"," +
                labels + "} 1\n"),
      std::string::npos);
  EXPECT_NE(
      text.find("fabric_switch_port_transmit_wait_total{" + labels + "} 30\n"),
      std::string::npos);
  EXPECT_NE(text.find("fabric_switch_port_transmit_bytes_total{" + labels +
                      "} 400\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("fabric_switch_port_receive_packets_total{" + labels + "} 3\n"),
      std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_events_total{event=\"port_errors\"} 5\n"),
            std::string::npos);
  EXPECT_EQ(text.find("node01"), std::string::npos);
  EXPECT_EQ(text.find("0x0000000000000009"), std::string::npos);
}

// Past the cap, new ports are counted, not tracked; tracked ports keep
// accumulating, and an unknown-type event for a switch none of whose ports
// is tracked is unclassified.
TEST(OpensmTotals, TracksAtMostMaxSwitchPortsAndCountsTheRest) {
  OpensmTotals t(2);
  t.Apply(Errors(Port(0x2, 1, osm::NodeType::kSwitch, "a"), 1, 0));
  t.Apply(Errors(Port(0x2, 2, osm::NodeType::kSwitch, "a"), 1, 0));
  t.Apply(Errors(Port(0x3, 1, osm::NodeType::kSwitch, "b"), 1, 0));
  t.Apply(Errors(Port(0x2, 1, osm::NodeType::kSwitch, "a"), 1, 0));
  t.Apply(Errors(Port(0x3, 1, osm::NodeType::kUnknown, "b"), 1, 0));
  EXPECT_EQ(t.switch_ports(), 2u);
  EXPECT_EQ(t.over_cap(), 1u);
  EXPECT_EQ(t.unclassified(), 1u);
  const std::string text = Emit(t);
  EXPECT_EQ(text.find("0x0000000000000003"), std::string::npos) << text;
  EXPECT_NE(text.find("fabric_switch_port_errors_total{error=\"symbol_error\","
                      "port=\"1\",switch=\"a\",switch_guid="
                      "\"0x0000000000000002\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(OpensmTotals, NodeNameMapRenamesSwitches) {
  OpensmTotals t;
  t.Apply(Errors(Port(0x2, 1, osm::NodeType::kSwitch, "MF0;sw:SX/U1"), 1, 0));
  NodeNameMap names;
  names.names[0x2] = "leaf01";
  const std::string text = Emit(t, names);
  EXPECT_NE(text.find("switch=\"leaf01\""), std::string::npos);
  EXPECT_EQ(text.find("MF0;sw"), std::string::npos);
}

// Where the fabric sweep runs too, it wins: no switch port samples here.
TEST(OpensmTotals, SwitchPortsCanBeLeftToTheSweep) {
  OpensmTotals t;
  t.Apply(Errors(Port(0x2, 1, osm::NodeType::kSwitch, "leaf01"), 1, 0));
  MetricSink sink;
  t.Emit(sink, {}, /*switch_ports=*/false);
  const std::string text = ToText(sink.Take());
  EXPECT_EQ(text.find("fabric_switch_port_"), std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_events_total{event=\"port_errors\"} 1"),
            std::string::npos);
}

TEST(OpensmTotals, SweepDurationTrapsAndDrops) {
  OpensmTotals t;
  std::string text = Emit(t);
  // Every event name is there from the start; no sweep duration yet.
  EXPECT_NE(text.find("fabric_opensm_events_total{event=\"lft_change\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(text.find("fabric_opensm_heavy_sweep_duration_seconds"),
            std::string::npos);

  osm::Message start;
  start.event = osm::Event::kHeavySweepStart;
  start.monotonic_ns = 5'000'000'000;
  start.dropped = 3;
  osm::Message done = start;
  done.event = osm::Event::kHeavySweepDone;
  done.monotonic_ns = 7'500'000'000;
  done.dropped = 2;
  t.Apply(start);
  t.Apply(done);
  osm::Message trap;
  trap.event = osm::Event::kTrap;
  trap.body = osm::Trap{true, 1, 128, 0, 1};
  t.Apply(trap);
  t.Apply(trap);
  trap.body = osm::Trap{false, 4, 0, 0x2c9, 1};
  t.Apply(trap);
  text = Emit(t);
  EXPECT_NE(text.find("fabric_opensm_heavy_sweep_duration_seconds 2.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_opensm_events_dropped_total 5\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_traps_total{trap=\"128\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_traps_total{trap=\"vendor\"} 1\n"),
            std::string::npos);
}

TEST(OpensmSettings, DefaultsKeysAndErrors) {
  std::string error;
  auto config = ParseConfig("", AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const CollectorConfig c = config->Collector("opensm");
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(SettingsAs<OpensmSettings>(c).socket, kDefaultOsmSocket);
  EXPECT_EQ(SettingsAs<OpensmSettings>(c).node_name_map, "");
  EXPECT_TRUE(SettingsAs<OpensmSettings>(c).switch_ports);
  EXPECT_EQ(SettingsAs<OpensmSettings>(c).max_switch_ports,
            kDefaultMaxSwitchPorts);

  config = ParseConfig(
      "collectors:\n"
      "  opensm:\n"
      "    enabled: true\n"
      "    socket: /run/x/osm.sock\n"
      "    node_name_map: /etc/opensm/ib-node-name-map\n"
      "    switch_ports: false\n"
      "    max_switch_ports: 100\n",
      AllCollectorKeys(), &error);
  ASSERT_TRUE(config) << error;
  const auto& s = SettingsAs<OpensmSettings>(config->Collector("opensm"));
  EXPECT_EQ(s.socket, "/run/x/osm.sock");
  EXPECT_EQ(s.node_name_map, "/etc/opensm/ib-node-name-map");
  EXPECT_FALSE(s.switch_ports);
  EXPECT_EQ(s.max_switch_ports, 100);
  for (const char* bad : {"0", "-1", "1e5", "many", "1000001"}) {
    EXPECT_FALSE(ParseConfig(
        std::string("collectors:\n  opensm:\n    max_switch_ports: ") + bad +
            "\n",
        AllCollectorKeys(), &error));
    EXPECT_NE(error.find("collectors.opensm.max_switch_ports (line 3)"),
              std::string::npos)
        << error;
  }

  EXPECT_FALSE(ParseConfig("collectors:\n  opensm:\n    socket: osm.sock\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("collectors.opensm.socket (line 3)"), std::string::npos)
      << error;
  EXPECT_FALSE(ParseConfig("collectors:\n  opensm:\n    sockett: /x\n",
                           AllCollectorKeys(), &error));
  EXPECT_NE(error.find("sockett"), std::string::npos) << error;
}

// Families in docs/metrics.md's "## opensm" table.
std::set<std::string> DocumentedOpensmMetrics() {
  const auto names = DocumentedFamilies("opensm");
  return {names.begin(), names.end()};
}

// The whole path: the real plugin sends, the collector receives and emits.
class OpensmCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(plugin_.impl, nullptr) << plugin_.error();
    socket_ = dir_.path() + "/osm-events.sock";
    CollectorConfig config;
    OpensmSettings settings;
    settings.socket = socket_;
    config.settings = std::make_shared<SettingsOf<OpensmSettings>>(settings);
    collector_ = MakeOpensmCollector(CollectorEnv{}, config);
    collector_->Start(io_);  // io_ not running yet: this is its thread
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    std::promise<void> stopped;
    boost::asio::post(io_, [&] {
      collector_->Stop();
      stopped.set_value();
    });
    stopped.get_future().wait();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  // Collects until every needle is in the exposition (bounded: 20 s). The
  // plugin sends from its own thread, so its datagrams and a test's direct
  // ones arrive in no fixed order.
  std::string CollectUntil(const std::vector<std::string>& needles) {
    std::string text;
    for (int i = 0; i < 2000; ++i) {
      MetricSink sink;
      ok_ = collector_->Collect(sink);
      text = ToText(sink.Take());
      if (std::all_of(needles.begin(), needles.end(), [&](const auto& n) {
            return text.find(n) != std::string::npos;
          }))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return text;
  }

  testing::LoadedPlugin plugin_;
  testing::TempDir dir_;
  std::string socket_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_ = boost::asio::make_work_guard(io_);
  std::unique_ptr<Collector> collector_;
  std::thread thread_;
  bool ok_ = false;
};

TEST_F(OpensmCollectorTest, PluginEventsBecomeMetrics) {
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  testing::FakeOpenSm osm(socket_);
  osm.AddNode(0x0002c90300000001ull, IB_NODE_TYPE_SWITCH);
  void* data = plugin_.impl->create(osm.get());
  ASSERT_NE(data, nullptr);
  osm_epi_pe_event_t pe{};
  char name[] = "leaf01";
  osm_epi_create_port_id(&pe.port_id, 0x0002c90300000001ull, 7, name);
  pe.symbol_err_cnt = 42;
  plugin_.impl->report(data, OSM_EVENT_ID_HEAVY_SWEEP_START, nullptr);
  plugin_.impl->report(data, OSM_EVENT_ID_HEAVY_SWEEP_DONE, nullptr);
  plugin_.impl->report(data, OSM_EVENT_ID_PORT_ERRORS, &pe);
  plugin_.impl->report(data, OSM_EVENT_ID_SUBNET_UP, nullptr);
  // Garbage from someone else on the socket is counted, not fatal.
  {
    DatagramReceiver unused(dir_.path() + "/client.sock");
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
    const char junk[] = "not a fabricmon datagram";
    ASSERT_EQ(sendto(fd, junk, sizeof(junk), 0,
                     reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
              static_cast<ssize_t>(sizeof(junk)));
    ::close(fd);
  }
  const std::string text =
      CollectUntil({"fabric_opensm_datagrams_rejected_total 1\n",
                    "fabric_opensm_events_total{event=\"subnet_up\"} 1\n"});
  plugin_.impl->delete_plugin(data);
  EXPECT_TRUE(ok_);
  const std::string port =
      "port=\"7\",switch=\"leaf01\",switch_guid=\"0x0002c90300000001\"";
  EXPECT_NE(
      text.find("fabric_switch_port_errors_total{error=\"symbol_error\"," +
                port + "} 42\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric_opensm_events_total{event=\"subnet_up\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_heavy_sweep_duration_seconds "),
            std::string::npos);
  EXPECT_NE(text.find("fabric_opensm_events_dropped_total 0\n"),
            std::string::npos);

  // Every family emitted is documented under "## opensm" (traps need a
  // trap event, which this path did not send).
  std::set<std::string> emitted;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      emitted.insert(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  const auto documented = DocumentedOpensmMetrics();
  for (const auto& name : emitted) {
    EXPECT_TRUE(documented.count(name)) << name << " not in docs/metrics.md";
  }
}

TEST_F(OpensmCollectorTest, UnbindableSocketFailsTheCollectionAndRecovers) {
  // A second collector whose socket directory does not exist yet.
  OpensmSettings settings;
  settings.socket = dir_.path() + "/sub/osm.sock";  // directory missing
  CollectorConfig config;
  config.settings = std::make_shared<SettingsOf<OpensmSettings>>(settings);
  auto second = MakeOpensmCollector(CollectorEnv{}, config);
  std::promise<void> started;
  boost::asio::post(io_, [&] {
    second->Start(io_);
    started.set_value();
  });
  started.get_future().wait();
  MetricSink sink;
  EXPECT_FALSE(second->Collect(sink));
  EXPECT_GE(sink.skipped(), 1u);
  // The directory appears (as systemd's RuntimeDirectory would): a later
  // collection re-binds.
  std::filesystem::create_directory(dir_.path() + "/sub");
  bool ok = false;
  for (int i = 0; i < 2000 && !ok; ++i) {
    MetricSink s;
    ok = second->Collect(s);
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ok);
  std::promise<void> stopped;
  boost::asio::post(io_, [&] {
    second->Stop();
    stopped.set_value();
  });
  stopped.get_future().wait();
}

TEST(OpensmCollectorOnce, WithoutTheDaemonThereIsNoSource) {
  auto c = MakeOpensmCollector(CollectorEnv{}, CollectorConfig{});
  MetricSink sink;
  EXPECT_FALSE(c->Collect(sink));
}

TEST(OpensmCollectorStart, NeverRemovesAFileThatIsNotASocket) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/osm.sock";
  std::ofstream(path) << "precious";
  OpensmSettings settings;
  settings.socket = path;
  CollectorConfig config;
  config.settings = std::make_shared<SettingsOf<OpensmSettings>>(settings);
  auto c = MakeOpensmCollector(CollectorEnv{}, config);
  boost::asio::io_context io;
  c->Start(io);
  MetricSink sink;
  EXPECT_FALSE(c->Collect(sink));
  c->Stop();
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

}  // namespace
}  // namespace fabric
