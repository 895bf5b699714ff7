// libfabricmon_osm.so loaded the way OpenSM loads it (dlopen + dlsym
// "osm_event_plugin"), driven with every event type, with absent and
// malformed data, with no daemon, a slow daemon and a restarted daemon.
// Run it under ASan with scripts/test-sanitizers.sh.
#include <gtest/gtest.h>
#include <malloc.h>
#include <pthread.h>

#include <fstream>
#include <thread>

#include "tests/support/osm_plugin_harness.h"

namespace fabric::testing {
namespace {

constexpr uint64_t kSwitchGuid = 0x0002c90300000001ull;
constexpr uint64_t kHostGuid = 0x0002c90300000002ull;
constexpr uint64_t kAbsentGuid = 0x0002c903000000ffull;

osm_epi_pe_event_t PortErrors(uint64_t guid, uint8_t port) {
  osm_epi_pe_event_t e{};
  char name[] = "sw-leaf01";
  osm_epi_create_port_id(&e.port_id, guid, port, name);
  e.symbol_err_cnt = 7;
  e.link_downed = 1;
  e.rcv_err = 3;
  e.xmit_discards = 11;
  e.vl15_dropped = 2;
  e.xmit_wait = 1000;
  e.time_diff_s = 1;
  return e;
}

class OsmPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(plugin_.impl, nullptr) << plugin_.error();
    ASSERT_FALSE(dir_.path().empty());
    socket_ = dir_.path() + "/osm.sock";
    osm_ = std::make_unique<FakeOpenSm>(socket_);
    osm_->AddNode(kSwitchGuid, IB_NODE_TYPE_SWITCH);
    osm_->AddNode(kHostGuid, IB_NODE_TYPE_CA);
    data_ = plugin_.impl->create(osm_->get());
    ASSERT_NE(data_, nullptr);
  }
  void TearDown() override {
    if (data_ != nullptr) plugin_.impl->delete_plugin(data_);
  }
  void Report(osm_epi_event_id_t id, void* event_data) {
    plugin_.impl->report(data_, id, event_data);
  }

  LoadedPlugin plugin_;
  TempDir dir_;
  std::string socket_;
  std::unique_ptr<FakeOpenSm> osm_;
  void* data_ = nullptr;
};

TEST(OsmPluginLoad, ExportsTheSymbolOpenSmLooksUpWithItsVersion) {
  LoadedPlugin plugin;
  ASSERT_NE(plugin.impl, nullptr) << plugin.error();
  EXPECT_STREQ(plugin.impl->osm_version, OSM_VERSION);
  EXPECT_NE(plugin.impl->create, nullptr);
  EXPECT_NE(plugin.impl->delete_plugin, nullptr);
  EXPECT_NE(plugin.impl->report, nullptr);
}

TEST(OsmPluginLoad, CreateRefusesOtherVersionsAndUnusablePaths) {
  LoadedPlugin plugin;
  ASSERT_NE(plugin.impl, nullptr) << plugin.error();
  EXPECT_EQ(plugin.impl->create(nullptr), nullptr);
  {
    FakeOpenSm osm("/tmp/x.sock");
    osm.get()->osm_version = "OpenSM 3.3.0";
    EXPECT_EQ(plugin.impl->create(osm.get()), nullptr);
  }
  for (const std::string& bad :
       {std::string("relative.sock"), "/" + std::string(120, 'a')}) {
    FakeOpenSm osm(bad);
    EXPECT_EQ(plugin.impl->create(osm.get()), nullptr) << bad;
  }
  // Empty options: the default path; creating does not need it to exist.
  FakeOpenSm osm("  ");
  void* data = plugin.impl->create(osm.get());
  ASSERT_NE(data, nullptr);
  plugin.impl->report(data, OSM_EVENT_ID_SUBNET_UP, nullptr);
  plugin.impl->delete_plugin(data);
  plugin.impl->delete_plugin(nullptr);
  plugin.impl->report(nullptr, OSM_EVENT_ID_SUBNET_UP, nullptr);
}

