#include "probe/engine.h"

#include <time.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <set>

#include "core/thread_annotations.h"
#include "sources/netdev_port.h"
#include "sources/sysfs_parse.h"

namespace fabric::probe {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kReasons[] = {"bad_mac", "malformed", "rate_limited",
                                    "replay"};

double SteadySecondsNow() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// One address request a second per unreachable peer is plenty: addresses
// change only when a daemon restarts.
constexpr auto kAddressRequestEvery = std::chrono::seconds(1);
// Port requests: once a second until the first answer, then once a minute
// (a path moves to another rail only when cabling or routing changes), and
// once a minute as well after a few unanswered ones (a peer that predates
// the port exchange counts each one `malformed`).
constexpr auto kPortRequestFirst = std::chrono::seconds(1);
constexpr auto kPortRequestEvery = std::chrono::seconds(60);
constexpr int kPortRequestTries = 5;

// The pair-info labels of one side ("local_" or "remote_"): empty values
// for a side that is not a fabric port.
void AddPortLabels(Labels& labels, const char* side, const PortIdentity& p) {
  const std::string s = side;
  const bool known = p.known();
  labels.push_back({s + "node_guid", known ? FormatGuid(p.node_guid) : ""});
  labels.push_back(
      {s + "port_guid", known && p.port_guid ? FormatGuid(p.port_guid) : ""});
  labels.push_back({s + "lid", known && p.lid ? std::to_string(p.lid) : ""});
  labels.push_back({s + "gid", known ? FormatGid(p.gid) : ""});
}

// Lazy receive (Transport::SetLazyReceive) only while probes fall due at
// least this often, and then the timer wakes the engine at least this often:
// what an arriving request may wait for before this node sees it and turns
// lazy receive off.
constexpr auto kLazyMaxInterval = std::chrono::milliseconds(10);
// After a request from a peer, answer on arrival for this long.
constexpr auto kEagerAfterRequest = std::chrono::seconds(1);

}  // namespace

std::chrono::microseconds BatchWindow(std::chrono::microseconds interval) {
  return std::min<std::chrono::microseconds>(interval / 10, kLazyMaxInterval);
}

bool LazyReceiveFits(std::chrono::microseconds interval, std::size_t peers) {
  return peers > 0 && interval / peers <= kLazyMaxInterval;
}

std::int64_t RealtimeNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Engine::Engine(boost::asio::io_context& io, Hmac hmac, EngineOptions options,
               std::vector<std::unique_ptr<Transport>> transports)
    : io_(io),
      hmac_(std::move(hmac)),
      options_(options),
      transports_(std::move(transports)),
      timer_(io),
      rng_(std::random_device{}()),
      session_(rng_()),
      // A burst of a tenth of a second's worth: a peer that starts with a
      // backlog is not cut off, a flood is.
      guard_(options.rate_limit, std::max(1.0, options.rate_limit / 10)) {
  for (const auto& t : transports_) {
    Labels labels = options_.labels;
    for (auto& [k, v] : t->PeerLabels()) labels.push_back({k, v});
    labels.push_back({"transport", std::string(t->Name())});
    transport_labels_.push_back(std::move(labels));
  }
  MutexLock lock(mu_);
  port_rtt_.resize(transports_.size());
  send_errors_.resize(transports_.size());
}

bool Engine::Start(std::string* error) {
  for (std::size_t i = 0; i < transports_.size(); ++i) {
    std::weak_ptr<Engine> weak = shared_from_this();
    Transport::Handlers h;
    h.on_receive = [weak, i](const Received& r) {
      if (auto self = weak.lock(); self && !self->stopped_) {
        self->OnReceive(i, r);
      }
    };
    h.on_sent = [weak](std::uint64_t seq, Timestamp tx) {
      if (auto self = weak.lock(); self && !self->stopped_) {
        self->OnSent(seq, tx);
      }
    };
    std::string why;
    if (!transports_[i]->Start(std::move(h), &why) && i == 0) {
      if (error) *error = why;
      return false;
    }
  }
  Arm();
  return true;
}

