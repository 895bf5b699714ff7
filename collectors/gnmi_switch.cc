#include "collectors/gnmi_switch.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <sstream>
#include <thread>

#include "collectors/gnmi_client.h"
#include "collectors/gnmi_parse.h"
#include "config/yaml_keys.h"
#include "core/thread_annotations.h"

namespace fabric {
namespace {

using gnmi_switch::ParsedNotification;
using gnmi_switch::SeriesKey;

constexpr std::size_t kMaxSecretBytes = 64 * 1024;
// Series kept per switch at most: a 64-port switch with every queue and
// priority has ~2,000 (26 a port plus 8 queues x 8 and 8 priorities x 4);
// a target inventing port or queue names must not grow the daemon without
// bound. Past it a new series is counted (reason "series_cap"), not kept.
constexpr std::size_t kMaxSeriesPerSwitch = 65536;
constexpr std::size_t kMaxNeighborsPerSwitch = 4096;

struct Neighbor {
  std::string system_name, port_id, port_description, chassis_id;
};

// What the collector knows of one switch. Each switch has its own lock:
// 64 streams delivering ~300 notifications a second each contended on one
// (docs/measurements.md, "Ethernet switches over gNMI").
struct SwitchState {
  explicit SwitchState(GnmiSwitchTarget t) : target(std::move(t)) {}
  const GnmiSwitchTarget target;
  Mutex mu;
  bool up GUARDED_BY(mu) = false;
  bool warned GUARDED_BY(mu) = false;  // a failure streak logged
  double last_message GUARDED_BY(mu) = 0;
  double connects GUARDED_BY(mu) = 0;
  double updates GUARDED_BY(mu) = 0;
  double unknown_paths GUARDED_BY(mu) = 0;
  double bad_values GUARDED_BY(mu) = 0;
  double over_cap GUARDED_BY(mu) = 0;
  std::map<SeriesKey, double> values GUARDED_BY(mu);
  // port -> neighbour id -> fields
  std::map<std::string, std::map<std::string, Neighbor>> lldp GUARDED_BY(mu);
  std::size_t neighbors GUARDED_BY(mu) = 0;  // entries of `lldp`
  // The stream in flight.
  std::shared_ptr<gnmi_switch::SubscribeCall> call GUARDED_BY(mu);

  void Apply(const ParsedNotification& p) REQUIRES(mu) {
    for (const auto& port : p.deleted_ports) {
      std::erase_if(values,
                    [&](const auto& kv) { return kv.first.port == port; });
      if (auto it = lldp.find(port); it != lldp.end()) {
        neighbors -= it->second.size();
        lldp.erase(it);
      }
    }
    for (const auto& v : p.values) {
      auto it = values.find(v.key);
      if (it != values.end()) {
        it->second = v.value;
      } else if (values.size() < kMaxSeriesPerSwitch) {
        values.emplace(v.key, v.value);
      } else {
        ++over_cap;
      }
    }
    for (const auto& l : p.lldp) {
      auto port = lldp.find(l.port);
      const bool known =
          port != lldp.end() && port->second.count(l.neighbor_id);
      if (!known && neighbors >= kMaxNeighborsPerSwitch) {
        ++over_cap;
        continue;
      }
      neighbors += !known;
      Neighbor& n = lldp[l.port][l.neighbor_id];
      if (l.field == "system-name") n.system_name = l.value;
      if (l.field == "port-id") n.port_id = l.value;
      if (l.field == "port-description") n.port_description = l.value;
      if (l.field == "chassis-id") n.chassis_id = l.value;
    }
    unknown_paths += p.unknown_paths;
    bad_values += p.bad_values;
  }