TEST_F(OsmPluginTest, EveryEventTypeArrivesWithItsData) {
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());

  auto pe = PortErrors(kSwitchGuid, 5);
  Report(OSM_EVENT_ID_PORT_ERRORS, &pe);
  osm_epi_dc_event_t dc{};
  char host_name[] = "node01 HCA-1";
  osm_epi_create_port_id(&dc.port_id, kHostGuid, 1, host_name);
  dc.xmit_data = 1ull << 40;
  dc.rcv_pkts = 42;
  Report(OSM_EVENT_ID_PORT_DATA_COUNTERS, &dc);
  osm_epi_ps_event_t ps{};
  char unknown_name[] = "gone";
  osm_epi_create_port_id(&ps.port_id, kAbsentGuid, 2, unknown_name);
  ps.xmit_wait = 77;
  Report(OSM_EVENT_ID_PORT_SELECT, &ps);
  ib_mad_notice_attr_t ntc{};
  ntc.generic_type = 0x80 | 1;
  ntc.g_or_v.generic.trap_num = cl_hton16(128);
  ntc.g_or_v.generic.prod_type_lsb = cl_hton16(2);
  ntc.issuer_lid = cl_hton16(0x11);
  Report(OSM_EVENT_ID_TRAP, &ntc);
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  Report(OSM_EVENT_ID_HEAVY_SWEEP_START, nullptr);
  Report(OSM_EVENT_ID_HEAVY_SWEEP_DONE, nullptr);
  Report(OSM_EVENT_ID_UCAST_ROUTING_DONE,
         reinterpret_cast<void*>(uintptr_t{UCAST_ROUTING_REROUTE}));
  Report(OSM_EVENT_ID_STATE_CHANGE, nullptr);
  Report(OSM_EVENT_ID_SA_DB_DUMPED, nullptr);
  osm_switch_t sw{};
  sw.p_node = osm_->AddNode(0x0002c90300000003ull, IB_NODE_TYPE_SWITCH);
  osm_epi_lft_change_event_t lft{&sw, LFT_CHANGED_BLOCK, 0x40, 2};
  Report(OSM_EVENT_ID_LFT_CHANGE, &lft);

  std::vector<osm::Message> got;
  for (int i = 0; i < osm::kEventCount; ++i) {
    auto m = daemon.Receive();
    ASSERT_TRUE(m.has_value()) << "datagram " << i;
    EXPECT_EQ(static_cast<int>(m->event), i);
    EXPECT_EQ(m->dropped, 0u);
    EXPECT_GT(m->monotonic_ns, 0u);
    got.push_back(*m);
  }
  const auto& e = std::get<osm::PortErrors>(got[0].body);
  EXPECT_EQ(e.id.node_guid, kSwitchGuid);
  EXPECT_EQ(e.id.port, 5);
  EXPECT_EQ(e.id.node_type, osm::NodeType::kSwitch);
  EXPECT_EQ(e.id.NameView(), "sw-leaf01");
  EXPECT_EQ(e.id.time_diff_s, 1u);
  EXPECT_EQ(e.symbol_error, 7u);
  EXPECT_EQ(e.link_downed, 1u);
  EXPECT_EQ(e.port_rcv_errors, 3u);
  EXPECT_EQ(e.port_xmit_discards, 11u);
  EXPECT_EQ(e.vl15_dropped, 2u);
  EXPECT_EQ(e.port_xmit_wait, 1000u);
  const auto& d = std::get<osm::PortData>(got[1].body);
  EXPECT_EQ(d.id.node_type, osm::NodeType::kChannelAdapter);
  EXPECT_EQ(d.id.NameView(), "node01 HCA-1");
  EXPECT_EQ(d.xmit_data, 1ull << 40);
  EXPECT_EQ(d.rcv_pkts, 42u);
  const auto& s = std::get<osm::PortSelect>(got[2].body);
  EXPECT_EQ(s.id.node_type, osm::NodeType::kUnknown);
  EXPECT_EQ(s.xmit_wait, 77u);
  const auto& t = std::get<osm::Trap>(got[3].body);
  EXPECT_TRUE(t.generic);
  EXPECT_EQ(t.type, 1);
  EXPECT_EQ(t.trap_number, 128);
  EXPECT_EQ(t.producer_or_vendor, 2u);
  EXPECT_EQ(t.issuer_lid, 0x11);
  EXPECT_EQ(std::get<osm::UcastRoutingDone>(got[7].body).flags,
            uint32_t{UCAST_ROUTING_REROUTE});
  const auto& l = std::get<osm::LftChange>(got[10].body);
  EXPECT_EQ(l.switch_guid, 0x0002c90300000003ull);
  EXPECT_EQ(l.flags, uint32_t{LFT_CHANGED_BLOCK});
  EXPECT_EQ(l.lft_top, 0x40);
  EXPECT_EQ(l.block_num, 2u);
  // Heavy sweep start precedes done on the same clock.
  EXPECT_LE(got[5].monotonic_ns, got[6].monotonic_ns);
}

