// Engine: the probe initiator and responder over one or more transports
// (probe/transport.h; the UDP one always, an RDMA one where configured). It
// probes every peer on a jittered schedule (one timer, no thread per peer;
// probes due within BatchWindow() of a tick go out in it),
// matches answers to probes, counts a probe with no valid answer within
// `probe_timeout` as lost, and answers authenticated probes from others
// (replay window per source and session, rate limit per source address).
// It also runs the RDMA address exchange over UDP, and the port exchange
// (issue 29): each peer is asked which fabric port our request reached it
// on (its answer names its port, from the netdev the request arrived by),
// and the netdev the answer arrives by names ours; Emit() exports each pair
// once as fabric_probe_pair_info. Statistics accumulate here; Emit()
// writes them as the fabric_probe_* metrics: per pair at most 8 series by
// default (sent, lost, RTT and network-RTT sum and count, the last
// minute's max RTT, the pair info), one RTT histogram per transport over
// all peers, per-pair histograms only with per_peer_histograms.
//
// Thread-safety: Start/Stop and every handler run on the io_context thread;
// SetPeers() and Emit() may be called from any thread (they post to io, or
// take the statistics mutex). Handlers queued on io hold a shared_ptr, so
// the engine outlives a collector destroyed while one is queued.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth/hmac.h"
#include "core/metric_sink.h"
#include "core/thread_annotations.h"
#include "probe/guard.h"
#include "probe/histogram.h"
#include "probe/peers.h"
#include "probe/transport.h"
#include "probe/window_max.h"

namespace fabric::probe {

enum class TransportMode { kAuto, kUdp, kRdma };

struct EngineOptions {
  TransportMode mode = TransportMode::kAuto;
  std::chrono::microseconds interval = std::chrono::seconds(1);
  std::chrono::microseconds probe_timeout = std::chrono::seconds(1);
  // Answers per second per source address.
  double rate_limit = 2000;
  // The fabric port behind a local interface (by ifindex; all zero when it
  // has none). Null: this end names no ports (it still answers port
  // requests, with zeros).
  std::function<PortIdentity(int ifindex)> port_of;
  // Full RTT and network-RTT histograms per peer (`per_peer_histograms`);
  // otherwise each is a summary (sum and count) per peer, and the RTT
  // histogram is kept once per transport, over all peers.
  bool per_peer_histograms = false;
  // Labels on every series this engine exports (a rail's `rail`), first.
  Labels labels;
  // How long a peer may go without an authenticated answer before it is
  // unanswered (fabric_probe_peer_unanswered_seconds); 0: max(10 s,
  // probe_timeout + 3 intervals).
  std::chrono::microseconds unanswered_after{0};
};

// A configured peer with the endpoint its name resolved to.
struct ResolvedPeer {
  Peer peer;
  Endpoint endpoint;
  bool operator==(const ResolvedPeer&) const = default;
};

// The batch window: a tick sends every probe due within this much of now,
// so that probes to many peers share wake-ups: interval / 10 (the same
// order as the +-10% jitter), at most 10 ms.
std::chrono::microseconds BatchWindow(std::chrono::microseconds interval);
// Whether a prober with `peers` peers probed every `interval` ticks often
// enough (a probe due every 10 ms or less) to read its answers lazily.
bool LazyReceiveFits(std::chrono::microseconds interval, std::size_t peers);

// Clocks, injectable for tests: realtime nanoseconds (the domain of
// software timestamps) and the steady clock for the schedule.
std::int64_t RealtimeNs();

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // transports[0] is the UDP transport (the address exchange runs on it);
  // an RDMA transport, when any, follows.
  Engine(boost::asio::io_context& io, Hmac hmac, EngineOptions options,
         std::vector<std::unique_ptr<Transport>> transports);

  // io thread. Starts every transport; false with the reason when the UDP
  // one cannot start (an RDMA one that cannot is logged in LastError and
  // left out).
  bool Start(std::string* error);
  // io thread.
  void Stop();
  // Any thread: replaces the peer list (posted to io). Statistics of
  // peers no longer listed are dropped; kept peers keep theirs.
  void SetPeers(std::vector<ResolvedPeer> peers);
  // Any thread: writes the statistics; returns whether the UDP transport
  // is healthy, with the reason in `error` when not.
  bool Emit(MetricSink& sink, std::string* error) const;

  // A peer with no authenticated answer for UnansweredAfter(): one that
  // never answers (no responder on that port, another key) or stopped.
  struct Unanswered {
    std::string peer;
    double seconds = 0;      // since its last answer, or since probing began
    bool ever = false;       // it answered at some point
    std::uint64_t sent = 0;  // probes sent to it (every transport)
  };
  // Any thread: the peers unanswered now, by name.
  std::vector<Unanswered> UnansweredPeers() const;
  // How long a peer may go without an answer before it counts as
  // unanswered (EngineOptions::unanswered_after).
  std::chrono::steady_clock::duration UnansweredAfter() const;

  // For tests: totals by name ("sent", "lost", "received", "answered",
  // "send_errors", "rejected:<r>", "wakeups": timer ticks).
  std::map<std::string, std::uint64_t> Totals() const;
  // Any thread: probes lost so far per peer (every transport), so that the
  // collector can trace a pair's path when it starts losing.
  std::map<std::string, std::uint64_t> LostByPeer() const;

