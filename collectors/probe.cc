#include "collectors/probe.h"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cctype>
#include <cmath>
#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "auth/key_file.h"
#include "config/yaml_keys.h"
#include "core/thread_annotations.h"
#include "probe/engine.h"
#include "probe/path_trace.h"
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

// "10.0.0.1:10916", "[fd00::1]:10916": an endpoint as logs and the RDMA
// port picker (probe/rdma_ports.h) read it.
std::string EndpointText(const probe::Endpoint& e) {
  std::ostringstream out;
  out << e;
  return out.str();
}

// The labels on a rail's series: none for the unnamed rail.
Labels RailLabels(const ProbeRail& rail) {
  if (rail.name.empty()) return {};
  return {{"rail", rail.name}};
}

// Between two traces of a rail: every router on a path answers each trace
// once, and Linux routers answer a host about once a second after a burst
// of 6 (net.ipv4.icmp_ratelimit), so back-to-back traces of many peers
// would read as silent hops.
constexpr auto kTraceGap = std::chrono::seconds(1);
// How often a `device` rail scans sysfs for its port's netdevs again.
constexpr auto kRescanEvery = std::chrono::seconds(60);
// A losing peer is traced out of turn at most this often.
constexpr auto kUrgentEvery = std::chrono::minutes(1);
// The unanswered-peers warning: at most one a rail this often, naming at
// most this many peers (a mesh of thousands may lose a rack at once).
constexpr auto kUnansweredLogEvery = std::chrono::minutes(1);
constexpr std::size_t kUnansweredLogNames = 10;

// The address the kernel would send from to `peer` (a routing lookup: a
// UDP socket connected, nothing sent), or `bound` when that is specific.
std::string SourceAddress(const probe::Endpoint& bound,
                          const probe::Endpoint& peer) {
  if (!bound.address().is_unspecified()) return bound.address().to_string();
  boost::asio::io_context io;
  boost::asio::ip::udp::socket s(io);
  boost::system::error_code ec;
  s.open(peer.protocol(), ec);
  if (!ec) s.connect(peer, ec);
  if (ec) return "";
  auto local = s.local_endpoint(ec);
  return ec ? "" : local.address().to_string();
}

// The last traced path of one peer, as fabric_probe_path_info shows it.
struct TracedPath {
  std::string src, dst, path;
  std::size_t hops = 0;
};

// A rail's path traces (fabric_probe_path_info): every peer in turn, one
// trace at a time kTraceGap apart, a round every `interval`. A series for
// each peer behind at least one router (its last successful trace). Runs
// on the io thread; Emit() on the poll thread reads the results under mu_.
class TraceSchedule : public std::enable_shared_from_this<TraceSchedule> {
 public:
  TraceSchedule(boost::asio::io_context& io, probe::UdpTransport* udp,
                std::chrono::microseconds interval, Hmac hmac)
      : io_(io),
        udp_(udp),
        interval_(interval),
        hmac_(std::move(hmac)),
        timer_(io) {}

  // io thread: hooks the tracer to the socket and starts the rounds.
  void Start() {
    tracer_ = std::make_shared<probe::PathTracer>(
        io_,
        [udp = udp_](const probe::Endpoint& peer,
                     std::span<const std::uint8_t> payload, int ttl,
                     std::string* error) {
          return udp->SendTrace(peer, payload, ttl, error);
        },
        probe::TraceOptions{}, hmac_);
    std::weak_ptr<probe::PathTracer> weak = tracer_;
    std::weak_ptr<TraceSchedule> self = shared_from_this();
    udp_->SetIcmpHandler([weak, self](const probe::IcmpReport& r) {
      auto t = weak.lock();
      if (!t) return;
      t->OnReport(r);
      if (auto s = self.lock()) {
        MutexLock lock(s->mu_);
        s->unverified_ = t->unverified();
      }
    });
    Wait(std::chrono::seconds(1));
  }

  // io thread.
  void Stop() {
    stopped_ = true;
    timer_.cancel();
    if (tracer_) tracer_->Stop();
  }

  // Any thread: trace these peers next (they started losing), each at
  // most once a minute.
  void TraceSoon(std::vector<std::string> names) {
    boost::asio::post(io_, [self = shared_from_this(), names] {
      const auto now = std::chrono::steady_clock::now();
      for (const auto& n : names) {
        auto& last = self->urgent_at_[n];
        if (last != std::chrono::steady_clock::time_point{} &&
            now - last < kUrgentEvery) {
          continue;
        }
        last = now;
        self->urgent_.push_back(n);
      }
    });
  }

  // Any thread: the peers to trace from the next one on.
  void SetPeers(const std::vector<ResolvedPeer>& peers) {
    boost::asio::post(io_, [self = shared_from_this(), peers] {
      self->peers_.clear();
      for (const auto& p : peers) {
        self->peers_.push_back({p.peer.name, Plain(p.endpoint)});
      }
      MutexLock lock(self->mu_);
      std::set<std::string> names;
      for (const auto& p : peers) names.insert(p.peer.name);
      std::erase_if(self->paths_,
                    [&](const auto& e) { return !names.count(e.first); });
      std::erase_if(self->urgent_at_,
                    [&](const auto& e) { return !names.count(e.first); });
    });
  }

