#include "daemon/collection.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <thread>

#include "collectors/registry.h"
#include "core/thread_annotations.h"
#include "daemon/simulate.h"
#include "sources/ethtool_file.h"
#include "sources/ethtool_ioctl.h"
#if FABRICMON_WITH_RDMA
#include "sources/mad/broker_client.h"
#include "sources/mad/umad_transport.h"
#endif

namespace fabric {

double UnixNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::vector<NamedCollector> BuildCollectors(
    const Config& config, std::shared_ptr<const Sysfs> sysfs,
    const std::function<bool(const std::string&)>& want) {
  const CollectorEnv env = MakeCollectorEnv(config, std::move(sysfs));
  std::vector<NamedCollector> out;
  for (const auto& spec : CollectorSpecs()) {
    CollectorConfig cc = config.Collector(spec.name);
    if (!cc.enabled || (want && !want(spec.name))) continue;
    NamedCollector& c = out.emplace_back();
    c.name = spec.name;
    c.config = cc;
    c.collector = spec.make(env, cc);
    if (!cc.series.empty()) c.gate = std::make_shared<CounterGate>(cc.series);
  }
  return out;
}

#if FABRICMON_WITH_RDMA
namespace {

using PortOpener =
    std::function<std::unique_ptr<MadTransport>(const std::string&, int)>;

// One transport per (ca, port) for the whole env, shared by the collectors
// that send MADs (their runs take turns: ShareMadTransport). `open` makes a
// new one; `usable` says whether a kept one still works (a broker
// connection that broke is replaced: that is how a dead broker restarts).
PortOpener SharedOpener(
    std::function<std::shared_ptr<MadTransport>(const std::string&, int)> open,
    std::function<bool(const MadTransport&)> usable) {
  struct Shared {
    Mutex mutex;
    std::map<std::pair<std::string, int>,
             std::pair<std::shared_ptr<MadTransport>, std::shared_ptr<Mutex>>>
        open GUARDED_BY(mutex);
  };
  return [shared = std::make_shared<Shared>(), open = std::move(open),
          usable = std::move(usable)](
             const std::string& ca, int port) -> std::unique_ptr<MadTransport> {
    MutexLock hold(shared->mutex);
    auto& slot = shared->open[{ca, port}];
    if (!slot.first || !usable(*slot.first)) {
      slot.first = open(ca, port);
      if (!slot.first) return nullptr;
      slot.second = std::make_shared<Mutex>();
    }
    return ShareMadTransport(slot.first, slot.second);
  };
}

// umad opened by the daemon itself (`mad_broker: in_process`).
PortOpener InProcessMad() {
  // Touch libibumad once here, on one thread: ibsim's umad2sim sets itself
  // up lazily on the first call and aborts the process when two collector
  // threads make that first call at once.
  {
    std::string ignored;
    mad::LocalIbPorts(&ignored);
  }
  spdlog::warn(
      "mad_broker: in_process: this process opens umad itself, so the one "
      "that serves HTTP could send any MAD; use the broker where you can");
  return SharedOpener(
      [](const std::string& ca, int port) -> std::shared_ptr<MadTransport> {
        // Resolve "the first active port" so that every user of one port
        // shares one fd (umad2sim aborts the process on a second open).
        std::string error;
        mad::LocalPort local;
        if (!mad::PickLocalPort(mad::LocalIbPorts(&error), ca, port, &local)) {
          return nullptr;
        }
        auto t = mad::UmadTransport::Open(local.ca, local.port, &error);
        if (!t) {
          spdlog::debug("{}", error);
          return nullptr;
        }
        // The broker's allow-list still applies, in process.
        return mad::broker::AllowListed(std::move(t));
      },
      [](const MadTransport&) { return true; });
}

mad::broker::Endpoint BrokerEndpoint(const std::string& setting) {
  mad::broker::Endpoint endpoint;
  if (setting != "spawn") {
    endpoint.socket_path = setting;
    return endpoint;
  }
  // Next to this executable: the build directory, or the bindir it was
  // installed to.
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  endpoint.program = (self.parent_path() / "fabricmon-mad-broker").string();
  return endpoint;
}

// MADs and the local port list through the broker; the daemon never opens
// umad. One set of connections per endpoint for the whole process, kept
// across reloads (a reload that rebuilds some collectors must not leave
// two brokers per port). A failure is logged when it starts and when it
// ends, not per try.
void BrokerMad(const mad::broker::Endpoint& endpoint, CollectorEnv* env) {
  struct Service {
    std::shared_ptr<mad::broker::PortLister> lister;
    std::shared_ptr<std::atomic<bool>> failing;
    PortOpener open;
  };
  struct Services {
    Mutex mutex;
    std::map<std::string, Service> by_endpoint GUARDED_BY(mutex);
  };
  static Services services;
  mad::broker::ProcessCounters().used = true;
  Service service;
  {
    MutexLock hold(services.mutex);
    Service& s =
        services.by_endpoint[endpoint.socket_path + "\n" + endpoint.program];
    if (!s.lister) {
      s.lister = std::make_shared<mad::broker::PortLister>(endpoint);
      s.failing = std::make_shared<std::atomic<bool>>(false);
      auto open_failing = std::make_shared<std::atomic<bool>>(false);
      s.open = SharedOpener(
          [endpoint, open_failing](const std::string& ca,
                                   int port) -> std::shared_ptr<MadTransport> {
            std::string error;
            auto t = mad::broker::Transport::Open(endpoint, ca, port, &error);
            if (!t && !open_failing->exchange(true)) {
              spdlog::warn("{} port {}: {}", ca, port, error);
            } else if (t && open_failing->exchange(false)) {
              spdlog::info("{} port {}: MAD broker serving again", ca, port);
            }
            return t;
          },
          [](const MadTransport& t) {
            return !static_cast<const mad::broker::Transport&>(t).broken();
          });
    }
    service = s;
  }
  env->local_ports = [lister = service.lister,
                      failing = service.failing](std::string* error) {
    auto ports = lister->List(error);
    if (!error->empty() && !failing->exchange(true)) {
      spdlog::warn("MAD broker: {}", *error);
    } else if (error->empty() && failing->exchange(false)) {
      spdlog::info("MAD broker answering again");
    }
    return ports;
  };
  env->mad = service.open;
}

}  // namespace
#endif

CollectorEnv MakeCollectorEnv(const Config& config,
                              std::shared_ptr<const Sysfs> sysfs) {
  CollectorEnv env;
  env.sysfs = std::move(sysfs);
  if (config.ethtool_dir.empty()) {
    env.ethtool = MakeRealEthtoolSource;
  } else {
    env.ethtool = [dir = config.ethtool_dir] {
      return MakeFileEthtoolSource(dir);
    };
    env.ethtool_is_kernel = false;
  }
#if FABRICMON_WITH_RDMA
  // Under --simulate or --sim.mad-socket, MADs go to the simulated fabric.
  if (UseSimulatedMad(&env)) return env;
  // MADs go to the live fabric: not when reading a recorded or simulated
  // tree (`sysfs_root` elsewhere than /sys), where they would query
  // whatever fabric this host happens to be on.
  if (config.sysfs_root != "/sys" && config.sysfs_root != "/sys/") return env;
  if (config.mad_broker == "in_process") {
    env.mad = InProcessMad();
  } else {
    BrokerMad(BrokerEndpoint(config.mad_broker), &env);
  }
#endif
  return env;
}

bool SameCollectorSettings(const Config& a, const Config& b,
                           const std::string& name) {
  CollectorConfig ca = a.Collector(name), cb = b.Collector(name);
  return ca.enabled && ca == cb && a.sysfs_root == b.sysfs_root &&
         a.ethtool_dir == b.ethtool_dir && a.mad_broker == b.mad_broker;
}

std::shared_ptr<Snapshot> RunCollection(const NamedCollector& c,
                                        double last_success_seconds) {
  const std::string& name = c.name;
  auto snap = std::make_shared<Snapshot>();
  snap->collector = name;
  MetricSink sink;
  sink.Gate(c.gate.get());
  NamedCollector::Published& published = *c.published;
  if (published.before && published.before.use_count() == 1) {
    // Ours alone: whoever held it last is done with it (their release
    // happens-before this, through the count and the fence).
    std::atomic_thread_fence(std::memory_order_acquire);
    sink.Recycle(std::move(published.before->families));
  }
  published.before = std::move(published.last);
  auto start = std::chrono::steady_clock::now();
  // The one place a collector's exception is caught (collector.h).
  try {
    snap->success = c.collector->Collect(sink);
  } catch (const std::exception& e) {
    sink.Skip(name + ": " + e.what());
    snap->success = false;
  } catch (...) {
    sink.Skip(name + ": unknown exception");
    snap->success = false;
  }
  snap->duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double finished = UnixNow();
  snap->skipped = sink.skipped();
  for (const auto& reason : sink.skip_reasons()) {
    spdlog::debug("{}: skipped {}", name, reason);
  }
  snap->families = sink.Take(c.order.get());
  snap->last_success_seconds = snap->success ? finished : last_success_seconds;
  published.last = snap;
  return snap;
}

std::shared_ptr<Snapshot> TimedOutSnapshot(const std::string& name,
                                           std::chrono::microseconds timeout,
                                           double last_success_seconds) {
  auto snap = std::make_shared<Snapshot>();
  snap->collector = name;
  snap->success = false;
  snap->stuck = true;
  snap->duration_seconds = std::chrono::duration<double>(timeout).count();
  snap->last_success_seconds = last_success_seconds;
  return snap;
}

std::shared_ptr<Snapshot> RunCollectionWithTimeout(const NamedCollector& c,
                                                   bool* abandoned) {
  auto task = std::make_shared<std::packaged_task<std::shared_ptr<Snapshot>()>>(
      [c] { return RunCollection(c, 0); });
  auto result = task->get_future();
  // Detached so a read stuck in the kernel cannot block the caller; the
  // task owns a copy of `c`, so the collector outlives it.
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(c.config.timeout) == std::future_status::ready) {
    return result.get();
  }
  spdlog::warn("{}: collection overran its timeout of {}s; reported as failed",
               c.name, std::chrono::duration<double>(c.config.timeout).count());
  *abandoned = true;
  return TimedOutSnapshot(c.name, c.config.timeout, 0);
}

}  // namespace fabric