void Engine::Stop() {
  stopped_ = true;
  timer_.cancel();
  for (auto& t : transports_) t->Stop();
}

void Engine::SetPeers(std::vector<ResolvedPeer> peers) {
  boost::asio::post(
      io_, [self = shared_from_this(), peers = std::move(peers)]() mutable {
        if (!self->stopped_) self->ApplyPeers(std::move(peers));
      });
}

void Engine::ApplyPeers(std::vector<ResolvedPeer> peers) {
  std::unordered_map<std::string_view, const PeerState*> old;
  for (const auto& p : peers_) old.emplace(p.resolved.peer.name, &p);
  std::vector<PeerState> next;
  std::set<std::string> names;
  auto now = Clock::now();
  std::uniform_int_distribution<std::int64_t> offset(
      0, std::max<std::int64_t>(0, options_.interval.count()));
  for (auto& r : peers) {
    names.insert(r.peer.name);
    auto it = old.find(r.peer.name);
    PeerState s;
    // A new peer starts at a random point of the interval, so a mesh does
    // not probe in lockstep.
    s.next = it != old.end() ? it->second->next
                             : now + std::chrono::microseconds(offset(rng_));
    s.resolved = std::move(r);
    next.push_back(std::move(s));
  }
  old.clear();  // its keys point into peers_
  peers_ = std::move(next);
  // Fresh vectors: a short list after a long one frees the long one's
  // storage (clear() would keep it).
  schedule_ = {};
  schedule_.reserve(peers_.size());
  if (sent_.capacity() > peers_.size()) sent_ = {};
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    schedule_.push_back({peers_[i].next, i});
  }
  std::make_heap(schedule_.begin(), schedule_.end(), std::greater<>{});
  {
    MutexLock lock(mu_);
    // Outstanding port requests name peers by index: forgotten.
    port_requests_.clear();
    std::erase_if(pairs_,
                  [&](const auto& kv) { return !names.count(kv.first); });
    std::set<const SeriesStats*> gone;
    for (auto it = stats_.begin(); it != stats_.end();) {
      if (names.count(it->first.first)) {
        ++it;
      } else {
        gone.insert(&it->second);
        it = stats_.erase(it);
      }
    }
    // Probes to dropped peers count nowhere now: forgotten, their answers
    // match nothing.
    for (auto& e : pending_) {
      if (gone.count(e.series)) e.series = nullptr;
    }
    // Every peer's series exist from the start (sent 0), on the transport
    // it is probed over first.
    std::size_t first = options_.mode == TransportMode::kRdma && Rdma() ? 1 : 0;
    for (auto& p : peers_) {
      SeriesStats& s = stats_[{p.resolved.peer.name, first}];
      if (s.since == Clock::time_point{}) s.since = now;
    }
  }
  Arm();
}

Clock::duration Engine::Jittered() {
  // +-10% around the interval.
  std::uniform_real_distribution<double> factor(0.9, 1.1);
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(
          static_cast<double>(options_.interval.count()) * factor(rng_)));
}

void Engine::Arm() {
  if (stopped_) return;
  auto now = Clock::now();
  auto wake =
      schedule_.empty() ? Clock::time_point::max() : schedule_.front().next;
  // Answered (or forgotten) probes at the front need no expiry.
  while (!pending_.empty() && !pending_.front().series) pending_.pop_front();
  if (!pending_.empty()) {
    // Expiring needs no wake-up of its own while peers keep the timer
    // ticking: a probe is counted lost at the first tick past its
    // deadline, at most min(interval, probe_timeout) late (a tick of its
    // own then). An answer read before then is still judged by its RTT
    // against probe_timeout (OnAnswer), so the count is the same.
    auto slack = peers_.empty()
                     ? Clock::duration::zero()
                     : Clock::duration(
                           std::min(options_.interval, options_.probe_timeout));
    wake = std::min(wake, pending_.front().deadline + slack);
  }
  // A prober that nobody probes needs no wake-up per answer: the answers'
  // kernel stamps keep the RTT exact, and the next tick (Poll in
  // OnTimer) reads them. Worth it only where ticks come often anyway.
  bool lazy =
      LazyReceiveFits(options_.interval, peers_.size()) && now >= eager_until_;
  if (lazy != lazy_) lazy_ = transports_[0]->SetLazyReceive(lazy);
  // A request arriving while lazy waits for the next tick: keep that short.
  if (lazy_) wake = std::min(wake, now + kLazyMaxInterval);
  if (wake == Clock::time_point::max()) return;
  timer_.expires_at(wake);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->stopped_) self->OnTimer();
  });
}