  // Down: its series go (absent, not zero).
  void Down() REQUIRES(mu) {
    up = false;
    values.clear();
    lldp.clear();
    neighbors = 0;
  }
};

constexpr std::string_view kPortHelp =
    "switch port value over gNMI (docs/gnmi.md, docs/metrics.md)";

void EmitValue(const std::string& sw, const SeriesKey& k, double value,
               MetricSink& sink) {
  const bool counter = k.metric.ends_with("_total");
  auto put = [&](LabelRefs labels) {
    if (counter) {
      sink.Counter(k.metric, kPortHelp, labels, value);
    } else {
      sink.Gauge(k.metric, kPortHelp, labels, value);
    }
  };
  const bool keyed = !k.key_label.empty(), fixed = !k.fixed_label.empty();
  if (keyed && fixed) {
    put({{"switch", sw},
         {"port", k.port},
         {k.key_label, k.key_value},
         {k.fixed_label, k.fixed_value}});
  } else if (keyed) {
    put({{"switch", sw}, {"port", k.port}, {k.key_label, k.key_value}});
  } else if (fixed) {
    put({{"switch", sw}, {"port", k.port}, {k.fixed_label, k.fixed_value}});
  } else {
    put({{"switch", sw}, {"port", k.port}});
  }
}

class GnmiSwitchCollector final : public Collector {
 public:
  GnmiSwitchCollector(const CollectorEnv& env, GnmiSettings settings,
                      gnmi_switch::SubscribeCallFactory calls)
      : env_(env), settings_(std::move(settings)), calls_(std::move(calls)) {
    for (const auto& t : settings_.switches) {
      if (GnmiShardContains(t.name, settings_.shard_index,
                            settings_.shard_count))
        switches_.push_back(std::make_unique<SwitchState>(t));
    }
  }
  ~GnmiSwitchCollector() override { Stop(); }

  std::string_view Name() const override { return "gnmi"; }

  void Start(boost::asio::io_context&) override { StartThreads(); }