  // Poll thread.
  void Emit(MetricSink& sink, const Labels& rail) const {
    MutexLock lock(mu_);
    for (const auto& [peer, p] : paths_) {
      Labels labels = rail;
      labels.push_back({"peer", peer});
      labels.push_back({"src", p.src});
      labels.push_back({"dst", p.dst});
      labels.push_back({"path", p.path});
      labels.push_back({"hops", std::to_string(p.hops)});
      sink.Gauge("fabric_probe_path_info",
                 "The routers a peer's probe flow crosses (its last "
                 "successful path trace, router addresses in order), "
                 "always 1.",
                 labels, 1.0);
    }
    sink.Counter("fabric_probe_path_trace_failures_total",
                 "Path traces of peers' probe flows that found no path (a "
                 "router with no address, unreachable, a send refused, too "
                 "many hops).",
                 rail, static_cast<double>(failures_));
    sink.Counter("fabric_probe_path_trace_unverified_total",
                 "ICMP errors about a traced flow that were ignored because "
                 "they quote no trace tag of ours or one whose MAC fails "
                 "(forged, or a router quoting only 8 bytes).",
                 rail, static_cast<double>(unverified_));
  }

 private:
  static probe::Endpoint Plain(const probe::Endpoint& e) {
    const auto& a = e.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
      return {boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped,
                                               a.to_v6()),
              e.port()};
    }
    return e;
  }

  // The next round after `interval_`, unless a losing peer asks first.
  void WaitRound() {
    round_due_ = std::chrono::steady_clock::now() + interval_;
    Wait(kTraceGap);
  }

  void Wait(std::chrono::steady_clock::duration d) {
    timer_.expires_after(d);
    timer_.async_wait(
        [self = shared_from_this()](boost::system::error_code ec) {
          if (!ec && !self->stopped_) self->Next();
        });
  }

  // Traces the next peer of the round (a losing peer first); after the
  // last, waits a round.
  void Next() {
    if (urgent_.empty() && std::chrono::steady_clock::now() < round_due_) {
      Wait(kTraceGap);
      return;
    }
    if (peers_.empty()) {
      Wait(kTraceGap);  // until the collector hands over the peers
      return;
    }
    std::optional<std::pair<std::string, probe::Endpoint>> peer;
    while (!peer && !urgent_.empty()) {
      const std::string name = urgent_.front();
      urgent_.pop_front();
      for (const auto& p : peers_) {
        if (p.first == name) peer = p;
      }
    }
    if (!peer && next_ >= peers_.size()) {
      next_ = 0;
      WaitRound();
      return;
    }
    if (!peer) peer = peers_[next_++];
    auto [name, endpoint] = *peer;
    bool started = tracer_->Trace(
        endpoint, [self = shared_from_this(), name = name,
                   endpoint = endpoint](const probe::PathResult& r) {
          self->Record(name, endpoint, r);
          if (!self->stopped_) self->Wait(kTraceGap);
        });
    if (!started) Wait(kTraceGap);
  }

  void Record(const std::string& name, const probe::Endpoint& peer,
              const probe::PathResult& r) {
    MutexLock lock(mu_);
    if (!r.ok) {
      ++failures_;
      return;
    }
    if (r.hops.empty()) {
      // On our link: no router between, nothing for a path to add to the
      // pair's own series (and no 9th series for the pair).
      paths_.erase(name);
      return;
    }
    TracedPath p;
    p.src = SourceAddress(udp_->local_endpoint(), peer);
    p.dst = peer.address().to_string();
    for (const auto& hop : r.hops) {
      if (!p.path.empty()) p.path += ",";
      p.path += hop.to_string();
    }
    p.hops = r.hops.size();
    paths_[name] = p;
  }

  boost::asio::io_context& io_;
  probe::UdpTransport* const udp_;  // owned by the engine, outlives Stop()
  const std::chrono::microseconds interval_;
  const Hmac hmac_;  // signs and checks trace datagrams
  boost::asio::steady_timer timer_;
  std::shared_ptr<probe::PathTracer> tracer_;
  // io thread only.
  std::vector<std::pair<std::string, probe::Endpoint>> peers_;
  std::size_t next_ = 0;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point round_due_{};  // the next round
  std::deque<std::string> urgent_;                     // losing peers
  std::map<std::string, std::chrono::steady_clock::time_point> urgent_at_;

  mutable Mutex mu_;
  std::map<std::string, TracedPath> paths_ GUARDED_BY(mu_);  // by peer name
  std::uint64_t failures_ GUARDED_BY(mu_) = 0;
  std::uint64_t unverified_ GUARDED_BY(mu_) = 0;  // tracer_->unverified()
};

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
  Core(ProbeSettings s, ProbeRail r, std::chrono::microseconds i,
       std::shared_ptr<const Sysfs> fs)
      : settings(std::move(s)),
        rail(std::move(r)),
        interval(i),
        sysfs(std::move(fs)),
        listen(rail.device.empty() ? rail.listen_address : std::nullopt) {}

  // io thread: a `device` rail's address found again (nullopt with
  // `error` when it could not be). A new address closes the socket bound to the
  // old one and opens the rail on the new one. The old socket's path traces
  // stop with it: they send through it (a raw pointer into the engine), and
  // would otherwise run on, unseen, after the engine is gone.
  void Rebind(const std::optional<probe::Endpoint>& address,
              const std::string& error) {
    {
      MutexLock lock(mu);
      if (stopped) return;
      resolve_error = error;
      // The same address: nothing to do (Collect() retries a failed open).
      if (address == listen) return;
      if (traces) traces->Stop();
      traces.reset();
      if (engine) engine->Stop();
      engine.reset();
      listen = address;
      open_error = address ? "not started" : error;
    }
    Open();
  }

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
    if (!listen) {
      open_error = resolve_error;
      return;
    }
    probe::EngineOptions options;
    options.mode = Mode(settings.transport);
    options.interval = interval;
    options.probe_timeout = settings.probe_timeout;
    options.rate_limit = settings.rate_limit;
    options.port_of = PortOf(sysfs);
    options.per_peer_histograms = settings.per_peer_histograms;
    options.labels = RailLabels(rail);
    std::vector<std::unique_ptr<probe::Transport>> transports;
    transports.push_back(std::make_unique<probe::UdpTransport>(*io, *listen));
    auto* udp = static_cast<probe::UdpTransport*>(transports.front().get());
    if (settings.transport != "udp") {
      // The verbs transport where this host has an active RDMA port; `auto`
      // keeps to UDP without one, `rdma` reports why.
      std::string why;
      auto rdma = probe::MakeRdmaTransport(
          *io, {EndpointText(*listen), rail.device, rail.port}, &why);
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
    StartTraces(udp);
  }

  // io thread, under mu: path traces on the engine's UDP socket.
  void StartTraces(probe::UdpTransport* udp) REQUIRES(mu) {
    if (settings.trace_interval.count() <= 0) return;
    traces = std::make_shared<TraceSchedule>(*io, udp, settings.trace_interval,
                                             Hmac(settings.key));
    traces->Start();
  }

  // io thread.
  void Close() {
    MutexLock lock(mu);
    stopped = true;
    if (traces) traces->Stop();
    if (engine) engine->Stop();
  }

  const ProbeSettings settings;
  const ProbeRail rail;
  const std::chrono::microseconds interval;
  const std::shared_ptr<const Sysfs> sysfs;  // names the ports probes use
  boost::asio::io_context* io = nullptr;
  Mutex mu;  // io thread vs poll thread
  // Where the rail binds: its listen_address, or for a `device` rail the
  // address last found (nullopt: none, why in resolve_error).
  std::optional<probe::Endpoint> listen GUARDED_BY(mu);
  std::string resolve_error GUARDED_BY(mu) =
      "its device's address is not looked up yet";
  std::shared_ptr<Engine> engine GUARDED_BY(mu);
  std::shared_ptr<TraceSchedule> traces GUARDED_BY(mu);  // null: not tracing
  std::string open_error GUARDED_BY(mu) = "not started";
  bool stopped GUARDED_BY(mu) = false;
};

