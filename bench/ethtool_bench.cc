// Cost of one ethtool collection per netdev: the SIOCETHTOOL reader on lo,
// virtio and (when run as root) a veth pair in a private network namespace,
// warm (string table cached) and cold (new reader each time), plus the pure
// parse + metric build on the synthetic mlx5 PFC dump. Counters report the
// ioctls per collection, counted in the reader itself.
//
//   build/bench/ethtool_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "collectors/roce.h"
#include "sources/ethtool_ioctl.h"
#include "sources/ethtool_parse.h"

namespace fabric {
namespace {

std::string g_netns;  // set when the veth pair exists

// A reader whose socket lives in `netns` (empty = this namespace). The
// socket keeps its namespace, so the bench loop can use it from any thread.
std::unique_ptr<IoctlEthtoolSource> MakeSource(const std::string& netns) {
  if (netns.empty()) return std::make_unique<IoctlEthtoolSource>();
  std::unique_ptr<IoctlEthtoolSource> out;
  std::thread t([&] {
    int fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (::setns(fd, CLONE_NEWNET) == 0) {
      out = std::make_unique<IoctlEthtoolSource>();
    }
    ::close(fd);
  });
  t.join();
  return out;
}

void Collect(benchmark::State& state, const std::string& netdev,
             const std::string& netns, bool cold) {
  auto source = MakeSource(netns);
  if (!source) {
    state.SkipWithError("cannot enter the bench netns");
    return;
  }
  EthtoolResult first = source->Stats(netdev);
  if (!first.ok()) {
    state.SkipWithError((netdev + ": " + first.error().message()).c_str());
    return;
  }
  RoceNetdev where{"dev", "1", netdev};
  std::uint64_t ioctls = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      source = MakeSource(netns);
      state.ResumeTiming();
    }
    std::uint64_t before = source->ioctl_count();
    EthtoolResult r = source->Stats(netdev);
    MetricSink sink;
    EmitEthtoolMetrics(ParseEthtoolStats(r->names, r->values), where, sink);
    benchmark::DoNotOptimize(sink.Take());
    ioctls += source->ioctl_count() - before;
  }
  state.counters["ioctls_per_collection"] =
      static_cast<double>(ioctls) / static_cast<double>(state.iterations());
  state.counters["stats"] = static_cast<double>(first->names.size());
}

void BM_Lo(benchmark::State& s) { Collect(s, "lo", "", false); }
BENCHMARK(BM_Lo);

void BM_Virtio(benchmark::State& s) {
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/sys/class/net", ec)) {
    auto drv = std::filesystem::read_symlink(e.path() / "device/driver", ec);
    if (!ec && drv.filename() == "virtio_net") {
      Collect(s, e.path().filename(), "", s.range(0) == 1);
      return;
    }
  }
  s.SkipWithError("no virtio_net interface");
}
BENCHMARK(BM_Virtio)->ArgName("cold")->Arg(0)->Arg(1);

void BM_Veth(benchmark::State& s) {
  if (g_netns.empty()) {
    s.SkipWithError("veth needs root (netns)");
    return;
  }
  Collect(s, "va", g_netns, s.range(0) == 1);
}
BENCHMARK(BM_Veth)->ArgName("cold")->Arg(0)->Arg(1);

// CPU cost of turning an mlx5 dump (45 stats, PFC on prio 3) into samples.
void BM_ParseAndEmitMlx5(benchmark::State& s) {
  std::ifstream in(std::string(FABRICMON_SOURCE_DIR) +
                   "/tests/fixtures/ethtool/mlx5-pfc-prio3.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  EthtoolText t = ParseEthtoolText(ss.str());
  RoceNetdev where{"mlx5_0", "1", "ens1f0np0"};
  for (auto _ : s) {
    MetricSink sink;
    EmitEthtoolMetrics(ParseEthtoolStats(t.stats.names, t.stats.values), where,
                       sink);
    benchmark::DoNotOptimize(sink.Take());
  }
  s.counters["stats"] = static_cast<double>(t.stats.names.size());
}
BENCHMARK(BM_ParseAndEmitMlx5);

bool Sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace
}  // namespace fabric

int main(int argc, char** argv) {
  using fabric::g_netns;
  using fabric::Sh;
  if (::geteuid() == 0) {
    std::string ns = "fmbench" + std::to_string(::getpid());
    if (Sh("ip netns add " + ns)) {
      if (Sh("ip -n " + ns + " link add va type veth peer name vb"))
        g_netns = ns;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (::geteuid() == 0) Sh("ip netns del fmbench" + std::to_string(::getpid()));
  return 0;
}