void Engine::OnTimer() {
  {
    MutexLock lock(mu_);
    ++wakeups_;
  }
  // Answers that arrived while receiving lazily, before any of them can be
  // counted lost below.
  if (lazy_) transports_[0]->Poll();
  auto now = Clock::now();
  // Expire probes that got no valid answer in time.
  while (!pending_.empty()) {
    Pending& first = pending_.front();
    if (first.series) {
      if (first.deadline > now) break;
      MutexLock lock(mu_);
      ++first.series->lost;
    }
    pending_.pop_front();
  }
  // Every probe due within the batch window goes out now, so that many
  // peers cost a wake-up per window, not one per probe. Each is sent (and
  // stamped) on its own: one stamp before a sendmmsg of the batch would add
  // the earlier sends to the later probes' RTT.
  auto batch_end = now + BatchWindow(options_.interval);
  // Popped until the next due is past the window, and pushed back after
  // the loop: a peer is probed at most once per tick.
  sent_.clear();
  while (!schedule_.empty() && schedule_.front().next <= batch_end) {
    std::pop_heap(schedule_.begin(), schedule_.end(), std::greater<>{});
    Due due = schedule_.back();
    schedule_.pop_back();
    PeerState& p = peers_[due.peer];
    SendProbe(p);
    p.next += Jittered();
    // Fell behind (a stalled io thread): resume from now, do not burst.
    if (p.next < now) p.next = now + Jittered();
    sent_.push_back({p.next, due.peer});
  }
  for (const Due& due : sent_) {
    schedule_.push_back(due);
    std::push_heap(schedule_.begin(), schedule_.end(), std::greater<>{});
  }
  Arm();
}

Transport* Engine::Rdma() const {
  return transports_.size() > 1 ? transports_[1].get() : nullptr;
}

void Engine::SendProbe(PeerState& p) {
  if (options_.port_of) SendPortRequest(p);
  const Endpoint& to = p.resolved.endpoint;
  std::size_t t = 0;
  Transport* rdma = Rdma();
  if (options_.mode != TransportMode::kUdp && rdma) {
    if (rdma->CanReach(to)) {
      t = 1;
    } else {
      SendAddressRequest(p);
      // `rdma` mode probes only over RDMA: nothing to send until the
      // address is known.
      if (options_.mode == TransportMode::kRdma) return;
    }
  }
  Packet packet;
  packet.type = MessageType::kProbe;
  packet.session = session_;
  packet.seq = next_seq_++;
  packet.t1_ns = RealtimeNs();
  Bytes bytes = Encode(packet, hmac_);
  auto tx = transports_[t]->Send(to, bytes, packet.seq);
  MutexLock lock(mu_);
  if (p.series.size() <= t) p.series.resize(t + 1);
  if (!p.series[t]) {
    p.series[t] = &stats_[{p.resolved.peer.name, t}];
    if (p.series[t]->since == Clock::time_point{}) {
      p.series[t]->since = Clock::now();
    }
  }
  SeriesStats& s = *p.series[t];
  if (!tx) {
    // Not sent, so not lost: only a probe whose authenticated answer did
    // not come is. The transport already retried a send that failed on a
    // queued ICMP error (anyone can send one); what still fails is counted
    // here, and a peer that stays unreachable shows as unanswered.
    ++send_errors_[t];
    return;
  }
  ++s.sent;
  // Sequence numbers and deadlines only grow: the deque stays sorted by
  // both.
  pending_.push_back(
      Pending{packet.seq, &s, *tx, Clock::now() + options_.probe_timeout});
}

