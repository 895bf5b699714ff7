// Congestion trees (issue 42): from one sweep's per-port counter deltas and
// the switches' linear forwarding tables, each waiting port is named a
// root (it waits, and the ports its traffic continues through do not) or a
// victim (a port its traffic continues through waits too; it names the root
// that chain ends at), and each root gets a cause:
//   slow_receiver  - the root sends into an HCA that does not drain at line
//                    rate (HCA backpressure: the link is far from full);
//   oversubscribed - the root's link runs near line rate: more is routed to
//                    it than it carries;
//   unbalanced     - the root is one of parallel links to the same
//                    neighbour whose transmit data differ by a coefficient
//                    of variation > 0.5 (static routing, or adaptive
//                    routing not spreading);
//   pfc_origin     - RoCE: the host port that sends PFC pauses (its receive
//                    side is congested) against the hosts that are paused.
//
// "Where traffic continues": for a port (S, p) whose link reaches node N,
// the ports of N that the destinations S routes out of p leave N by
// (N.lft[d] for every d with S.lft[d] == p). An HCA terminates its traffic.
// A missing table (S's or N's) makes the next hop "any port of N but the
// one traffic came in by". A port whose next hops are unknown (no counters:
// unanswered, went backwards, foreign shard not read) is never named a
// root: it is kUnknown unless a known next hop waits (then a victim).
// Bad input gives a partial answer, never a wrong root.
//
// Pure functions of their input; Tracker (since-when, hysteresis) keeps
// state between sweeps.
//
// Thread-safety: Classify() is a pure function; RouteIndex and Tracker are
// not thread-safe (one thread each).
#pragma once

#include <array>
#include <bitset>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fabric::congestion {

struct PortRef {
  std::uint64_t guid = 0;  // node GUID (switch or HCA)
  int port = 0;
  auto operator<=>(const PortRef&) const = default;
};
// "0x0002c90000000001:7"
std::string PortRefString(const PortRef& ref);

// One port's counters over one sweep interval. A delta is nullopt when it
// is not known this sweep (no answer, counter went backwards or saturated,
// first sweep): such a port is never a root.
struct PortSample {
  PortRef ref;
  bool is_hca = false;          // the port's node is a channel adapter
  std::uint16_t device_id = 0;  // NodeInfo DeviceID (for the wait tick)
  int lanes = 0;                // active link width; 0 unknown
  std::optional<double> xmit_wait_ticks;  // PortXmitWait delta
  std::optional<double> xmit_bytes;       // PortXmitData delta x 4
  std::optional<double> rcv_bytes;        // PortRcvData delta x 4
  double rate_bytes_per_second = 0;       // active width x lane rate; 0 unknown
  PortRef remote;                         // guid 0: no link / not known
  bool remote_is_hca = false;
};

// Linear forwarding tables: per switch node GUID, entry d = the out port
// for destination LID d (255 or beyond the vector: not routed).
using Lfts = std::map<std::uint64_t, std::vector<std::uint8_t>>;

// RoCE: one host port's PFC pause counters over the interval (summed over
// priorities, or the lossless priority only). A host has no forwarding
// table; pause frames name no flow, so a pfc tree is: the hosts that send
// pauses (origins) and the hosts that receive them (victims).
struct HostPause {
  PortRef ref;       // e.g. the NIC's node GUID and port
  std::string name;  // host / device:port, for reports
  std::optional<double> tx_pause_frames;
  std::optional<double> rx_pause_frames;
  // Pause durations (seconds) where the NIC counts them; nullopt if not.
  std::optional<double> tx_pause_seconds;
  std::optional<double> rx_pause_seconds;
  double rate_bytes_per_second = 0;  // for the bandwidth a pause costs
};

struct SweepInput {
  double interval_seconds = 0;  // the time the deltas cover
  std::vector<PortSample> ports;
  Lfts lfts;                      // may lack switches (then: partial)
  std::vector<HostPause> pauses;  // RoCE, optional
};

struct Thresholds {
  // The PortXmitWait tick of a device WaitTickFor() does not know.
  double fallback_tick_seconds = 256e-9;
  // A port waits when its wait fraction (ticks x tick / interval) is at
  // least this; a next hop counts as waiting from `next_hop_wait` on (lower,
  // so that a weakly waiting next hop keeps a port from being a root).
  double wait = 0.05;
  double next_hop_wait = 0.02;
  // ... and at least this share of the port's own wait: a next hop that
  // waits a sliver of what the port waits does not explain it (noise).
  double next_hop_ratio = 0.25;
  // Link utilisation from which a root is `oversubscribed`.
  double oversubscribed_utilization = 0.8;
  // Coefficient of variation of xmit bytes over parallel links above which
  // a waiting one is `unbalanced`.
  double unbalanced_cv = 0.5;
  // RoCE: pause time fraction (or pause frames per second when the NIC has
  // no durations) from which a host sends / receives pauses.
  double pause_fraction = 0.01;
  double pause_frames_per_second = 1000;
};

enum class Role { kRoot, kVictim, kUnknown };
enum class Cause {
  kNone,
  kSlowReceiver,
  kOversubscribed,
  kUnbalanced,
  kPfcOrigin
};
const char* RoleName(Role role);     // "root", "victim", "unknown"
const char* CauseName(Cause cause);  // "", "slow_receiver", ...