// One rail: its engine (in Core), its peers and peers file. Poll thread,
// but Start and Stop on the io thread.
class RailProber {
 public:
  RailProber(const ProbeSettings& settings, ProbeRail rail,
             std::chrono::microseconds interval, TextFileReader read_text_file,
             std::shared_ptr<const Sysfs> sysfs,
             InterfaceAddressLister list_addresses)
      : rail_(rail),
        max_peers_(settings.max_peers),
        read_text_file_(std::move(read_text_file)),
        what_(rail.name.empty() ? "probe: " : "probe rail " + rail.name + ": "),
        configured_(rail.peers),
        sysfs_(sysfs),
        list_addresses_(std::move(list_addresses)),
        wanted_(Wanted(rail)),
        core_(std::make_shared<Core>(settings, std::move(rail), interval,
                                     std::move(sysfs))) {}

  void Start(boost::asio::io_context& io) {
    core_->io = &io;
    if (!rail_.device.empty()) {
      std::optional<RailBinding> binding;
      std::string error;
      const auto listen = Resolve(true, &binding, &error);
      core_->Rebind(listen, error);
    }
    core_->Open();
  }
  void Stop() { core_->Close(); }

  // `reread`: SIGHUP came since the last collection.
  bool Collect(MetricSink& sink, bool reread) {
    if (!rail_.device.empty()) Follow(sink, reread);
    std::shared_ptr<Engine> engine;
    std::string error;
    {
      MutexLock lock(core_->mu);
      engine = core_->engine;
      traces_ = core_->traces;
      error = core_->open_error;
    }
    if (!rail_.name.empty()) {
      sink.Gauge("fabric_probe_rail_up",
                 "1 when the rail's socket is bound and probing, else 0 "
                 "(the collector's skip reasons say why).",
                 RailLabels(rail_), engine ? 1.0 : 0.0);
    }
    if (!engine) {
      if (!core_->io) {
        sink.Skip("probe: probes run only in the daemon");
        return false;
      }
      sink.Skip(what_ + error);
      // Try again on the io thread (the key fixed, the port freed).
      boost::asio::post(*core_->io, [core = core_] { core->Open(); });
      return false;
    }
    if (engine != applied_engine_) {
      applied_engine_ = engine;
      applied_.reset();
      // A new engine (a `device` rail rebound) counts losses from zero: the
      // old engine's counts would hide its peers' first losses.
      lost_.clear();
    }
    UpdatePeers(*engine, sink, reread);
    sink.Gauge("fabric_probe_peers_over_cap",
               "Peers in peers_file beyond collectors.probe.max_peers, not "
               "probed.",
               RailLabels(rail_), static_cast<double>(file_over_cap_));
    if (traces_) {
      traces_->Emit(sink, RailLabels(rail_));
      TraceLosingPeers(*engine);
    }
    LogUnanswered(*engine);
    if (engine->Emit(sink, &error)) return true;
    sink.Skip(what_ + error);
    return false;
  }

