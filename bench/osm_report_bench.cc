// Time inside libfabricmon_osm.so's report() per event, the cost OpenSM's
// own threads pay (PerfMgr calls it twice per port per sweep). The plugin
// is dlopen()ed as OpenSM does and driven with a minimal osm_opensm_t
// (tests/support/osm_plugin_harness.h).
//   NoDaemon:   nobody bound to the socket; the plugin's sender thread drops.
//   Reader:     a thread reads the socket as the daemon would.
//   SubnetUp:   an event without data (header only), with a reader.
// Run: build/bench/osm_report_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <thread>

#include "tests/support/osm_plugin_harness.h"

namespace fabric::testing {
namespace {

constexpr uint64_t kSwitchGuid = 0x0002c90300000001ull;

struct Setup {
  LoadedPlugin plugin;
  TempDir dir;
  std::string socket = dir.path() + "/osm.sock";
  FakeOpenSm osm{socket};
  void* data = nullptr;
  std::unique_ptr<DatagramReceiver> reader;
  std::atomic<bool> stop{false};
  std::thread reader_thread;

  explicit Setup(bool with_reader) {
    osm.AddNode(kSwitchGuid, IB_NODE_TYPE_SWITCH);
    if (with_reader) {
      reader = std::make_unique<DatagramReceiver>(socket);
      reader_thread = std::thread([this] {
        while (!stop.load()) reader->Receive(true);  // 10 s receive timeout
      });
    }
    if (plugin.impl != nullptr) data = plugin.impl->create(osm.get());
  }
  ~Setup() {
    if (data != nullptr) plugin.impl->delete_plugin(data);
    stop = true;
    if (reader_thread.joinable()) {
      // Wake the reader with one last datagram from a plain socket.
      int fd = socket_fd();
      reader_thread.join();
      if (fd >= 0) ::close(fd);
    }
  }
  int socket_fd() {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
    const char byte = 0;
    ::sendto(fd, &byte, 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    return fd;
  }
};

osm_epi_pe_event_t PortErrors() {
  osm_epi_pe_event_t e{};
  char name[] = "leaf01";
  osm_epi_create_port_id(&e.port_id, kSwitchGuid, 7, name);
  e.symbol_err_cnt = 1;
  return e;
}

void Run(benchmark::State& state, Setup& s, osm_epi_event_id_t id,
         void* event) {
  if (s.data == nullptr) {
    state.SkipWithError("plugin not loaded");
    return;
  }
  for (auto _ : state) s.plugin.impl->report(s.data, id, event);
  state.SetItemsProcessed(state.iterations());
}

void BM_PortErrorsNoDaemon(benchmark::State& state) {
  Setup s(false);
  auto e = PortErrors();
  Run(state, s, OSM_EVENT_ID_PORT_ERRORS, &e);
}
BENCHMARK(BM_PortErrorsNoDaemon);

void BM_PortErrorsReader(benchmark::State& state) {
  Setup s(true);
  auto e = PortErrors();
  Run(state, s, OSM_EVENT_ID_PORT_ERRORS, &e);
}
BENCHMARK(BM_PortErrorsReader);

void BM_SubnetUpReader(benchmark::State& state) {
  Setup s(true);
  Run(state, s, OSM_EVENT_ID_SUBNET_UP, nullptr);
}
BENCHMARK(BM_SubnetUpReader);

}  // namespace
}  // namespace fabric::testing

BENCHMARK_MAIN();