Engine::Pending* Engine::FindPending(std::uint64_t seq) {
  auto it = std::lower_bound(
      pending_.begin(), pending_.end(), seq,
      [](const Pending& p, std::uint64_t s) { return p.seq < s; });
  if (it == pending_.end() || it->seq != seq || !it->series) return nullptr;
  return &*it;
}

void Engine::SendAddressRequest(PeerState& p) {
  auto now = Clock::now();
  if (now < p.next_address_request) return;
  p.next_address_request = now + kAddressRequestEvery;
  Packet packet;
  packet.type = MessageType::kAddressRequest;
  packet.session = session_;
  packet.seq = next_seq_++;
  // The request carries our own address, so the peer can probe us too.
  if (auto own = Rdma() ? Rdma()->LocalAddress() : std::nullopt) {
    packet.address = *own;
  } else {
    packet.flags = kFlagNoRdma;
  }
  transports_[0]->Send(p.resolved.endpoint, Encode(packet, hmac_), 0);
}

void Engine::SendPortRequest(PeerState& p) {
  const auto now = Clock::now();
  if (now < p.next_port_request) return;
  const bool rare = p.port_requests_unanswered >= kPortRequestTries ||
                    p.port_requests_unanswered < 0;  // answered once
  p.next_port_request = now + (rare ? kPortRequestEvery : kPortRequestFirst);
  if (p.port_requests_unanswered >= 0) ++p.port_requests_unanswered;
  Packet packet;
  packet.type = MessageType::kPortRequest;
  packet.session = session_;
  packet.seq = next_seq_++;
  // Bounded: an unanswered request is forgotten once this many follow it.
  if (port_requests_.size() > 4 * peers_.size() + 16) port_requests_.clear();
  port_requests_[packet.seq] = static_cast<std::size_t>(&p - peers_.data());
  transports_[0]->Send(p.resolved.endpoint, Encode(packet, hmac_), 0);
}

void Engine::OnPortAnswer(const Received& r, const Packet& in) {
  if (in.session != session_) return;
  auto it = port_requests_.find(in.seq);
  if (it == port_requests_.end() || it->second >= peers_.size()) return;
  PeerState& p = peers_[it->second];
  port_requests_.erase(it);
  p.port_requests_unanswered = -1;
  const PortIdentity local =
      options_.port_of ? options_.port_of(r.ifindex) : PortIdentity{};
  MutexLock lock(mu_);
  pairs_[p.resolved.peer.name] = {local, in.port_id};
}

void Engine::OnSent(std::uint64_t seq, Timestamp tx) {
  Pending* p = FindPending(seq);
  if (!p) return;
  if (tx.software_ns) p->tx.software_ns = tx.software_ns;
  if (tx.hardware_ns) p->tx.hardware_ns = tx.hardware_ns;
}

void Engine::Reject(const char* reason) {
  MutexLock lock(mu_);
  ++rejected_[reason];
}

void Engine::OnReceive(std::size_t t, const Received& r) {
  DecodeError error{};
  auto packet = Decode(r.bytes, hmac_, &error);
  if (!packet) {
    Reject(ReasonLabel(error));
    return;
  }
  switch (packet->type) {
    case MessageType::kProbe:
    case MessageType::kAddressRequest:
    case MessageType::kPortRequest:
      // Requests from a peer are answered on arrival: lazy receive would
      // add up to an interval to its RTT. Arm() turns it off.
      eager_until_ = Clock::now() + kEagerAfterRequest;
      Answer(t, r, *packet);
      break;
    case MessageType::kAnswer:
      OnAnswer(t, r, *packet);
      break;
    case MessageType::kAddressAnswer:
      OnAddressAnswer(r, *packet);
      break;
    case MessageType::kPortAnswer:
      OnPortAnswer(r, *packet);
      break;
  }
}