 private:
  // The address and UDP port a `device` rail asks for: its listen_address's
  // (an address of any: the port's choice), else listen_port.
  static std::pair<std::string, int> Wanted(const ProbeRail& rail) {
    if (!rail.listen_address) return {"", rail.listen_port};
    const auto address = rail.listen_address->address();
    return {
        address.is_unspecified() ? "" : CanonicalAddress(address.to_string()),
        rail.listen_address->port()};
  }

  // A `device` rail's listen address now (10.0.0.1:10916,
  // [fd00::1]:10916), or nullopt with *error.
  // The port's netdevs come from a sysfs scan (every netdev's type and
  // address on IB) at most every kRescanEvery, sooner after a failure or a
  // SIGHUP: once a second on an 8-rail host it read more files than the
  // counter collectors. The addresses (one getifaddrs) are checked at
  // every collection, so a changed address rebinds within a second.
  std::optional<probe::Endpoint> Resolve(bool rescan,
                                         std::optional<RailBinding>* binding,
                                         std::string* error) {
    error->clear();
    if (!sysfs_) {
      *error = "no sysfs tree to find " + rail_.device + " in";
      return std::nullopt;
    }
    const auto addresses = list_addresses_(error);
    if (!error->empty()) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (rescan || !netdevs_ || now - scanned_ >= kRescanEvery) {
      netdevs_ = NetdevsOfFabricPort(*sysfs_, rail_.device, rail_.port, error);
      scanned_ = now;
      if (!netdevs_) return std::nullopt;
    }
    *binding =
        BindingOfNetdevs(*netdevs_, addresses,
                         rail_.device + " port " + std::to_string(rail_.port),
                         wanted_.first, error);
    if (!*binding) {
      netdevs_.reset();  // look again next time: a netdev may have moved
      return std::nullopt;
    }
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address((*binding)->address, ec);
    if (ec) {
      *error = rail_.device + " port " + std::to_string(rail_.port) +
               ": address " + (*binding)->address + " is not an IP address";
      binding->reset();
      return std::nullopt;
    }
    return probe::Endpoint(address, static_cast<std::uint16_t>(wanted_.second));
  }

  // Poll thread: finds a `device` rail's address again and, when it (or
  // why there is none) changed, logs it and hands it to the io thread.
  void Follow(MetricSink& sink, bool reread) {
    std::optional<RailBinding> binding;
    std::string error;
    const auto listen = Resolve(reread, &binding, &error);
    if (listen != posted_listen_ || error != posted_error_) {
      if (error.empty()) {
        spdlog::info("probe rail {}: {} port {} is {}, listening on {}",
                     rail_.name, rail_.device, rail_.port, binding->netdev,
                     EndpointText(*listen));
      } else {
        spdlog::error("probe rail {}: {}", rail_.name, error);
      }
      posted_listen_ = listen;
      posted_error_ = error;
      if (core_->io) {
        boost::asio::post(*core_->io, [core = core_, listen, error] {
          core->Rebind(listen, error);
        });
      }
    }
    if (!binding) return;
    sink.Gauge("fabric_probe_rail_info",
               "A rail named by RDMA device and port: the netdev and "
               "address it probes from (always 1).",
               Labels{{"rail", rail_.name},
                      {"device", rail_.device},
                      {"port", std::to_string(rail_.port)},
                      {"netdev", binding->netdev},
                      {"address", binding->address}},
               1.0);
  }

