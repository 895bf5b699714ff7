#include "collectors/bench_agent.h"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>

#include "auth/key_file.h"
#include "benchtool/agent.h"
#include "benchtool/host_counters.h"
#include "config/yaml_keys.h"
#include "core/thread_annotations.h"
#include "sources/rail_class.h"

namespace fabric {
namespace {

constexpr const char* kReasons[] = {"bad_mac", "busy", "malformed", "replay",
                                    "version"};

// What the io thread's retry and Collect() share; the retry holds it weakly
// so a retired collector's pending retry does nothing.
struct AgentHolder {
  Mutex mu;
  std::unique_ptr<bench::BenchAgent> agent GUARDED_BY(mu);
  std::string error GUARDED_BY(mu) = "not started";
  bool stopped GUARDED_BY(mu) = false;

  // On the io thread: load the key and open the listener, unless open.
  void Open(boost::asio::io_context& io, const BenchAgentSettings& settings,
            const bench::CounterSource& counters,
            const bench::RailSource& rails) {
    MutexLock lock(mu);
    if (stopped || (agent && agent->Stats().listening)) return;
    std::string why;
    if (settings.key.empty()) {
      error = "key_file: not loaded (it is read at config load)";
      return;
    }
    bench::AgentOptions o;
    o.listen_address = settings.listen_address;
    o.key = settings.key;
    o.counters = counters;
    o.rails = rails;
    agent = std::make_unique<bench::BenchAgent>(io, std::move(o));
    if (!agent->Start(&why)) {
      error = why;
      agent.reset();
      return;
    }
    error.clear();
    spdlog::info("bench_agent: listening on {}", settings.listen_address);
  }
};

class BenchAgentCollector final : public Collector {
 public:
  BenchAgentCollector(const CollectorEnv& env, BenchAgentSettings settings)
      : settings_(std::move(settings)) {
    if (env.sysfs) {
      std::shared_ptr<EthtoolSource> ethtool;
      if (env.ethtool) ethtool = env.ethtool();
      counters_ = bench::HostCounterSource(env.sysfs, std::move(ethtool));
      // The host's rails for fabricmon-bench's fabric guard
      // (benchtool/fabric_guard.h), read when a session is prepared.
      rails_ = [sysfs = env.sysfs] { return ReadRailSummaries(*sysfs); };
    }
  }

  std::string_view Name() const override { return "bench_agent"; }

  void Start(boost::asio::io_context& io) override {
    io_ = &io;
    holder_->Open(io, settings_, counters_, rails_);
  }

  void Stop() override {
    MutexLock lock(holder_->mu);
    if (holder_->agent) holder_->agent->Stop();
    holder_->agent.reset();
    holder_->stopped = true;
  }

  bool Collect(MetricSink& sink) override {
    bench::AgentStats s;
    std::string error;
    {
      MutexLock lock(holder_->mu);
      if (holder_->agent) s = holder_->agent->Stats();
      error = holder_->error;
    }
    sink.Gauge("fabric_bench_agent_listening",
               "1 while the fabricmon-bench agent listener is open.", {},
               s.listening ? 1 : 0);
    sink.Counter("fabric_bench_agent_sessions_total",
                 "fabricmon-bench sessions this agent accepted.", {},
                 static_cast<double>(s.sessions));
    for (const char* reason : kReasons) {
      auto it = s.refused.find(reason);
      sink.Counter(
          "fabric_bench_agent_refused_total",
          "fabricmon-bench control requests refused, by reason.",
          {{"reason", reason}},
          it == s.refused.end() ? 0.0 : static_cast<double>(it->second));
    }
    sink.Counter("fabric_bench_agent_transmit_bytes_total",
                 "Benchmark payload bytes this agent sent.", {},
                 static_cast<double>(s.transmit_bytes));
    sink.Counter("fabric_bench_agent_receive_bytes_total",
                 "Benchmark payload bytes this agent received.", {},
                 static_cast<double>(s.receive_bytes));
    if (s.listening) return true;
    sink.Skip("bench_agent: " +
              (io_ ? error : "listens only in the running daemon"));
    if (io_) {
      boost::asio::post(
          *io_, [w = std::weak_ptr(holder_), io = io_, settings = settings_,
                 counters = counters_, rails = rails_] {
            if (auto h = w.lock()) h->Open(*io, settings, counters, rails);
          });
    }
    return false;
  }

 private:
  bench::CounterSource counters_;  // null = no counters
  bench::RailSource rails_;        // null = no rails reported
  const BenchAgentSettings settings_;
  boost::asio::io_context* io_ = nullptr;
  std::shared_ptr<AgentHolder> holder_ = std::make_shared<AgentHolder>();
};

}  // namespace

std::unique_ptr<Collector> MakeBenchAgentCollector(
    const CollectorEnv& env, const CollectorConfig& config) {
  return std::make_unique<BenchAgentCollector>(
      env, SettingsAs<BenchAgentSettings>(config));
}

CollectorSpec BenchAgentCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "bench_agent";
  spec.enabled = false;
  spec.keys = {"listen_address", "key_file"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig& generic) {
    BenchAgentSettings settings;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark& mark) {
                 if (key == "listen_address") {
                   settings.listen_address = Scalar(value, key_path);
                   auto colon = settings.listen_address.rfind(':');
                   if (colon == std::string::npos ||
                       colon + 1 == settings.listen_address.size()) {
                     Fail(key_path, mark, "must be host:port or :port");
                   }
                 } else if (key == "key_file") {
                   settings.key_file = Scalar(value, key_path);
                 }
               });
    if (generic.enabled) {
      // The key's own line; the `enabled` line when it is not written.
      const YAML::Mark mark =
          KeyMark(node, settings.key_file.empty() ? "enabled" : "key_file");
      const std::string key_path = Join(path, "key_file");
      if (settings.key_file.empty()) {
        Fail(key_path, mark, "is required when bench_agent is enabled");
      }
      // As for probes: --check-config and a reload catch a missing, short or
      // group-readable key before the agent runs on it.
      std::string error;
      if (auto key = LoadKeyFile(SecretPath(settings.key_file, key_path, mark),
                                 &error)) {
        settings.key = std::move(*key);
      } else {
        Fail(key_path, mark, error);
      }
    }
    return std::make_shared<SettingsOf<BenchAgentSettings>>(settings);
  };
  spec.make = MakeBenchAgentCollector;
  return spec;
}

}  // namespace fabric