void Engine::Answer(std::size_t t, const Received& r, const Packet& in) {
  // Decode() checked the MAC; the guard checks freshness before it
  // charges the source's rate limit (RequestGuard).
  switch (guard_.Admit(r.from.key, in.session, in.seq, SteadySecondsNow())) {
    case RequestGuard::Verdict::kReplay:
      Reject("replay");
      return;
    case RequestGuard::Verdict::kRateLimited:
      Reject("rate_limited");
      return;
    case RequestGuard::Verdict::kAccept:
      break;
  }
  Packet out = in;
  if (in.type == MessageType::kProbe) {
    out.type = MessageType::kAnswer;
    // Both on the software clock: t3 can only be read from it, and only
    // stamps of one clock are subtracted.
    out.flags = 0;
    out.t2_ns = r.rx.software_ns ? r.rx.software_ns : RealtimeNs();
    out.t3_ns = RealtimeNs();
  } else if (in.type == MessageType::kPortRequest) {
    out.type = MessageType::kPortAnswer;
    out.flags = 0;
    out.port_id =
        options_.port_of ? options_.port_of(r.ifindex) : PortIdentity{};
  } else {
    Transport* rdma = Rdma();
    if (rdma && !(in.flags & kFlagNoRdma)) {
      rdma->SetPeerAddress(r.from.udp, in.address);
    }
    out.type = MessageType::kAddressAnswer;
    out.flags = 0;
    out.address = {};
    if (auto own = rdma ? rdma->LocalAddress() : std::nullopt) {
      out.address = *own;
    } else {
      out.flags = kFlagNoRdma;
    }
  }
  // Same size as what arrived: the wire format is fixed-size.
  if (transports_[t]->Reply(r.from, Encode(out, hmac_))) {
    MutexLock lock(mu_);
    ++answered_;
  }
}

void Engine::OnAnswer(std::size_t t, const Received& r, const Packet& in) {
  // An answer to another run's probe, or one already counted lost or
  // answered: nothing to match.
  if (in.session != session_) return;
  Pending* found = FindPending(in.seq);
  if (!found) return;
  Pending p = *found;
  found->series = nullptr;  // answered: popped with the front
  std::int64_t rtt_ns;
  if (p.tx.hardware_ns && r.rx.hardware_ns) {
    rtt_ns = r.rx.hardware_ns - p.tx.hardware_ns;
  } else {
    std::int64_t rx = r.rx.software_ns ? r.rx.software_ns : RealtimeNs();
    rtt_ns = rx - p.tx.software_ns;
  }
  MutexLock lock(mu_);
  SeriesStats& s = *p.series;
  // Authenticated and ours (session, pending sequence): the peer answers.
  s.last_answer = Clock::now();
  if (rtt_ns > std::chrono::nanoseconds(options_.probe_timeout).count()) {
    // Late, though read before the expiry: not within probe_timeout.
    ++s.lost;
    return;
  }
  if (rtt_ns < 0) {
    // The realtime clock stepped back between send and answer: no usable
    // measurement, and the answer came, so not lost either.
    return;
  }
  std::int64_t held = in.t3_ns >= in.t2_ns ? in.t3_ns - in.t2_ns : 0;
  std::int64_t network = std::clamp<std::int64_t>(rtt_ns - held, 0, rtt_ns);
  const double rtt = static_cast<double>(rtt_ns) * 1e-9;
  s.rtt.Observe(rtt);
  s.network_rtt.Observe(static_cast<double>(network) * 1e-9);
  s.rtt_max.Observe(rtt, Clock::now());
  port_rtt_[t].Observe(rtt);
}

