#include "collectors/probe.h"

#include <net/if.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "auth/key_file.h"
#include "config/yaml_keys.h"
#include "core/thread_annotations.h"
#include "probe/engine.h"
#include "probe/peers.h"
#include "probe/rdma_transport.h"
#include "probe/udp_transport.h"
#include "sources/netdev_port.h"

namespace fabric {
namespace {

using probe::Engine;
using probe::ResolvedPeer;

// Publishing a snapshot every probe interval (1 ms) would cost more than
// the probes; a second is finer than any scrape.
constexpr auto kPublishEvery = std::chrono::seconds(1);
// The largest peers file read: ~30 bytes a peer, far above any fleet.
constexpr std::size_t kMaxPeersFileBytes = 4 << 20;

probe::TransportMode Mode(const std::string& s) {
  if (s == "udp") return probe::TransportMode::kUdp;
  if (s == "rdma") return probe::TransportMode::kRdma;
  return probe::TransportMode::kAuto;
}

// How long a netdev's fabric port is trusted before sysfs is read again: a
// port exchange comes at most once a second per peer, and a netdev is
// re-plugged to another port only by hand.
constexpr auto kPortOfTtl = std::chrono::seconds(10);

// EngineOptions::port_of over `sysfs`: the interface's name, then the RDMA
// port behind it (sources/netdev_port.h), cached per ifindex. Runs on the
// io thread only.
std::function<probe::PortIdentity(int)> PortOf(
    std::shared_ptr<const Sysfs> sysfs) {
  if (!sysfs) return nullptr;
  struct Entry {
    probe::PortIdentity id;
    std::chrono::steady_clock::time_point until;
  };
  auto cache = std::make_shared<std::map<int, Entry>>();
  return [sysfs, cache](int ifindex) -> probe::PortIdentity {
    if (ifindex <= 0) return {};
    const auto now = std::chrono::steady_clock::now();
    auto it = cache->find(ifindex);
    if (it != cache->end() && it->second.until > now) return it->second.id;
    probe::PortIdentity id;
    char name[IF_NAMESIZE] = {};
    std::string error;
    if (::if_indextoname(static_cast<unsigned>(ifindex), name)) {
      if (auto p = FabricPortOfNetdev(*sysfs, name, &error)) {
        id.node_guid = p->node_guid;
        id.port_guid = p->port_guid;
        id.gid = p->gid;
        id.lid = p->lid;
        id.port = static_cast<std::uint8_t>(p->port);
      }
    }
    if (cache->size() > 256) cache->clear();
    (*cache)[ifindex] = {id, now + kPortOfTtl};
    return id;
  };
}

// What identifies a version of the peers file.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  timespec mtime{};
  bool operator==(const FileStamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size &&
           mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

// What the io thread and the poll thread share, and what handlers queued
// on the io_context hold: it outlives a collector destroyed while one is
// queued.
struct Core {
  Core(ProbeSettings s, std::chrono::microseconds i,
       std::shared_ptr<const Sysfs> fs)
      : settings(std::move(s)), interval(i), sysfs(std::move(fs)) {}

  // io thread: loads the key, binds, starts the engine. Errors are kept
  // for Collect() to report.
  void Open() {
    MutexLock lock(mu);
    if (engine || stopped) return;
    std::string error;
    if (settings.key.empty()) {
      open_error =
          "no key (collectors.probe.key_file is loaded at config load)";
      return;
    }
    auto listen = probe::ParseListenAddress(settings.listen_address, &error);
    if (!listen) {
      open_error = error;
      return;
    }
    probe::EngineOptions options;
    options.mode = Mode(settings.transport);
    options.interval = interval;
    options.probe_timeout = settings.probe_timeout;
    options.rate_limit = settings.rate_limit;
    options.port_of = PortOf(sysfs);
    std::vector<std::unique_ptr<probe::Transport>> transports;
    transports.push_back(std::make_unique<probe::UdpTransport>(*io, *listen));
    if (settings.transport != "udp") {
      // The verbs transport where this host has an active RDMA port; `auto`
      // keeps to UDP without one, `rdma` reports why.
      std::string why;
      auto rdma = probe::MakeRdmaTransport(*io, settings.listen_address, &why);
      if (rdma) {
        transports.push_back(std::move(rdma));
      } else if (settings.transport == "rdma") {
        open_error = "transport rdma: " + why;
        return;
      }
    }
    auto e = std::make_shared<Engine>(*io, Hmac(settings.key), options,
                                      std::move(transports));
    if (!e->Start(&error)) {
      open_error = error;
      return;
    }
    open_error.clear();
    engine = e;
  }

  // io thread.
  void Close() {
    MutexLock lock(mu);
    stopped = true;
    if (engine) engine->Stop();
  }

  const ProbeSettings settings;
  const std::chrono::microseconds interval;
  const std::shared_ptr<const Sysfs> sysfs;  // names the ports probes use
  boost::asio::io_context* io = nullptr;
  Mutex mu;  // io thread vs poll thread
  std::shared_ptr<Engine> engine GUARDED_BY(mu);
  std::string open_error GUARDED_BY(mu) = "not started";
  bool stopped GUARDED_BY(mu) = false;
};

class ProbeCollector final : public Collector {
 public:
  ProbeCollector(ProbeSettings settings, std::chrono::microseconds interval,
                 TextFileReader read_text_file,
                 std::shared_ptr<const Sysfs> sysfs)
      : settings_(settings),
        interval_(interval),
        read_text_file_(std::move(read_text_file)),
        core_(std::make_shared<Core>(std::move(settings), interval,
                                     std::move(sysfs))) {}

  std::string_view Name() const override { return "probe"; }
  std::chrono::microseconds PublishInterval() const override {
    return std::max<std::chrono::microseconds>(interval_, kPublishEvery);
  }
  bool Samples() const override { return false; }

  void Start(boost::asio::io_context& io) override {
    core_->io = &io;
    // SIGHUP re-reads the peers file (the daemon's own SIGHUP handler
    // reloads the config; Asio delivers the signal to both sets).
    signals_ = std::make_shared<boost::asio::signal_set>(io, SIGHUP);
    WaitHup(signals_, reread_);
    core_->Open();
  }

  void Stop() override {
    if (signals_) {
      boost::system::error_code ignored;
      signals_->cancel(ignored);
      signals_.reset();
    }
    core_->Close();
  }

  bool Collect(MetricSink& sink) override {
    std::shared_ptr<Engine> engine;
    std::string error;
    {
      MutexLock lock(core_->mu);
      engine = core_->engine;
      error = core_->open_error;
    }
    if (!engine) {
      if (!core_->io) {
        sink.Skip("probe: probes run only in the daemon");
        return false;
      }
      sink.Skip("probe: " + error);
      // Try again on the io thread (the key fixed, the port freed).
      boost::asio::post(*core_->io, [core = core_] { core->Open(); });
      return false;
    }
    if (engine != applied_engine_) {
      applied_engine_ = engine;
      applied_.reset();
    }
    UpdatePeers(*engine, sink);
    sink.Gauge("fabric_probe_peers_over_cap",
               "Peers in peers_file beyond collectors.probe.max_peers, not "
               "probed.",
               {}, static_cast<double>(file_over_cap_));
    if (engine->Emit(sink, &error)) return true;
    sink.Skip("probe: " + error);
    return false;
  }

 private:
  static void WaitHup(std::shared_ptr<boost::asio::signal_set> set,
                      std::shared_ptr<std::atomic<bool>> flag) {
    set->async_wait([set, flag](boost::system::error_code ec, int) {
      if (ec) return;
      flag->store(true);
      WaitHup(set, flag);
    });
  }

  // Poll thread: the configured peers plus the peers file, resolved.
  void UpdatePeers(Engine& engine, MetricSink& sink) {
    bool changed = !applied_.has_value();
    if (!settings_.peers_file.empty()) {
      struct stat st {};
      FileStamp stamp;
      if (::stat(settings_.peers_file.c_str(), &st) == 0) {
        stamp = {st.st_dev, st.st_ino, st.st_size, st.st_mtim};
      }
      bool hup = reread_->exchange(false);
      if (hup || !(stamp == file_stamp_) || !file_read_) {
        file_stamp_ = stamp;
        std::string error;
        if (ReadPeersFile(&error)) {
          changed = true;
        } else {
          file_error_ = error;
        }
      }
      if (!file_error_.empty()) sink.Skip("probe: " + file_error_);
    }
    if (!changed) return;
    // The configured peers, then the file's that ReadPeersFile kept.
    std::vector<probe::Peer> all = configured_;
    all.insert(all.end(), file_peers_.begin(), file_peers_.end());
    std::vector<ResolvedPeer> resolved;
    boost::asio::io_context lookup;
    boost::asio::ip::udp::resolver resolver(lookup);
    for (const auto& p : all) {
      boost::system::error_code ec;
      auto results =
          resolver.resolve(p.host, std::to_string(p.port),
                           boost::asio::ip::resolver_base::numeric_service, ec);
      if (ec || results.empty()) {
        sink.Skip("probe: cannot resolve peer " + p.name + ": " + ec.message());
        // Tried again at the next collection.
        applied_.reset();
        continue;
      }
      resolved.push_back({p, results.begin()->endpoint()});
    }
    if (applied_ && *applied_ == resolved) return;
    if (!applied_ && resolved.size() == all.size()) applied_ = resolved;
    engine.SetPeers(std::move(resolved));
  }

  bool ReadPeersFile(std::string* error) {
    FileRead file = read_text_file_(settings_.peers_file, kMaxPeersFileBytes);
    if (!file.ok()) {
      *error =
          "cannot read peers_file " + settings_.peers_file + ": " + file.error;
      return false;
    }
    auto peers = probe::ParsePeersFile(file.text, error);
    if (!peers) {
      *error =
          settings_.peers_file + ": " + *error + " (keeping the previous list)";
      return false;
    }
    KeepWithinCap(std::move(*peers));
    file_read_ = true;
    file_error_.clear();
    return true;
  }

  // Keeps the file's peers that are not configured in `peers` too, up to
  // max_peers in all, in a vector of their size (a shorter list after a
  // long one frees the long one's storage); counts the rest.
  void KeepWithinCap(std::vector<probe::Peer> peers) {
    std::unordered_set<std::string_view> configured;
    for (const auto& p : configured_) configured.insert(p.name);
    const auto max = static_cast<std::size_t>(settings_.max_peers);
    const std::size_t room =
        configured_.size() < max ? max - configured_.size() : 0;
    std::vector<probe::Peer> kept;
    kept.reserve(std::min(room, peers.size()));
    file_over_cap_ = 0;
    for (auto& p : peers) {
      if (configured.count(p.name)) continue;
      if (kept.size() < room) {
        kept.push_back(std::move(p));
      } else {
        ++file_over_cap_;
      }
    }
    file_peers_ = std::move(kept);
  }

  static std::vector<probe::Peer> Configured(const ProbeSettings& settings) {
    std::vector<probe::Peer> peers;
    for (const auto& text : settings.peers) {
      std::string error;
      if (auto p = probe::ParsePeer(text, &error)) peers.push_back(*p);
    }
    return peers;
  }

  const ProbeSettings settings_;
  const std::chrono::microseconds interval_;
  const TextFileReader read_text_file_;
  // `peers`, parsed (config validation keeps them within max_peers).
  const std::vector<probe::Peer> configured_ = Configured(settings_);
  std::shared_ptr<Core> core_;
  std::shared_ptr<boost::asio::signal_set> signals_;
  std::shared_ptr<std::atomic<bool>> reread_ =
      std::make_shared<std::atomic<bool>>(false);

  // Poll thread only.
  std::shared_ptr<Engine> applied_engine_;
  std::optional<std::vector<ResolvedPeer>> applied_;
  std::vector<probe::Peer> file_peers_;
  std::size_t file_over_cap_ = 0;  // the file's peers beyond max_peers
  FileStamp file_stamp_;
  bool file_read_ = false;
  std::string file_error_;
};

}  // namespace

std::unique_ptr<Collector> MakeProbeCollector(const CollectorEnv& env,
                                              const CollectorConfig& config) {
  return std::make_unique<ProbeCollector>(SettingsAs<ProbeSettings>(config),
                                          config.interval, env.read_text_file,
                                          env.sysfs);
}

CollectorSpec ProbeCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "probe";
  spec.enabled = false;
  // The interval is each peer's probe rate; 1 ms is a supported setting.
  spec.min_interval = std::chrono::milliseconds(1);
  spec.keys = {"transport",  "listen_address", "probe_timeout", "peers",
               "peers_file", "key_file",       "rate_limit",    "max_peers"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig& generic) {
    ProbeSettings s;
    YAML::Mark peers_mark;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark& mark) {
                 std::string error;
                 if (key == "transport") {
                   s.transport = Scalar(value, key_path);
                   if (s.transport != "auto" && s.transport != "udp" &&
                       s.transport != "rdma") {
                     Fail(key_path, mark, "must be auto, rdma or udp");
                   }
                 } else if (key == "listen_address") {
                   s.listen_address = Scalar(value, key_path);
                   if (!probe::ParseListenAddress(s.listen_address, &error)) {
                     Fail(key_path, mark, error);
                   }
                 } else if (key == "probe_timeout") {
                   s.probe_timeout = Duration(value, key_path);
                   if (s.probe_timeout.count() <= 0) {
                     Fail(key_path, mark, "must be positive");
                   }
                 } else if (key == "peers") {
                   peers_mark = mark;
                   s.peers = Names(value, key_path);
                   for (const auto& p : s.peers) {
                     if (!probe::ParsePeer(p, &error)) {
                       Fail(key_path, mark, error);
                     }
                   }
                 } else if (key == "peers_file") {
                   s.peers_file = Scalar(value, key_path);
                 } else if (key == "key_file") {
                   s.key_file = Scalar(value, key_path);
                 } else if (key == "rate_limit") {
                   s.rate_limit = Number(value, key_path, 0, 1e9,
                                         "answers per second (e.g. 2000)");
                 } else if (key == "max_peers") {
                   s.max_peers = static_cast<int>(
                       Integer(value, key_path, 1, kMaxPeersLimit,
                               "a number of peers in 1..100000"));
                 }
               });
    if (s.peers.size() > static_cast<std::size_t>(s.max_peers)) {
      Fail(Join(path, "peers"), peers_mark,
           "lists " + std::to_string(s.peers.size()) +
               " peers, more than max_peers (" + std::to_string(s.max_peers) +
               ")");
    }
    if (generic.enabled) {
      YAML::Mark mark = node ? node.Mark() : YAML::Mark();
      if (s.key_file.empty()) {
        Fail(Join(path, "key_file"), mark,
             "is required when probes are enabled");
      }
      // --check-config and a reload catch a missing or group-readable key
      // before the daemon runs on it.
      std::string error;
      if (auto key = LoadKeyFile(s.key_file, &error)) {
        s.key = std::move(*key);
      } else {
        Fail(Join(path, "key_file"), mark, error);
      }
      if (generic.interval.count() <= 0) {
        Fail(Join(path, "interval"), mark, "must be positive");
      }
    }
    return std::make_shared<SettingsOf<ProbeSettings>>(s);
  };
  spec.make = MakeProbeCollector;
  return spec;
}

}  // namespace fabric
