#include "daemon/collection.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "collectors/registry.h"
#include "core/thread_annotations.h"
#include "daemon/simulate.h"
#include "sources/ethtool_file.h"
#include "sources/ethtool_ioctl.h"
#if FABRICMON_WITH_RDMA
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
    out.push_back({spec.name, cc, spec.make(env, cc)});
  }
  return out;
}

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
  // One umad port per (ca, port) for the whole process, shared by the
  // collectors that send MADs (their runs take turns).
  struct Shared {
    Mutex mutex;
    std::map<std::pair<std::string, int>,
             std::pair<std::shared_ptr<MadTransport>, std::shared_ptr<Mutex>>>
        open GUARDED_BY(mutex);
  };
  // Under --simulate or --sim.mad-socket, MADs go to the simulated fabric.
  if (UseSimulatedMad(&env)) return env;
  // MADs go to the live fabric: not when reading a recorded or simulated
  // tree (`sysfs_root` elsewhere than /sys), where they would query
  // whatever fabric this host happens to be on.
  if (config.sysfs_root != "/sys" && config.sysfs_root != "/sys/") return env;
  // Touch libibumad once here, on one thread: ibsim's umad2sim sets itself
  // up lazily on the first call and aborts the process when two collector
  // threads make that first call at once.
  {
    std::string ignored;
    mad::LocalIbPorts(&ignored);
  }
  env.mad = [shared = std::make_shared<Shared>()](
                const std::string& ca,
                int port) -> std::unique_ptr<MadTransport> {
    MutexLock hold(shared->mutex);
    // Resolve "the first active port" so that every user of one port
    // shares one fd (umad2sim aborts the process on a second open).
    std::string error;
    mad::LocalPort local;
    if (!mad::PickLocalPort(mad::LocalIbPorts(&error), ca, port, &local)) {
      return nullptr;
    }
    auto& slot = shared->open[{local.ca, local.port}];
    if (!slot.first) {
      slot.first = mad::UmadTransport::Open(local.ca, local.port, &error);
      if (!slot.first) {
        spdlog::debug("{}", error);
        return nullptr;
      }
      slot.second = std::make_shared<Mutex>();
    }
    return ShareMadTransport(slot.first, slot.second);
  };
#endif
  return env;
}

bool SameCollectorSettings(const Config& a, const Config& b,
                           const std::string& name) {
  CollectorConfig ca = a.Collector(name), cb = b.Collector(name);
  return ca.enabled && ca == cb && a.sysfs_root == b.sysfs_root &&
         a.ethtool_dir == b.ethtool_dir;
}

std::shared_ptr<Snapshot> RunCollection(const NamedCollector& c,
                                        double last_success_seconds) {
  const std::string& name = c.name;
  auto snap = std::make_shared<Snapshot>();
  snap->collector = name;
  MetricSink sink;
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