struct PortVerdict {
  PortRef ref;
  Role role = Role::kUnknown;
  PortRef root;                      // victims: the root their chain ends at
  Cause cause = Cause::kNone;        // roots only
  double wait_fraction = 0;          // of the interval the port could not send
  double lost_bytes_per_second = 0;  // wait_fraction x link rate
  std::string why;                   // kUnknown: what was missing
};

struct RootSummary {
  PortRef ref;
  Cause cause = Cause::kNone;
  int victims = 0;                        // victim ports that name this root
  double tree_lost_bytes_per_second = 0;  // root + its victims
  double since_seconds = 0;  // Tracker: when it became a root (0 unset)
};

struct Classification {
  std::vector<PortVerdict> ports;    // waiting ports only, by ref
  std::vector<RootSummary> roots;    // by tree lost bandwidth, largest first
  std::vector<std::string> partial;  // what was missing (first few)
};

// Next hops of switch ports, from the LFTs: built once per routing
// (topology generation) and reused across sweeps; computed lazily per
// switch (only switches with a waiting port cost anything).
class RouteIndex {
 public:
  using PortSet = std::bitset<256>;
  // `neighbours`: switch GUID -> remote node GUID per port (0 none).
  using Neighbours = std::map<std::uint64_t, std::array<std::uint64_t, 256>>;
  // Forgets everything: call when the tables (routing) change.
  void Reset() { cache_.clear(); }
  // The ports of the node behind (s, port) that the destinations s routes
  // out of `port` leave that node by (port 0, the node itself, left out);
  // nullopt when s's or the neighbour's table is missing. One pass over
  // s's table serves all its ports (cached until Reset).
  std::optional<PortSet> NextHops(const Lfts& lfts,
                                  const Neighbours& neighbours, std::uint64_t s,
                                  int port);

 private:
  struct Entry {
    std::array<std::uint64_t, 256> row{};  // the neighbours it was built on
    std::array<PortSet, 256> next;
    std::array<bool, 256> known{};
  };
  std::map<std::uint64_t, Entry> cache_;
};

// One sweep -> roots and victims. `index` (optional) keeps next hops across
// sweeps (the caller Reset()s it when the routing changes); null builds a
// temporary one. `held`: ports that were roots last sweep; they count as
// waiting down to Thresholds::next_hop_wait (hysteresis), others from
// Thresholds::wait.
Classification Classify(const SweepInput& input, const Thresholds& thresholds,
                        RouteIndex* index = nullptr,
                        const std::vector<PortRef>* held = nullptr);

// Sharded sweeps (a switch belongs to one shard by its GUID): a shard's
// waiting port may send into a switch of another shard. The shard reads
// the counters of those foreign next hops itself (PortCounters of a few
// ports at the shard edge), so it decides every port of its own exactly as
// an unsharded sweep would; each round follows the waiting chains one hop
// further. EdgeReads() lists the foreign ports (on switches for which
// `own(guid)` is false) that are next hops of a waiting port in `input` and
// are not in `input` yet; the caller adds their samples and asks again
// until the list is empty (at most the fabric's diameter rounds).
// A shard then exports its own ports only (OwnedOnly); a root's victims in
// other shards are counted by those shards, and Prometheus sums them by
// root (recording rule fabric:congestion_tree_victims:sum).
std::vector<PortRef> EdgeReads(const SweepInput& input,
                               const Thresholds& thresholds, RouteIndex* index,
                               const std::function<bool(std::uint64_t)>& own);
// The verdicts of ports on `own` switches, and per root (anywhere) the
// victims and lost bandwidth of those ports; a root's cause and since only
// where the root is own (others: cause kNone, counted for the sum).
Classification OwnedOnly(const Classification& all,
                         const std::function<bool(std::uint64_t)>& own);

// Since-when and hysteresis across sweeps: a port named root is reported
// at once (the verdict within one sweep); while it stays a root it keeps
// its `since`, and while ports still wait behind it it stays a root down to
// the lower next-hop threshold (no flapping around Thresholds::wait). A root
// that stops waiting is dropped at once (roots move). A root that is kUnknown
// (its switch or a next hop did not answer) is not reported, but keeps its
// `since` for up to `hold_sweeps` sweeps, so one lost sweep does not restart
// the clock.
class Tracker {
 public:
  explicit Tracker(int hold_sweeps = 2) : hold_sweeps_(hold_sweeps) {}
  // Classify() with last sweep's roots held, then since_seconds filled in;
  // `now_seconds` is the sweep's time.
  Classification Run(const SweepInput& input, const Thresholds& thresholds,
                     double now_seconds, RouteIndex* index = nullptr);
  // The since-when bookkeeping alone (for results classified elsewhere).
  void Update(Classification& result, double now_seconds);
  // The ports it keeps as roots: last sweep's, and those held while unknown.
  std::vector<PortRef> Tracked() const;

 private:
  struct Seen {
    double since = 0;
    int missing = 0;  // sweeps in a row it was not a root but not cleared
  };
  int hold_sweeps_;
  std::map<PortRef, Seen> roots_;
  std::set<PortRef> unanswered_;  // Run(): ports without counters
};

}  // namespace fabric::congestion