TEST_F(OsmPluginTest, AbsentAndMalformedDataIsCountedNotSent) {
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  // Events whose data is required, without data: not sendable.
  for (auto id :
       {OSM_EVENT_ID_PORT_ERRORS, OSM_EVENT_ID_PORT_DATA_COUNTERS,
        OSM_EVENT_ID_PORT_SELECT, OSM_EVENT_ID_TRAP, OSM_EVENT_ID_LFT_CHANGE}) {
    Report(id, nullptr);
  }
  // Event numbers OpenSM 3.3.23 does not define.
  for (int id : {-1, int{OSM_EVENT_ID_MAX}, 1000}) {
    Report(static_cast<osm_epi_event_id_t>(id), nullptr);
  }
  EXPECT_EQ(daemon.Drain(), 0);

  // A name without its terminator, a port number past any switch, and an
  // LFT change without a switch or without a node: sent, bounded.
  osm_epi_pe_event_t pe = PortErrors(kSwitchGuid, 255);
  std::memset(pe.port_id.node_name, 'x', sizeof(pe.port_id.node_name));
  pe.time_diff_s = -5;
  Report(OSM_EVENT_ID_PORT_ERRORS, &pe);
  osm_epi_lft_change_event_t lft{nullptr, LFT_CHANGED_LFT_TOP, 1, 0};
  Report(OSM_EVENT_ID_LFT_CHANGE, &lft);
  osm_switch_t sw{};  // p_node null
  lft.p_sw = &sw;
  Report(OSM_EVENT_ID_LFT_CHANGE, &lft);

  auto m = daemon.Receive();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->dropped, 8u);  // the five without data and three unknown ids
  const auto& e = std::get<osm::PortErrors>(m->body);
  EXPECT_EQ(e.id.NameView(), std::string(osm::kNodeNameSize, 'x'));
  EXPECT_EQ(e.id.port, 255);
  EXPECT_EQ(e.id.time_diff_s, 0u);
  for (int i = 0; i < 2; ++i) {
    auto l = daemon.Receive();
    ASSERT_TRUE(l.has_value());
    EXPECT_EQ(l->dropped, 0u);
    EXPECT_EQ(std::get<osm::LftChange>(l->body).switch_guid, 0u);
  }
}

// With the subnet lock held for writing (the SM mid-sweep) the lookup does
// not wait: a node not seen before is sent as unknown, a node looked up
// before comes from the plugin's cache.
TEST_F(OsmPluginTest, NodeTypeLookupNeverWaitsForTheSubnetLock) {
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  auto sw = PortErrors(kSwitchGuid, 1);
  auto host = PortErrors(kHostGuid, 1);

  ASSERT_EQ(pthread_rwlock_wrlock(osm_->subnet_lock()), 0);
  Report(OSM_EVENT_ID_PORT_ERRORS, &sw);
  ASSERT_EQ(pthread_rwlock_unlock(osm_->subnet_lock()), 0);
  Report(OSM_EVENT_ID_PORT_ERRORS, &sw);
  ASSERT_EQ(pthread_rwlock_wrlock(osm_->subnet_lock()), 0);
  Report(OSM_EVENT_ID_PORT_ERRORS, &sw);
  Report(OSM_EVENT_ID_PORT_ERRORS, &host);
  ASSERT_EQ(pthread_rwlock_unlock(osm_->subnet_lock()), 0);

  std::vector<osm::NodeType> types;
  for (int i = 0; i < 4; ++i) {
    auto m = daemon.Receive();
    ASSERT_TRUE(m.has_value());
    types.push_back(std::get<osm::PortErrors>(m->body).id.node_type);
  }
  EXPECT_EQ(types, (std::vector<osm::NodeType>{
                       osm::NodeType::kUnknown, osm::NodeType::kSwitch,
                       osm::NodeType::kSwitch, osm::NodeType::kUnknown}));
}

// Delivery is asynchronous (the plugin's sender thread), so an event
// reported just before the daemon binds may still reach it; what is
// asserted is that every event is delivered or counted, and that events
// after the (re)bind arrive.
TEST_F(OsmPluginTest, DropsWhileTheDaemonIsAwayAndReachesItsSuccessor) {
  for (int i = 0; i < 3; ++i) Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  Report(OSM_EVENT_ID_HEAVY_SWEEP_DONE, nullptr);
  auto t = daemon.ReceiveUntilAccounted(4);
  EXPECT_EQ(t.accounted(), 4u);
  ASSERT_FALSE(t.messages.empty());
  EXPECT_EQ(t.messages.back().event, osm::Event::kHeavySweepDone);

  // The daemon stops (its socket file removed), then a new one binds the
  // same path: the plugin needs no restart.
  daemon.Close();
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  daemon.Bind();
  ASSERT_TRUE(daemon.bound());
  Report(OSM_EVENT_ID_STATE_CHANGE, nullptr);
  t = daemon.ReceiveUntilAccounted(3);
  EXPECT_EQ(t.accounted(), 3u);
  ASSERT_FALSE(t.messages.empty());
  EXPECT_EQ(t.messages.back().event, osm::Event::kStateChange);
}