  void Stop() override {
    {
      MutexLock lock(mu_);
      if (!started_ || stopping_) return;
      stopping_ = true;
    }
    for (auto& s : switches_) {
      MutexLock lock(s->mu);
      if (s->call) s->call->Cancel();
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  bool Collect(MetricSink& sink) override {
    StartThreads();  // `--once` has no Start(): its first collection starts
    for (const auto& s : switches_) {
      MutexLock lock(s->mu);
      Emit(*s, sink);
    }
    return true;
  }

 private:
  bool Stopping() {
    MutexLock lock(mu_);
    return stopping_;
  }

  void StartThreads() {
    MutexLock lock(mu_);
    if (started_) return;
    started_ = true;
    for (auto& s : switches_) {
      threads_.emplace_back([this, st = s.get()] { Run(*st); });
    }
    threads_.emplace_back([this] { Watchdog(); });
  }

  void Emit(const SwitchState& s, MetricSink& sink) REQUIRES(s.mu) {
    const std::string& sw = s.target.name;
    sink.Gauge("fabric_gnmi_switch_up",
               "1 while the switch's gNMI stream delivers, else 0",
               LabelRefs{{"switch", sw}}, s.up ? 1 : 0);
    sink.Counter("fabric_gnmi_connects_total",
                 "Subscribe streams opened to the switch",
                 LabelRefs{{"switch", sw}}, s.connects);
    sink.Counter("fabric_gnmi_updates_total",
                 "gNMI notifications received from the switch",
                 LabelRefs{{"switch", sw}}, s.updates);
    sink.Counter("fabric_gnmi_skipped_updates_total",
                 "updates not exported: a path not read or a bad value",
                 LabelRefs{{"switch", sw}, {"reason", "unknown_path"}},
                 s.unknown_paths);
    sink.Counter("fabric_gnmi_skipped_updates_total",
                 "updates not exported: a path not read or a bad value",
                 LabelRefs{{"switch", sw}, {"reason", "bad_value"}},
                 s.bad_values);
    sink.Counter("fabric_gnmi_skipped_updates_total",
                 "updates not exported: a path not read or a bad value",
                 LabelRefs{{"switch", sw}, {"reason", "series_cap"}},
                 s.over_cap);
    for (const auto& [key, value] : s.values) EmitValue(sw, key, value, sink);
    for (const auto& [port, neighbors] : s.lldp) {
      for (const auto& [id, n] : neighbors) {
        sink.Gauge("fabric_switch_port_link_info",
                   "the LLDP neighbour on the switch port (1)",
                   LabelRefs{{"switch", sw},
                             {"port", port},
                             {"remote_name", n.system_name},
                             {"remote_port", n.port_id},
                             {"remote_port_description", n.port_description},
                             {"remote_chassis_id", n.chassis_id}},
                   1);
      }
    }
  }

  std::string ReadSecret(const std::string& path, std::string* error) const {
    if (path.empty()) return {};
    auto read = env_.read_text_file(path, kMaxSecretBytes);
    if (!read.error.empty()) *error = path + ": " + read.error;
    return read.text;
  }

  // One stream: connect, subscribe, read until it fails or we stop. Returns
  // why it ended.
  std::string Stream(SwitchState& s) {
    std::string error;
    gnmi_switch::ClientOptions o;
    o.insecure = settings_.insecure;
    if (!o.insecure) {
      o.ca_pem = ReadSecret(settings_.ca_file, &error);
      o.cert_pem = ReadSecret(settings_.cert_file, &error);
      o.key_pem = ReadSecret(settings_.key_file, &error);
    }
    o.tls_server_name = settings_.tls_server_name;
    o.username = settings_.username;
    o.password = ReadSecret(settings_.password_file, &error);
    while (!o.password.empty() &&
           (o.password.back() == '\n' || o.password.back() == '\r'))
      o.password.pop_back();
    o.sample_interval = settings_.sample_interval;
    o.sonic_counters_db = s.target.sonic_counters_db;
    if (!error.empty()) return error;
    std::shared_ptr<gnmi_switch::SubscribeCall> call =
        calls_(s.target.address, o);
    {
      MutexLock lock(s.mu);
      s.call = call;
      s.last_message = env_.clock();  // the deadline runs from the connect
    }
    // Stop() cancels the calls it sees; one made after it is cancelled here.
    if (Stopping()) call->Cancel();
    gnmi_switch::SubscribeCall::Handlers h;
    h.subscribed = [&] {
      MutexLock lock(s.mu);
      ++s.connects;
    };
    // One lock per response.
    h.response = [&](const ParsedNotification* parsed) {
      MutexLock lock(s.mu);
      s.last_message = env_.clock();
      if (parsed) {
        ++s.updates;
        s.Apply(*parsed);
      }
      if (s.up) return;
      s.up = true;
      if (s.warned)
        spdlog::info("gnmi: switch {} ({}) answers again", s.target.name,
                     s.target.address);
      s.warned = false;
    };
    std::string ended = call->Run(h);
    MutexLock lock(s.mu);
    s.call.reset();
    return ended;
  }

  void Run(SwitchState& s) {
    auto backoff = std::chrono::microseconds(std::chrono::seconds(1));
    while (!Stopping()) {
      std::string why = Stream(s);
      bool was_up = false;
      {
        MutexLock lock(s.mu);
        was_up = s.up;
        s.Down();
        if (!s.warned && !Stopping()) {
          spdlog::warn(
              "gnmi: switch {} ({}): {}; its series are dropped until it "
              "answers, retrying with back-off",
              s.target.name, s.target.address, why);
          s.warned = true;
        }
      }
      if (was_up) backoff = std::chrono::seconds(1);
      MutexLock lock(mu_);
      wake_.wait_for(lock.native(), backoff,
                     [&]() REQUIRES(mu_) { return stopping_; });
      backoff = std::min(backoff * 2, settings_.max_backoff);
    }
  }

  // Cancels a stream that brought nothing for `deadline` (a switch that
  // accepted the connection and went silent, or never answers the
  // subscription); its thread then reconnects.
  void Watchdog() {
    const double deadline =
        std::chrono::duration<double>(settings_.deadline).count();
    const auto tick = std::min<std::chrono::microseconds>(
        settings_.deadline / 4, std::chrono::seconds(1));
    while (!Stopping()) {
      const double now = env_.clock();
      for (auto& s : switches_) {
        MutexLock lock(s->mu);
        if (s->call && now - s->last_message > deadline) {
          s->call->Cancel();
          s->last_message = now;  // once per deadline
        }
      }
      MutexLock lock(mu_);
      wake_.wait_for(lock.native(), tick,
                     [&]() REQUIRES(mu_) { return stopping_; });
    }
  }

  const CollectorEnv env_;
  const GnmiSettings settings_;
  const gnmi_switch::SubscribeCallFactory calls_;
  Mutex mu_;  // started_, stopping_; the threads' wake-ups
  std::condition_variable wake_;
  bool started_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Fixed at construction; each switch's state under its own lock.
  std::vector<std::unique_ptr<SwitchState>> switches_;
  std::vector<std::thread> threads_;  // Start/Stop (the io thread), --once
};

}  // namespace

bool GnmiShardContains(const std::string& name, int index, int count) {
  if (count <= 1) return true;
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<std::uint64_t>(count)) == index - 1;
}

std::unique_ptr<Collector> MakeGnmiSwitchCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    gnmi_switch::SubscribeCallFactory calls) {
  if (!calls) calls = gnmi_switch::NewGrpcSubscribeCall;
  return std::make_unique<GnmiSwitchCollector>(
      env, SettingsAs<GnmiSettings>(config), std::move(calls));
}

namespace {

GnmiSettings ParseGnmiSettings(const YAML::Node& node,
                               const std::string& path) {
  using namespace config_keys;
  GnmiSettings s;
  YAML::Mark password_mark, tls_mark;
  bool tls_keys = false;
  ForEachKey(
      node, path,
      [&](const std::string& key, const YAML::Node& value,
          const std::string& key_path, const YAML::Mark& mark) {
        if (key == "switches") {
          if (!value.IsSequence())
            Fail(key_path, mark, "must be a list of {name, address}");
          std::size_t i = 0;
          for (const auto& item : value) {
            const std::string item_path =
                key_path + "[" + std::to_string(i++) + "]";
            GnmiSwitchTarget t;
            ForEachKey(item, item_path,
                       [&](const std::string& k, const YAML::Node& v,
                           const std::string& kp, const YAML::Mark& m) {
                         if (k == "name") {
                           t.name = Scalar(v, kp);
                         } else if (k == "address") {
                           t.address = Scalar(v, kp);
                         } else if (k == "paths") {
                           const std::string paths = Scalar(v, kp);
                           if (paths != "openconfig" && paths != "sonic")
                             Fail(kp, m, "is not openconfig or sonic");
                           t.sonic_counters_db = paths == "sonic";
                         } else {
                           Fail(kp, m, "unknown key (name, address, paths)");
                         }
                       });
            if (t.address.empty() || t.address.find(':') == std::string::npos)
              Fail(item_path, item.Mark(), "needs an address host:port");
            if (t.name.empty()) t.name = t.address;
            for (const auto& other : s.switches) {
              if (other.name == t.name)
                Fail(item_path, item.Mark(),
                     "switch " + Quote(t.name) + " is listed twice");
            }
            s.switches.push_back(std::move(t));
          }
        } else if (key == "insecure") {
          s.insecure = Bool(value, key_path);
        } else if (key == "ca_file" || key == "cert_file" ||
                   key == "key_file") {
          std::string file = Scalar(value, key_path);
          if (!file.empty()) {
            file = SecretPath(file, key_path, mark);
            tls_keys = true;
            tls_mark = mark;
          }
          (key == "ca_file"     ? s.ca_file
           : key == "cert_file" ? s.cert_file
                                : s.key_file) = file;
        } else if (key == "tls_server_name") {
          s.tls_server_name = Scalar(value, key_path);
        } else if (key == "username") {
          s.username = Scalar(value, key_path);
        } else if (key == "password_file") {
          s.password_file = Scalar(value, key_path);
          if (!s.password_file.empty())
            s.password_file = SecretPath(s.password_file, key_path, mark);
          password_mark = mark;
        } else if (key == "sample_interval") {
          s.sample_interval =
              Duration(value, key_path, std::chrono::milliseconds(100));
        } else if (key == "deadline") {
          s.deadline =
              Duration(value, key_path, std::chrono::milliseconds(100));
        } else if (key == "max_backoff") {
          s.max_backoff = Duration(value, key_path, std::chrono::seconds(1));
        } else if (key == "shard") {
          const std::string text = Scalar(value, key_path);
          int i = 0, n = 0;
          char slash = 0;
          std::istringstream in(text);
          if (!(in >> i >> slash >> n) || slash != '/' || i < 1 || n < 1 ||
              i > n || !in.eof())
            Fail(key_path, mark, "is not i/n with 1 <= i <= n (e.g. 1/4)");
          s.shard_index = i;
          s.shard_count = n;
        }
      });
  if (s.insecure && tls_keys)
    Fail(Join(path, "insecure"), tls_mark,
         "ca_file/cert_file/key_file are TLS settings; insecure turns TLS off");
  if (s.cert_file.empty() != s.key_file.empty())
    Fail(Join(path, s.cert_file.empty() ? "key_file" : "cert_file"), tls_mark,
         "cert_file and key_file go together (the client certificate)");
  if (!s.password_file.empty() && s.username.empty())
    Fail(Join(path, "password_file"), password_mark, "needs a username");
  return s;
}

}  // namespace

CollectorSpec GnmiSwitchCollectorSpec() {
  CollectorSpec spec;
  spec.name = "gnmi";
  spec.enabled = false;
  // Collect() copies what the streams delivered: as often as the samples
  // arrive is enough.
  spec.interval = std::chrono::seconds(5);
  spec.keys = {"switches",  "insecure",      "ca_file",
               "cert_file", "key_file",      "tls_server_name",
               "username",  "password_file", "sample_interval",
               "deadline",  "max_backoff",   "shard"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    return std::make_shared<SettingsOf<GnmiSettings>>(
        ParseGnmiSettings(node, path));
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeGnmiSwitchCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