void Engine::OnAddressAnswer(const Received& r, const Packet& in) {
  if (in.session != session_) return;
  Transport* rdma = Rdma();
  if (rdma && !(in.flags & kFlagNoRdma)) {
    rdma->SetPeerAddress(r.from.udp, in.address);
  }
}

void Engine::EmitPair(MetricSink& sink, const SeriesKey& key,
                      const SeriesStats& s, Clock::time_point now,
                      Labels& labels,
                      prometheus::ClientMetric::Histogram& histogram) const {
  labels = transport_labels_[key.second];
  labels.push_back({"peer", key.first});
  constexpr const char* kRttHelp = "Round-trip time of probes to the peer.";
  constexpr const char* kNetworkHelp =
      "Probe round-trip time minus the time the responder held the probe "
      "(its receive to send timestamps).";
  if (options_.per_peer_histograms) {
    s.rtt.ExportTo(histogram);
    sink.Histogram("fabric_probe_rtt_seconds", kRttHelp, labels, histogram);
    s.network_rtt.ExportTo(histogram);
    sink.Histogram("fabric_probe_network_rtt_seconds", kNetworkHelp, labels,
                   histogram);
  } else {
    // The same _sum and _count series as the histograms' (rules and
    // fabricmon-locate read means from them either way), without buckets.
    sink.Summary("fabric_probe_rtt_seconds", kRttHelp, labels, s.rtt.count(),
                 s.rtt.sum());
    sink.Summary("fabric_probe_network_rtt_seconds", kNetworkHelp, labels,
                 s.network_rtt.count(), s.network_rtt.sum());
  }
  if (auto max = s.rtt_max.Get(now)) {
    sink.Gauge("fabric_probe_rtt_max_seconds",
               "The largest probe round-trip time to the peer over the last "
               "50-60 s (absent when no probe was answered in it).",
               labels, *max);
  }
  sink.Counter("fabric_probe_sent_total", "Probes sent to the peer.", labels,
               static_cast<double>(s.sent));
  sink.Counter("fabric_probe_lost_total",
               "Probes with no valid answer within probe_timeout.", labels,
               static_cast<double>(s.lost));
}

bool Engine::Emit(MetricSink& sink, std::string* error) const {
  const auto now = Clock::now();
  // One labels vector and one histogram for every peer: the sink copies
  // them into recycled samples, so emitting 1,000 peers allocates little.
  Labels labels;
  prometheus::ClientMetric::Histogram histogram;
  MutexLock lock(mu_);
  std::vector<bool> probed(port_rtt_.size(), false);
  for (const auto& [key, s] : stats_) {
    EmitPair(sink, key, s, now, labels, histogram);
    probed[key.second] = true;
  }
  // A transport's histogram once it has peers (a responder without any
  // exports none).
  for (std::size_t t = 0; t < port_rtt_.size(); ++t) {
    if (!probed[t] && port_rtt_[t].count() == 0) continue;
    port_rtt_[t].ExportTo(histogram);
    sink.Histogram("fabric_probe_port_rtt_seconds",
                   "Round-trip time of every probe this daemon sent from "
                   "this local port (rail, transport), whatever its peer.",
                   transport_labels_[t], histogram);
  }
  for (const char* reason : kReasons) {
    auto it = rejected_.find(reason);
    labels = options_.labels;
    labels.push_back({"reason", reason});
    sink.Counter("fabric_probe_rejected_total",
                 "Probe packets received and refused, by reason.", labels,
                 it == rejected_.end() ? 0.0 : static_cast<double>(it->second));
  }
  // Once per pair, not as labels on every series of the pair: a port
  // change replaces one series instead of seven (or ~100 with histograms).
  for (const auto& [peer, ports] : pairs_) {
    if (!ports.first.known() && !ports.second.known()) continue;
    labels = options_.labels;
    labels.push_back({"peer", peer});
    AddPortLabels(labels, "local_", ports.first);
    AddPortLabels(labels, "remote_", ports.second);
    sink.Gauge("fabric_probe_pair_info",
               "The fabric ports a peer's probes leave and reach by "
               "(learned in the port exchange), always 1.",
               labels, 1.0);
  }
  for (std::size_t t = 0; t < send_errors_.size(); ++t) {
    sink.Counter("fabric_probe_send_errors_total",
                 "Probes the socket refused to send (not counted sent or "
                 "lost), after a retry where a queued ICMP error failed it.",
                 transport_labels_[t], static_cast<double>(send_errors_[t]));
  }
  for (const auto& u : UnansweredLocked(now)) {
    labels = options_.labels;
    labels.push_back({"peer", u.peer});
    sink.Gauge("fabric_probe_peer_unanswered_seconds",
               "Seconds since the peer's last authenticated answer (since "
               "probing it began when it never answered); present only "
               "while that is over max(10 s, probe_timeout + 3 intervals).",
               labels, u.seconds);
  }
  sink.Counter("fabric_probe_answered_total",
               "Probes from peers this daemon answered.", options_.labels,
               static_cast<double>(answered_));
  if (auto drops = transports_[0]->ReceiveDrops()) {
    sink.Counter("fabric_probe_receive_dropped_total",
                 "Datagrams the kernel dropped at the probe socket because "
                 "its receive buffer was full (SO_RXQ_OVFL, as of the last "
                 "datagram read).",
                 options_.labels, static_cast<double>(*drops));
  }
  if (!transports_[0]->Healthy()) {
    if (error) *error = transports_[0]->LastError();
    return false;
  }
  return true;
}