 private:
  struct SeriesStats {
    // Buckets exported only with per_peer_histograms; their sum and count
    // always.
    RttHistogram rtt, network_rtt;
    WindowMax rtt_max;
    std::uint64_t sent = 0, lost = 0;
    // When probing over this transport began, and the last authenticated
    // answer (epoch: none yet).
    std::chrono::steady_clock::time_point since{}, last_answer{};
  };
  struct PeerState {
    ResolvedPeer resolved;
    std::chrono::steady_clock::time_point next;
    std::chrono::steady_clock::time_point next_address_request{};
    std::chrono::steady_clock::time_point next_port_request{};
    int port_requests_unanswered = 0;
    // Its series in stats_ by transport, found once (map nodes stay put
    // until ApplyPeers erases them): a probe and its answer then cost no
    // lookup by name.
    std::vector<SeriesStats*> series;
  };
  // A probe awaiting its answer. Kept in send order, which is both
  // sequence order (found by binary search) and deadline order (expired
  // from the front): no hashing and no node allocated per probe.
  struct Pending {
    std::uint64_t seq;
    SeriesStats* series;  // in stats_; null once answered or its peer dropped
    Timestamp tx;
    std::chrono::steady_clock::time_point deadline;
  };
  // A peer's next probe time in the schedule heap (earliest on top).
  struct Due {
    std::chrono::steady_clock::time_point next;
    std::size_t peer;  // index in peers_
    bool operator>(const Due& o) const { return next > o.next; }
  };
  using SeriesKey = std::pair<std::string, std::size_t>;  // peer, transport

  void ApplyPeers(std::vector<ResolvedPeer> peers);
  void Arm();
  void OnTimer();
  void SendProbe(PeerState& p);
  void SendAddressRequest(PeerState& p);
  void SendPortRequest(PeerState& p);
  void OnPortAnswer(const Received& r, const Packet& in);
  void OnReceive(std::size_t transport, const Received& r);
  void OnSent(std::uint64_t seq, Timestamp tx);
  void Answer(std::size_t transport, const Received& r, const Packet& in);
  void OnAnswer(std::size_t transport, const Received& r, const Packet& in);
  // Emit's per-pair series; `labels` and `histogram` are its scratch.
  void EmitPair(MetricSink& sink, const SeriesKey& key, const SeriesStats& s,
                std::chrono::steady_clock::time_point now, Labels& labels,
                prometheus::ClientMetric::Histogram& histogram) const
      REQUIRES(mu_);
  void OnAddressAnswer(const Received& r, const Packet& in);
  Pending* FindPending(std::uint64_t seq);
  void Reject(const char* reason);
  // The peers' unanswered state, from stats_.
  std::vector<Unanswered> UnansweredLocked(
      std::chrono::steady_clock::time_point now) const REQUIRES(mu_);
  std::chrono::steady_clock::duration Jittered();
  Transport* Rdma() const;

  boost::asio::io_context& io_;
  Hmac hmac_;
  EngineOptions options_;
  std::vector<std::unique_ptr<Transport>> transports_;
  // Per transport: its series' labels besides `peer` (fixed at start, so
  // Emit() need not call into the transport from another thread).
  std::vector<Labels> transport_labels_;
  boost::asio::steady_timer timer_;
  std::mt19937_64 rng_;
  std::uint64_t session_;
  std::uint64_t next_seq_ = 1;
  bool stopped_ = false;
  // Lazy receive on transports_[0] (see Arm()), and until when a request
  // from a peer keeps it off.
  bool lazy_ = false;
  std::chrono::steady_clock::time_point eager_until_{};
  std::vector<PeerState> peers_;
  // Every peer once, by next probe time: a tick pops only the peers due in
  // it, and Arm() reads the earliest from the top, so a tick costs what it
  // sends, not a walk over every peer (1,000 peers, 100 ticks a second).
  std::vector<Due> schedule_;
  std::vector<Due> sent_;  // OnTimer's scratch (its capacity kept)
  std::deque<Pending> pending_;
  // Port requests awaiting an answer: sequence number -> index in peers_
  // (cleared when the peer list changes).
  std::map<std::uint64_t, std::size_t> port_requests_;
  RequestGuard guard_;

  // The statistics (Emit and Totals read them from the collector's
  // thread). SeriesStats pointers into stats_ (PeerState::series,
  // Pending::series) are dereferenced only under mu_ too.
  mutable Mutex mu_;
  std::map<SeriesKey, SeriesStats> stats_ GUARDED_BY(mu_);
  std::map<std::string, std::uint64_t> rejected_ GUARDED_BY(mu_);
  // Per transport: the RTT of every answered probe, whatever its peer.
  std::vector<RttHistogram> port_rtt_ GUARDED_BY(mu_);
  // Per transport: probes the socket refused to send (not sent, so neither
  // sent nor lost: an unauthenticated ICMP error can fail a send).
  std::vector<std::uint64_t> send_errors_ GUARDED_BY(mu_);
  // Per peer: (our port, its port), as the last port answer said.
  std::map<std::string, std::pair<PortIdentity, PortIdentity>> pairs_
      GUARDED_BY(mu_);
  // Probes this responder answered.
  std::uint64_t answered_ GUARDED_BY(mu_) = 0;
  std::uint64_t wakeups_ GUARDED_BY(mu_) = 0;  // timer ticks
};

}  // namespace fabric::probe
