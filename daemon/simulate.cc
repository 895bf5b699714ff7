// `fabricmon --simulate[=SCENARIO]`: one simulated H100-like host rendered
// live into a private temp directory by the fabric simulator (100 ms ticks,
// real time, after 60 s of simulated history), removed again when the
// Simulation is destroyed. SCENARIO is a scenario name or the path of a YAML
// timeline (*.yaml / *.yml).
#include "daemon/simulate.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "collectors/jobs.h"
#include "core/thread_annotations.h"
#include "simulator/mad.h"
#include "simulator/mad_socket.h"
#include "simulator/runner.h"
#include "simulator/timeline.h"
#include "sources/fd_read.h"
#include "sources/sysfs_parse.h"
#if FABRICMON_WITH_RDMA
#include "sources/mad/umad_transport.h"
#endif

namespace fabric {
namespace {

// The largest timeline file read: a scenario is a few KiB.
constexpr std::size_t kMaxTimelineBytes = 1 << 20;

namespace fs = std::filesystem;

// The running simulation's runner, for UseSimulatedMad.
Mutex active_mutex;
const sim::LiveRunner* active_runner GUARDED_BY(active_mutex) = nullptr;
// fabricmon-sim's MAD socket (--sim.mad-socket), empty when not attached.
std::string attached_socket GUARDED_BY(active_mutex);

#if FABRICMON_WITH_RDMA
// Host 0's IB HCA ports as libibumad would list them, from the model now.
std::vector<mad::LocalPort> SimulatedPorts(const sim::LiveRunner& runner) {
  std::vector<mad::LocalPort> out;
  runner.WithCluster([&](const sim::Cluster& c) {
    for (int d : c.hosts()[0].devices) {
      const sim::Device& dev = c.devices()[d];
      const sim::Port* p = c.FindPort(0, dev.name);
      if (!dev.present || !p || p->link_layer != sim::LinkLayer::kInfiniBand) {
        continue;
      }
      mad::LocalPort l;
      l.ca = dev.name;
      l.port = p->port_num;
      l.node_type = 1;
      l.node_guid = l.port_guid = p->guid;
      l.lid = p->lid;
      l.sm_lid = c.master_sm().lid;
      l.state = p->up ? 4 : 1;
      l.phys_state = p->up ? 5 : 2;
      l.link_layer = "InfiniBand";
      out.push_back(l);
    }
  });
  return out;
}

// The IB ports of a fabricmon-sim host tree, as libibumad would list them
// from /sys on a real host (it cannot be pointed at another root).
std::vector<mad::LocalPort> TreePorts(const Sysfs& sysfs, std::string* error) {
  std::vector<mad::LocalPort> out;
  const std::string cls = "class/infiniband";
  std::error_code ec;
  const auto devices = sysfs.List(cls, &ec);
  if (!devices) {
    if (ec != std::errc::no_such_file_or_directory) *error = ec.message();
    return out;
  }
  auto read = [&](const std::string& path) {
    const ReadResult r = sysfs.Read(path);
    return r.ok() ? std::string(TrimValue(*r)) : std::string();
  };
  for (const std::string& ca : *devices) {
    const std::string dir = cls + "/" + ca;
    const auto ports = sysfs.List(dir + "/ports");
    if (!ports) continue;  // removed meanwhile
    for (const std::string& n : *ports) {
      const std::string pd = dir + "/ports/" + n + "/";
      mad::LocalPort l;
      l.ca = ca;
      l.port = std::atoi(n.c_str());
      l.node_type = 1;
      l.link_layer = read(pd + "link_layer");
      l.node_guid = ParseGuid(read(dir + "/node_guid")).value;
      l.port_guid = ParseGidInterfaceId(read(pd + "gids/0")).value;
      l.lid = static_cast<std::uint16_t>(ParseHex(read(pd + "lid")).value);
      l.sm_lid =
          static_cast<std::uint16_t>(ParseHex(read(pd + "sm_lid")).value);
      l.state = static_cast<int>(ParseState(read(pd + "state")).value.id);
      l.phys_state =
          static_cast<int>(ParseState(read(pd + "phys_state")).value.id);
      if (l.port > 0 && l.link_layer == "InfiniBand") out.push_back(l);
    }
  }
  return out;
}

// A transport whose directed-route SMPs leave by `ca` port `port` (the
// first IB port when `ca` is empty); nullptr when there is no such port.
std::unique_ptr<MadTransport> OpenSimulatedPort(const sim::LiveRunner& runner,
                                                const std::string& ca,
                                                int port) {
  int index = -1;
  runner.WithCluster([&](const sim::Cluster& c) {
    for (int d : c.hosts()[0].devices) {
      const sim::Device& dev = c.devices()[d];
      const sim::Port* p = c.FindPort(0, dev.name, port == 0 ? 1 : port);
      if (!dev.present || !p || p->link_layer != sim::LinkLayer::kInfiniBand ||
          (!ca.empty() && ca != dev.name)) {
        continue;
      }
      index = static_cast<int>(p - c.ports().data());
      break;
    }
  });
  if (index < 0) return nullptr;
  return sim::MakeSimMadTransport(runner, {.local_port = index});
}
#endif

class LiveSimulation : public Simulation {
 public:
  LiveSimulation(sim::SimConfig config, fs::path root)
      : root_(std::move(root)), runner_(std::move(config), root_, true) {}
  ~LiveSimulation() override {
    {
      MutexLock hold(active_mutex);
      if (active_runner == &runner_) active_runner = nullptr;
    }
    runner_.Stop();
    runner_.Wait();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  bool Start(std::string* error) {
    // A minute of simulated history first: a real host's counters are never
    // all zero, and `--simulate --once` should show the scenario at work.
    runner_.Warmup(std::chrono::seconds(60));
    if (!runner_.RenderNow(error)) return false;
    runner_.Start();
    MutexLock hold(active_mutex);
    active_runner = &runner_;
    return true;
  }
  std::string sysfs_root() const override { return root_.string(); }
  std::string ethtool_dir() const override {
    return (root_ / sim::SysfsRenderer::kEthtoolDir).string();
  }

 private:
  fs::path root_;
  sim::LiveRunner runner_;
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<Simulation> StartSimulation(const std::string& scenario,
                                            std::string* error) {
  sim::SimConfig config;
  config.hosts = 1;
  if (EndsWith(scenario, ".yaml") || EndsWith(scenario, ".yml")) {
    FileRead file = ReadRegularFile(scenario, kMaxTimelineBytes);
    if (!file.ok()) {
      *error = "cannot read timeline " + scenario + ": " + file.error;
      return nullptr;
    }
    auto timeline = sim::ParseTimeline(file.text, error);
    if (!timeline) {
      *error = scenario + ": " + *error;
      return nullptr;
    }
    config.timeline = std::move(*timeline);
  } else {
    const auto s = sim::ParseScenario(scenario.empty() ? "steady" : scenario);
    if (!s) {
      std::string known;
      for (const auto& n : sim::ScenarioNames()) known += " " + n;
      *error = "unknown scenario '" + scenario + "' (known:" + known + ")";
      return nullptr;
    }
    config.timeline = sim::SingleScenario(*s);
  }
  // tmpfs when available: the renderer replaces files by rename every tick,
  // which a disk filesystem (ext4) makes slow enough to lag real time.
  std::error_code ec;
  fs::path base = fs::temp_directory_path();
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";
  }
  std::string tmpl = (base / "fabricmon-sim.XXXXXX");
  if (!::mkdtemp(tmpl.data())) {
    *error = "cannot create a temp directory for the simulated sysfs tree";
    return nullptr;
  }
  auto simulation = std::make_unique<LiveSimulation>(std::move(config), tmpl);
  if (!simulation->Start(error)) return nullptr;  // destructor cleans up
  return simulation;
}

void AttachSimulatedMad(const std::string& socket_path) {
  MutexLock hold(active_mutex);
  attached_socket = socket_path;
}

bool UseSimulatedMad(CollectorEnv* env) {
#if FABRICMON_WITH_RDMA
  MutexLock hold(active_mutex);
  if (!active_runner && !attached_socket.empty() && env->sysfs) {
    std::shared_ptr<const Sysfs> tree = env->sysfs;
    env->mad = [tree, path = attached_socket](
                   const std::string& ca,
                   int port) -> std::unique_ptr<MadTransport> {
      std::string error;
      mad::LocalPort local;
      if (!mad::PickLocalPort(TreePorts(*tree, &error), ca, port, &local)) {
        return nullptr;
      }
      auto transport = sim::ConnectMadSocket(path, local.port_guid, &error);
      if (!transport) spdlog::debug("{}", error);
      return transport;
    };
    env->local_ports = [tree](std::string* error) {
      return TreePorts(*tree, error);
    };
    return true;
  }
  if (!active_runner) return false;
  const sim::LiveRunner* runner = active_runner;
  env->mad = [runner](const std::string& ca, int port) {
    return OpenSimulatedPort(*runner, ca, port);
  };
  env->local_ports = [runner](std::string*) { return SimulatedPorts(*runner); };
  return true;
#else
  (void)env;
  return false;
#endif
}

void PointJobsAtSimulation(Config* config) {
  auto it = config->collectors.find("jobs");
  if (it == config->collectors.end()) return;
  JobsSettings jobs = SettingsAs<JobsSettings>(it->second);
  if (jobs.proc_root != JobsSettings{}.proc_root) return;
  jobs.proc_root = config->sysfs_root + "/proc";
  it->second.settings = std::make_shared<SettingsOf<JobsSettings>>(jobs);
}

}  // namespace fabric