  // The configured peers plus the peers file, resolved.
  void UpdatePeers(Engine& engine, MetricSink& sink, bool reread) {
    bool changed = !applied_.has_value();
    if (!rail_.peers_file.empty()) {
      struct stat st {};
      FileStamp stamp;
      if (::stat(rail_.peers_file.c_str(), &st) == 0) {
        stamp = {st.st_dev, st.st_ino, st.st_size, st.st_mtim};
      }
      if (reread || !(stamp == file_stamp_) || !file_read_) {
        file_stamp_ = stamp;
        std::string error;
        if (ReadPeersFile(&error)) {
          changed = true;
        } else {
          file_error_ = error;
        }
      }
      if (!file_error_.empty()) sink.Skip(what_ + file_error_);
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
        sink.Skip(what_ + "cannot resolve peer " + p.name + ": " +
                  ec.message());
        // Tried again at the next collection.
        applied_.reset();
        continue;
      }
      resolved.push_back({p, results.begin()->endpoint()});
    }
    endpoints_.clear();
    for (const auto& r : resolved) endpoints_[r.peer.name] = r.endpoint;
    if (applied_ && *applied_ == resolved) return;
    if (!applied_ && resolved.size() == all.size()) applied_ = resolved;
    if (traces_) traces_->SetPeers(resolved);
    engine.SetPeers(std::move(resolved));
  }

  // Names the peers that went unanswered since the last line (issue 39:
  // a peer that never answers, or answers on a port where no probe
  // responder is, was visible nowhere): one warning a rail at most every
  // kUnansweredLogEvery, each peer once per spell, at most
  // kUnansweredLogNames of them by name. A peer that answers again is
  // logged again when it next stops.
  void LogUnanswered(const Engine& engine) {
    const auto unanswered = engine.UnansweredPeers();
    std::set<std::string> now_unanswered;
    for (const auto& u : unanswered) now_unanswered.insert(u.peer);
    std::erase_if(unanswered_logged_,
                  [&](const auto& n) { return !now_unanswered.count(n); });
    const auto now = std::chrono::steady_clock::now();
    if (now < next_unanswered_log_) return;
    std::string names;
    std::size_t fresh = 0;
    for (const auto& u : unanswered) {
      if (!unanswered_logged_.insert(u.peer).second) continue;
      if (++fresh > kUnansweredLogNames) continue;
      auto it = endpoints_.find(u.peer);
      std::ostringstream at;
      if (it != endpoints_.end()) at << it->second;
      names +=
          (names.empty() ? "" : "; ") + u.peer + " (UDP " + at.str() + ", " +
          (u.ever
               ? "silent for " + std::to_string(std::lround(u.seconds)) + " s"
               : "never answered") +
          ", " + std::to_string(u.sent) + " probes sent)";
    }
    if (fresh == 0) return;
    if (fresh > kUnansweredLogNames) {
      names += "; and " + std::to_string(fresh - kUnansweredLogNames) +
               " more (fabric_probe_peer_unanswered_seconds)";
    }
    spdlog::warn(
        "{}no authenticated answer from {} peer(s): {}. Is a fabricmon probe "
        "responder with this key listening on that UDP port (a file_sd "
        "target's own port is replaced by the probe port)?",
        what_, fresh, names);
    next_unanswered_log_ = now + kUnansweredLogEvery;
  }

  // Peers that lost probes since the last collection: trace them soon,
  // while the loss lasts (their path may have moved onto a bad link).
  void TraceLosingPeers(const Engine& engine) {
    std::vector<std::string> losing;
    auto lost = engine.LostByPeer();
    for (const auto& [peer, n] : lost) {
      auto it = lost_.find(peer);
      if (it != lost_.end() && n > it->second) losing.push_back(peer);
    }
    lost_ = std::move(lost);
    if (!losing.empty()) traces_->TraceSoon(std::move(losing));
  }

  bool ReadPeersFile(std::string* error) {
    FileRead file = read_text_file_(rail_.peers_file, kMaxPeersFileBytes);
    if (!file.ok()) {
      *error = "cannot read peers_file " + rail_.peers_file + ": " + file.error;
      return false;
    }
    // A file_sd target's port is its scrape port: the rail's probe port
    // replaces it (probe/peers.h), as it fills in an entry without one.
    auto peers = probe::ParsePeersFile(
        file.text, error, static_cast<std::uint16_t>(ProbePort(rail_)));
    if (!peers) {
      *error =
          rail_.peers_file + ": " + *error + " (keeping the previous list)";
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
    const auto max = static_cast<std::size_t>(max_peers_);
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

  const ProbeRail rail_;
  const int max_peers_;
  const TextFileReader read_text_file_;
  const std::string what_;  // prefix of its skip reasons
  // `peers`, parsed (config validation keeps them within max_peers).
  const std::vector<probe::Peer> configured_;
  const std::shared_ptr<const Sysfs> sysfs_;  // finds a `device` rail's netdev
  const InterfaceAddressLister list_addresses_;
  const std::pair<std::string, int> wanted_;  // see Wanted()
  std::shared_ptr<Core> core_;

  // Poll thread only.
  std::shared_ptr<Engine> applied_engine_;
  std::shared_ptr<TraceSchedule> traces_;      // the engine's, as of Collect
  std::map<std::string, std::uint64_t> lost_;  // per peer, last collection
  // The peers' endpoints as last resolved, for the log.
  std::map<std::string, probe::Endpoint> endpoints_;
  // Unanswered peers already named in the log, and when it may speak next.
  std::set<std::string> unanswered_logged_;
  std::chrono::steady_clock::time_point next_unanswered_log_{};
  std::optional<std::vector<ResolvedPeer>> applied_;
  std::vector<probe::Peer> file_peers_;
  std::size_t file_over_cap_ = 0;  // the file's peers beyond max_peers
  FileStamp file_stamp_;
  bool file_read_ = false;
  std::string file_error_;
  // The port's netdevs as last scanned (Resolve), and when.
  std::optional<std::vector<std::string>> netdevs_;
  std::chrono::steady_clock::time_point scanned_{};
  // What Follow() last handed to the io thread.
  std::optional<probe::Endpoint> posted_listen_;
  std::string posted_error_;
};

class ProbeCollector final : public Collector {
 public:
  ProbeCollector(const ProbeSettings& settings,
                 std::chrono::microseconds interval,
                 const TextFileReader& read_text_file,
                 const std::shared_ptr<const Sysfs>& sysfs,
                 const InterfaceAddressLister& list_addresses)
      : interval_(interval) {
    for (auto& rail : RailsOf(settings)) {
      rails_.push_back(std::make_unique<RailProber>(settings, std::move(rail),
                                                    interval, read_text_file,
                                                    sysfs, list_addresses));
    }
  }

  std::string_view Name() const override { return "probe"; }
  std::chrono::microseconds PublishInterval() const override {
    return std::max<std::chrono::microseconds>(interval_, kPublishEvery);
  }
  bool Samples() const override { return false; }

  void Start(boost::asio::io_context& io) override {
    // SIGHUP re-reads the peers files (the daemon's own SIGHUP handler
    // reloads the config; Asio delivers the signal to both sets).
    signals_ = std::make_shared<boost::asio::signal_set>(io, SIGHUP);
    WaitHup(signals_, reread_);
    for (auto& rail : rails_) rail->Start(io);
  }

  void Stop() override {
    if (signals_) {
      boost::system::error_code ignored;
      signals_->cancel(ignored);
      signals_.reset();
    }
    for (auto& rail : rails_) rail->Stop();
  }

  // Healthy when every rail is: a rail that cannot bind is reported
  // (fabric_collector_success 0 and its reason), the others keep probing.
  bool Collect(MetricSink& sink) override {
    const bool reread = reread_->exchange(false);
    bool ok = true;
    for (auto& rail : rails_) ok = rail->Collect(sink, reread) && ok;
    return ok;
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

  const std::chrono::microseconds interval_;
  std::vector<std::unique_ptr<RailProber>> rails_;
  std::shared_ptr<boost::asio::signal_set> signals_;
  std::shared_ptr<std::atomic<bool>> reread_ =
      std::make_shared<std::atomic<bool>>(false);
};

}  // namespace

int ProbePort(const ProbeRail& rail) {
  return rail.listen_address ? rail.listen_address->port() : rail.listen_port;
}

std::vector<ProbeRail> RailsOf(const ProbeSettings& settings) {
  if (!settings.rails.empty()) return settings.rails;
  ProbeRail rail;
  rail.listen_address = settings.listen_address;
  rail.peers = settings.peers;
  rail.peers_file = settings.peers_file;
  return {rail};
}

std::unique_ptr<Collector> MakeProbeCollector(const CollectorEnv& env,
                                              const CollectorConfig& config) {
  return MakeProbeCollector(env, config, SystemInterfaceAddresses);
}

std::unique_ptr<Collector> MakeProbeCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    InterfaceAddressLister list_addresses) {
  return std::make_unique<ProbeCollector>(SettingsAs<ProbeSettings>(config),
                                          config.interval, env.read_text_file,
                                          env.sysfs, list_addresses);
}