// A daemon that died without removing its socket file: connect() is
// refused, the events are counted, and a daemon that binds afresh gets the
// count.
TEST_F(OsmPluginTest, StaleSocketFileIsADrop) {
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);  // the file stays, nobody is bound to it
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  Report(OSM_EVENT_ID_SA_DB_DUMPED, nullptr);
  auto t = daemon.ReceiveUntilAccounted(3);
  EXPECT_EQ(t.accounted(), 3u);
  ASSERT_FALSE(t.messages.empty());
  EXPECT_EQ(t.messages.back().event, osm::Event::kSaDbDumped);
}

std::size_t HeapInUse() { return mallinfo2().uordblks; }

long RssKb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    long kb = 0;
    if (key == "VmRSS:" && status >> kb) return kb;
    status.ignore(1 << 12, '\n');
  }
  return -1;
}

constexpr int kBurst = 100000;

TEST_F(OsmPluginTest, BurstWithNoDaemonNeitherBlocksNorAllocates) {
  auto pe = PortErrors(kSwitchGuid, 3);
  Report(OSM_EVENT_ID_PORT_ERRORS, &pe);  // warm: cache, first-use pages
  [[maybe_unused]] const long rss = RssKb();
  const std::size_t heap = HeapInUse();
  for (int i = 0; i < kBurst; ++i) Report(OSM_EVENT_ID_PORT_ERRORS, &pe);
  // report() allocates nothing, so the heap in use is unchanged to the byte
  // (under ASan mallinfo2 reports 0 both times).
  const std::size_t heap_after = HeapInUse();
  EXPECT_EQ(heap_after, heap);
  // RSS may move by a few pages for reasons outside the plugin (the test's
  // own stack, libc); growth per event would be megabytes.
#if !defined(__SANITIZE_THREAD__)  // TSan's own history grows the RSS
  EXPECT_LT(RssKb() - rss, 1024);
#endif

  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  auto t = daemon.ReceiveUntilAccounted(kBurst + 2);
  EXPECT_EQ(t.accounted(), uint64_t{kBurst} + 2);
  // Nearly all were dropped: the burst is far larger than the queue.
  EXPECT_GT(t.dropped, uint64_t{kBurst} - 4096 - 1);
}

// A daemon that does not read: its queue fills, sendto() says EAGAIN, the
// rest is dropped and counted; queued + dropped accounts for every event.
TEST_F(OsmPluginTest, BurstIntoASlowDaemonDropsTheOverflowAndCountsIt) {
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  auto pe = PortErrors(kSwitchGuid, 3);
  for (int i = 0; i < kBurst; ++i) Report(OSM_EVENT_ID_PORT_ERRORS, &pe);
  // The daemon starts reading only now: its kernel queue and the plugin's
  // ring were full, so the rest was dropped, and every event is accounted.
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  auto t = daemon.ReceiveUntilAccounted(kBurst + 1);
  EXPECT_EQ(t.accounted(), uint64_t{kBurst} + 1);
  EXPECT_GT(t.dropped, 0u);
  EXPECT_GT(t.messages.size(), 1u);
}

// OpenSM calls report() from several threads at once; no drop is lost.
TEST_F(OsmPluginTest, ConcurrentReportsCountEveryDrop) {
  constexpr int kThreads = 4;
  constexpr int kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this] {
      auto pe = PortErrors(kSwitchGuid, 3);
      for (int i = 0; i < kEach; ++i) {
        Report(OSM_EVENT_ID_PORT_ERRORS, &pe);
        Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  DatagramReceiver daemon(socket_);
  ASSERT_TRUE(daemon.bound());
  Report(OSM_EVENT_ID_SUBNET_UP, nullptr);
  const uint64_t total = uint64_t{kThreads} * kEach * 2 + 1;
  EXPECT_EQ(daemon.ReceiveUntilAccounted(total).accounted(), total);
}

}  // namespace
}  // namespace fabric::testing