Clock::duration Engine::UnansweredAfter() const {
  if (options_.unanswered_after.count() > 0) return options_.unanswered_after;
  return std::max<Clock::duration>(
      std::chrono::seconds(10), options_.probe_timeout + 3 * options_.interval);
}

std::vector<Engine::Unanswered> Engine::UnansweredLocked(
    Clock::time_point now) const {
  // Per peer: the latest answer (or start) over its transports; stats_ is
  // ordered by (peer, transport), so a peer's series are adjacent.
  std::vector<Unanswered> out;
  const Clock::duration after = UnansweredAfter();
  auto flush = [&](const std::string& peer, Clock::time_point last, bool ever,
                   std::uint64_t sent) {
    if (peer.empty() || last == Clock::time_point{}) return;
    if (now - last < after) return;
    out.push_back(
        {peer, std::chrono::duration<double>(now - last).count(), ever, sent});
  };
  std::string peer;
  Clock::time_point last{};
  bool ever = false;
  std::uint64_t sent = 0;
  for (const auto& [key, s] : stats_) {
    if (key.first != peer) {
      flush(peer, last, ever, sent);
      peer = key.first;
      last = {};
      ever = false;
      sent = 0;
    }
    last = std::max({last, s.since, s.last_answer});
    ever = ever || s.last_answer != Clock::time_point{};
    sent += s.sent;
  }
  flush(peer, last, ever, sent);
  return out;
}

std::vector<Engine::Unanswered> Engine::UnansweredPeers() const {
  MutexLock lock(mu_);
  return UnansweredLocked(Clock::now());
}

std::map<std::string, std::uint64_t> Engine::LostByPeer() const {
  MutexLock lock(mu_);
  std::map<std::string, std::uint64_t> out;
  for (const auto& [key, s] : stats_) out[key.first] += s.lost;
  return out;
}

std::map<std::string, std::uint64_t> Engine::Totals() const {
  MutexLock lock(mu_);
  std::map<std::string, std::uint64_t> out;
  for (const auto& [key, s] : stats_) {
    out["sent"] += s.sent;
    out["lost"] += s.lost;
    out["received"] += s.rtt.count();
  }
  out["answered"] = answered_;
  out["wakeups"] = wakeups_;
  for (std::uint64_t n : send_errors_) out["send_errors"] += n;
  for (const auto& [r, n] : rejected_) out["rejected:" + r] = n;
  return out;
}

}  // namespace fabric::probe