namespace {

// A `listen_address`, parsed.
probe::Endpoint ListenAddress(const YAML::Node& value,
                              const std::string& key_path,
                              const YAML::Mark& mark) {
  using namespace config_keys;
  std::string error;
  auto endpoint = probe::ParseListenAddress(Scalar(value, key_path), &error);
  if (!endpoint) Fail(key_path, mark, error);
  return *endpoint;
}

// A `peers` list as written, with where it was: parsed once the port its
// entries default to (the rail's) is known, whatever the keys' order.
struct PeerTexts {
  std::vector<std::string> texts;
  std::string key_path;
  YAML::Mark mark;
  YAML::Node node;  // each entry's own line (a block list puts each on its own)
};

PeerTexts PeerList(const YAML::Node& value, const std::string& key_path,
                   const YAML::Mark& mark) {
  return {config_keys::Names(value, key_path), key_path, mark, value};
}

// Every entry of `list` parsed, an entry without a port at `port`.
std::vector<probe::Peer> ParsePeers(const PeerTexts& list, int port) {
  std::vector<probe::Peer> peers;
  for (std::size_t i = 0; i < list.texts.size(); ++i) {
    std::string error;
    auto peer = probe::ParsePeer(list.texts[i], &error,
                                 static_cast<std::uint16_t>(port));
    if (!peer) {
      config_keys::Fail(list.key_path,
                        list.node.IsSequence() && i < list.node.size()
                            ? list.node[i].Mark()
                            : list.mark,
                        error);
    }
    peers.push_back(std::move(*peer));
  }
  return peers;
}

// `trace_interval`: a duration, or zero ("0", "0s", "0m" ...) for off
// (durations elsewhere are positive).
std::chrono::microseconds TraceInterval(const YAML::Node& value,
                                        const std::string& key_path) {
  using namespace config_keys;
  const std::string text = Scalar(value, key_path);
  const std::size_t unit = text.find_first_not_of('0');
  if (unit > 0 && (unit == std::string::npos ||
                   std::set<std::string>{"us", "ms", "s", "m", "h"}.count(
                       text.substr(unit)))) {
    return std::chrono::microseconds(0);
  }
  return Duration(value, key_path);
}

// A rail name: what a label value and a log line can carry plainly.
bool RailName(const std::string& name) {
  return !name.empty() && name.size() <= 64 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                  c == '-' || c == '.';
         });
}

