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

#include <bitset>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
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
  bool is_hca = false;           // the port's node is a channel adapter
  std::uint16_t device_id = 0;   // NodeInfo DeviceID (for the wait tick)
  int lanes = 0;                 // active link width; 0 unknown
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
  PortRef ref;           // e.g. the NIC's node GUID and port
  std::string name;      // host / device:port, for reports
  std::optional<double> tx_pause_frames;
  std::optional<double> rx_pause_frames;
  // Pause durations (seconds) where the NIC counts them; nullopt if not.
  std::optional<double> tx_pause_seconds;
  std::optional<double> rx_pause_seconds;
};

struct SweepInput {
  double interval_seconds = 0;  // the time the deltas cover
  std::vector<PortSample> ports;
  Lfts lfts;                     // may lack switches (then: partial)
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
enum class Cause { kNone, kSlowReceiver, kOversubscribed, kUnbalanced,
                   kPfcOrigin };
const char* RoleName(Role role);    // "root", "victim", "unknown"
const char* CauseName(Cause cause); // "", "slow_receiver", ...

struct PortVerdict {
  PortRef ref;
  Role role = Role::kUnknown;
  PortRef root;              // victims: the root their chain ends at
  Cause cause = Cause::kNone;  // roots only
  double wait_fraction = 0;  // of the interval the port could not send
  double lost_bytes_per_second = 0;  // wait_fraction x link rate
  std::string why;           // kUnknown: what was missing
};

struct RootSummary {
  PortRef ref;
  Cause cause = Cause::kNone;
  int victims = 0;  // victim ports that name this root
  double tree_lost_bytes_per_second = 0;  // root + its victims
  double since_seconds = 0;  // Tracker: when it became a root (0 unset)
};

struct Classification {
  std::vector<PortVerdict> ports;   // waiting ports only, by ref
  std::vector<RootSummary> roots;   // by tree lost bandwidth, largest first
  std::vector<std::string> partial;  // what was missing (first few)
};

// Next hops of switch ports, from the LFTs: built once per routing
// (topology generation) and reused across sweeps; computed lazily per
// switch (only switches with a waiting port cost anything).
class RouteIndex {
 public:
  // `links`: every known port's remote end (switch and HCA ports).
  void Reset(const Lfts* lfts);
  // The ports of `next` (the node (s, port) links to) that traffic out of
  // (s, port) leaves `next` by; nullopt when a table is missing.
  std::optional<std::bitset<256>> NextHops(std::uint64_t s, int port,
                                           std::uint64_t next);

 private:
  const Lfts* lfts_ = nullptr;
  // (switch, neighbour) -> per out port of the switch, next-hop ports.
  std::map<std::pair<std::uint64_t, std::uint64_t>,
           std::map<int, std::bitset<256>>> cache_;
};

// One sweep -> roots and victims. `index` (optional) keeps next hops across
// sweeps; null builds a temporary one.
Classification Classify(const SweepInput& input, const Thresholds& thresholds,
                        RouteIndex* index = nullptr);

// Since-when and hysteresis across sweeps: a root keeps its `since` while
// it stays a root; a port named root is confirmed at once (the verdict
// within one sweep) and a root that stops waiting is dropped at once (roots
// move), but a root that turns kUnknown for up to `hold_sweeps` sweeps (a
// switch that did not answer) keeps its place as last known.
class Tracker {
 public:
  explicit Tracker(int hold_sweeps = 2) : hold_sweeps_(hold_sweeps) {}
  // Fills roots[].since_seconds; `now_seconds` is the sweep's time.
  void Update(Classification& result, double now_seconds);

 private:
  struct Seen {
    double since = 0;
    int missing = 0;
    RootSummary last;
  };
  int hold_sweeps_;
  std::map<PortRef, Seen> roots_;
};

}  // namespace fabric::congestion