// A rail's `device`, `port` and `listen_port` against its listen_address:
// either names the rail, a device rail's listen_address is one address (it
// must be the port's, checked when the rail opens) and its port is given
// once.
void CheckRailDevice(const ProbeRail& rail, bool listen, bool port,
                     bool listen_port, const std::string& at,
                     const YAML::Node& item) {
  using namespace config_keys;
  if (rail.device.empty()) {
    if (!listen) {
      Fail(at + ".listen_address", item.Mark(),
           "is required (or device and port)");
    }
    if (port) Fail(at + ".port", KeyMark(item, "port"), "needs device");
    if (listen_port) {
      Fail(at + ".listen_port", KeyMark(item, "listen_port"), "needs device");
    }
    return;
  }
  if (listen && listen_port) {
    Fail(at + ".listen_port", KeyMark(item, "listen_port"),
         "is listen_address's port too: give one of them");
  }
  if (listen && rail.listen_address->address().is_unspecified()) {
    Fail(at + ".listen_address", KeyMark(item, "listen_address"),
         "with device, must be the port's address (or use listen_port)");
  }
}

// `rails`: a list of {name, listen_address | device, port, listen_port,
// peers, peers_file}; names, listen addresses and device ports unique (two
// rails on one socket would be one rail).
std::vector<ProbeRail> ParseRails(const YAML::Node& node,
                                  const std::string& path) {
  using namespace config_keys;
  if (!node.IsSequence() || node.size() == 0) {
    Fail(path, node.Mark(),
         "must be a non-empty list of {name, listen_address or device and "
         "port, peers, peers_file}");
  }
  std::vector<ProbeRail> rails;
  std::set<std::string> names, addresses, ports;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const YAML::Node item = node[i];
    ProbeRail rail;
    PeerTexts peers;
    bool listen = false, port = false, listen_port = false;
    ForEachKey(item, at,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark& mark) {
                 if (key == "name") {
                   rail.name = Scalar(value, key_path);
                   if (!RailName(rail.name)) {
                     Fail(key_path, mark,
                          "must be 1-64 letters, digits, '_', '-' or '.'");
                   }
                 } else if (key == "listen_address") {
                   listen = true;
                   rail.listen_address = ListenAddress(value, key_path, mark);
                 } else if (key == "peers") {
                   peers = PeerList(value, key_path, mark);
                 } else if (key == "peers_file") {
                   rail.peers_file = Scalar(value, key_path);
                 } else if (key == "device") {
                   rail.device = Scalar(value, key_path);
                   if (!RailName(rail.device)) {
                     Fail(key_path, mark,
                          "must be an RDMA device name such as mlx5_0");
                   }
                 } else if (key == "port") {
                   port = true;
                   rail.port = static_cast<int>(Integer(
                       value, key_path, 1, 255, "an RDMA port in 1..255"));
                 } else if (key == "listen_port") {
                   listen_port = true;
                   rail.listen_port = static_cast<int>(
                       Integer(value, key_path, 1, 65535, "a UDP port"));
                 } else {
                   Fail(key_path, mark,
                        "unknown key (a rail has name, listen_address, "
                        "device, port, listen_port, peers, peers_file)");
                 }
               });
    if (rail.name.empty()) Fail(at + ".name", item.Mark(), "is required");
    CheckRailDevice(rail, listen, port, listen_port, at, item);
    if (!names.insert(rail.name).second) {
      Fail(at + ".name", KeyMark(item, "name"),
           "repeats rail " + Quote(rail.name));
    }
    if (!rail.device.empty()) {
      if (!port) rail.port = 1;  // most HCAs have one
      if (!listen) rail.listen_address.reset();
      const std::string id = rail.device + " port " + std::to_string(rail.port);
      if (!ports.insert(id).second) {
        Fail(at + ".device", KeyMark(item, "device"),
             "is another rail's too (" + id + ")");
      }
    }
    if (listen) {
      const std::string text = EndpointText(*rail.listen_address);
      if (!addresses.insert(text).second) {
        Fail(at + ".listen_address", KeyMark(item, "listen_address"),
             "is another rail's too (" + text + ")");
      }
    }
    rail.peers = ParsePeers(peers, ProbePort(rail));
    rails.push_back(std::move(rail));
  }
  return rails;
}

}  // namespace

CollectorSpec ProbeCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "probe";
  spec.enabled = false;
  // The interval is each peer's probe rate; 1 ms is a supported setting.
  spec.min_interval = std::chrono::milliseconds(1);
  spec.keys = {"transport",  "listen_address", "probe_timeout",
               "peers",      "peers_file",     "key_file",
               "rate_limit", "max_peers",      "per_peer_histograms",
               "rails",      "trace_interval"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig& generic) {
    ProbeSettings s;
    PeerTexts peer_texts;
    // The top-level keys a rail replaces, as written.
    std::vector<std::string> per_rail_keys;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark& mark) {
                 if (key == "listen_address" || key == "peers" ||
                     key == "peers_file") {
                   per_rail_keys.push_back(key);
                 }
                 if (key == "transport") {
                   s.transport = Scalar(value, key_path);
                   if (s.transport != "auto" && s.transport != "udp" &&
                       s.transport != "rdma") {
                     Fail(key_path, mark, "must be auto, rdma or udp");
                   }
                 } else if (key == "listen_address") {
                   s.listen_address = ListenAddress(value, key_path, mark);
                 } else if (key == "probe_timeout") {
                   s.probe_timeout = Duration(value, key_path);
                   if (s.probe_timeout.count() <= 0) {
                     Fail(key_path, mark, "must be positive");
                   }
                 } else if (key == "peers") {
                   peer_texts = PeerList(value, key_path, mark);
                 } else if (key == "peers_file") {
                   s.peers_file = Scalar(value, key_path);
                 } else if (key == "key_file") {
                   s.key_file = Scalar(value, key_path);
                 } else if (key == "rate_limit") {
                   s.rate_limit = Number(value, key_path, 0, 1e9,
                                         "answers per second (e.g. 2000)");
                 } else if (key == "rails") {
                   s.rails = ParseRails(value, key_path);
                 } else if (key == "trace_interval") {
                   s.trace_interval = TraceInterval(value, key_path);
                 } else if (key == "per_peer_histograms") {
                   s.per_peer_histograms = Bool(value, key_path);
                 } else if (key == "max_peers") {
                   s.max_peers = static_cast<int>(
                       Integer(value, key_path, 1, kMaxPeersLimit,
                               "a number of peers in 1..100000"));
                 }
               });
    s.peers = ParsePeers(peer_texts, s.listen_address.port());
    if (!s.rails.empty() && !per_rail_keys.empty()) {
      Fail(Join(path, per_rail_keys.front()),
           KeyMark(node, per_rail_keys.front()),
           "is per rail when `rails` is set (rails[].listen_address or "
           ".device, .peers, .peers_file)");
    }
    for (std::size_t i = 0; i < s.rails.size() || i == 0; ++i) {
      const auto& peers = s.rails.empty() ? s.peers : s.rails[i].peers;
      if (peers.size() > static_cast<std::size_t>(s.max_peers)) {
        Fail(s.rails.empty()
                 ? Join(path, "peers")
                 : Join(path, "rails[" + std::to_string(i) + "].peers"),
             s.rails.empty() ? peer_texts.mark
                             : KeyMark(node["rails"][i], "peers"),
             "lists " + std::to_string(peers.size()) +
                 " peers, more than max_peers (" + std::to_string(s.max_peers) +
                 ")");
      }
    }
    if (generic.enabled) {
      // The key's own line; the `enabled` line when it is not written.
      const YAML::Mark mark =
          KeyMark(node, s.key_file.empty() ? "enabled" : "key_file");
      const std::string key_path = Join(path, "key_file");
      if (s.key_file.empty()) {
        Fail(key_path, mark, "is required when probes are enabled");
      }
      // --check-config and a reload catch a missing or group-readable key
      // before the daemon runs on it.
      std::string error;
      if (auto key =
              LoadKeyFile(SecretPath(s.key_file, key_path, mark), &error)) {
        s.key = std::move(*key);
      } else {
        Fail(key_path, mark, error);
      }
      if (generic.interval.count() <= 0) {
        Fail(Join(path, "interval"), KeyMark(node, "interval"),
             "must be positive");
      }
    }
    return std::make_shared<SettingsOf<ProbeSettings>>(s);
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeProbeCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
