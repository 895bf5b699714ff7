// Path tracing for UDP probe flows (issue 29 item 4): where hosts route at
// layer 3, ECMP hashes each flow onto one of several equal paths, so the
// path a probe takes is known only by asking the network. Paris-traceroute
// style: TTL-limited datagrams sent on the probe flow's OWN 5-tuple (the
// probe socket itself, to the peer's probe port), so every router hashes
// them onto the probe's path; each router where the TTL runs out answers
// ICMP Time Exceeded, which the socket reads from its error queue
// (IP_RECVERR + MSG_ERRQUEUE; SO_EE_OFFENDER names the router), without a
// raw socket. The trace ends at the first TTL that draws no answer after
// `tries` sends (the datagram reached the peer, whose transport drops it
// silently: IsTracePayload) or at a Port Unreachable from the peer.
//
// ParseErrorRecord is a pure function of one error-queue record's bytes;
// PathTrace is the per-peer state machine with time passed in; PathTracer
// runs traces on an io_context with the send injected, so none of it needs
// a socket in tests. It sends only to the peers it is asked to trace.
//
// Thread-safety: ParseErrorRecord and PathTrace are values; a PathTracer
// and its callbacks run on its io_context's thread only.
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/hmac.h"
#include "probe/transport.h"

namespace fabric::probe {

// A trace datagram's payload (kTracePayloadBytes, integers big-endian):
//   off len
//    0   4  magic "FMTR"
//    4   1  the TTL it was sent with
//    5   3  zero
//    8   8  trace id: random per trace (RandomTraceId), never counted up
//   16  32  HMAC-SHA256 over bytes 0..15 with the probe key
// Only an ICMP error that quotes it back proves it answers our own trace
// (issue 40): the tag names this trace and TTL, so a late answer to an
// earlier one is not taken for it, and a forger who never saw the datagram
// cannot guess the id; where the router quoted the whole payload (Linux
// quotes up to 576 bytes, RFC 1812) the MAC proves the key made it too.
inline constexpr std::size_t kTraceTagBytes = 16;
inline constexpr std::size_t kTracePayloadBytes = kTraceTagBytes + kMacBytes;
std::vector<std::uint8_t> TracePayload(int ttl, std::uint64_t trace_id,
                                       const Hmac& hmac);
bool IsTracePayload(std::span<const std::uint8_t> bytes);
// A trace id from the system's random source.
std::uint64_t RandomTraceId();

struct TraceTag {
  int ttl = 0;
  std::uint64_t trace_id = 0;
  // The MAC, when the quote was long enough to carry it.
  std::optional<Mac> mac;
};
// The tag of a quoted payload: nullopt when shorter than kTraceTagBytes or
// not a trace datagram.
std::optional<TraceTag> ParseTracePayload(std::span<const std::uint8_t> bytes);
// Whether `tag` may be ours: its MAC verifies, or the quote was too short
// to carry one (then only the unguessable id vouches for it).
bool TraceTagAuthentic(const TraceTag& tag, const Hmac& hmac);

// One ICMP error from the socket's error queue.
struct IcmpReport {
  enum class Kind {
    kTimeExceeded,     // a router on the path: the TTL ran out there
    kPortUnreachable,  // the destination host, no socket on the port
    kUnreachable,      // any other destination unreachable
    kOther,
  };
  Kind kind = Kind::kOther;
  int type = 0, code = 0;  // ICMP or ICMPv6
  int error = 0;           // ee_errno
  // Who sent the ICMP error (SO_EE_OFFENDER); nullopt when not given.
  std::optional<boost::asio::ip::address> offender;
  // The original datagram's destination (the record's msg_name), shown
  // plain (a v4-mapped address as IPv4).
  std::optional<Endpoint> destination;
  // The trace tag, when the router quoted enough of the datagram. A report
  // without one is never taken as a trace's answer.
  std::optional<TraceTag> tag;
};

// One MSG_ERRQUEUE record: `msg` as recvmsg filled it (msg_name and the
// control messages) and `payload`, the quoted original payload. Reads
// IP_RECVERR (sockaddr_in offender) and IPV6_RECVERR (sockaddr_in6, a
// v4-mapped one for IPv4 on a dual-stack socket) records of ICMP origin;
// nullopt for anything else (timestamps, local errors).
std::optional<IcmpReport> ParseErrorRecord(
    const msghdr& msg, std::span<const std::uint8_t> payload);

struct TraceOptions {
  int max_hops = 16;  // TTLs tried at most
  int tries = 3;      // sends per TTL before taking silence as the end
  std::chrono::milliseconds wait{300};  // per send
};

// A traced path: the routers' addresses in order (the peer not included;
// an empty list is a peer on the same link).
struct PathResult {
  Endpoint peer;
  std::vector<boost::asio::ip::address> hops;
  bool ok = false;
  std::string error;  // why not, when !ok
};

// One trace of one peer, as a state machine: Start() and every event say
// whether to send (at ttl()), wait (until deadline()) or stop (result()).
class PathTrace {
 public:
  enum class Step { kSend, kWait, kDone };
  using Clock = std::chrono::steady_clock;

  PathTrace(Endpoint peer, std::uint64_t trace_id, TraceOptions options);

  Step Start(Clock::time_point now);
  // A report whose destination is this trace's peer. Only one that quotes
  // this trace's id and current TTL counts (the MAC is PathTracer's to
  // check); any other changes nothing.
  Step OnReport(const IcmpReport& report, Clock::time_point now);
  // The deadline passed.
  Step OnTimeout(Clock::time_point now);
  // After a send that failed (the socket refused it).
  Step OnSendFailed(const std::string& why);

  int ttl() const { return ttl_; }
  std::uint64_t trace_id() const { return trace_id_; }
  Clock::time_point deadline() const { return deadline_; }
  const PathResult& result() const { return result_; }

 private:
  Step Send(Clock::time_point now);
  Step Finish(bool ok, const std::string& error);

  TraceOptions options_;
  std::uint64_t trace_id_;
  int ttl_ = 1;
  int tries_ = 0;
  Clock::time_point deadline_{};
  PathResult result_;
};

// Runs PathTraces on `io`: one per peer at a time, each with its timer.
class PathTracer : public std::enable_shared_from_this<PathTracer> {
 public:
  // Sends `payload` to `peer` with the TTL (hop limit) `ttl` on the probe
  // flow's socket; false when the socket refused it.
  using SendFn = std::function<bool(const Endpoint& peer,
                                    std::span<const std::uint8_t> payload,
                                    int ttl, std::string* error)>;
  using DoneFn = std::function<void(const PathResult&)>;

  // `hmac` signs the trace datagrams and checks the quoted ones.
  PathTracer(boost::asio::io_context& io, SendFn send, TraceOptions options,
             Hmac hmac);

  // Traces `peer` (a plain endpoint: IPv4 as IPv4); `done` runs once with
  // the result. False (and `done` not called) while `peer` is traced.
  bool Trace(const Endpoint& peer, DoneFn done);
  // Every ICMP report the socket read; those for no running trace, and
  // those that do not quote its tag (with a MAC that verifies, when
  // quoted), are ignored and counted.
  void OnReport(const IcmpReport& report);
  // ICMP errors for a traced peer ignored for quoting no tag or a wrong MAC.
  std::uint64_t unverified() const { return unverified_; }
  // Cancels every trace; no callback runs after it.
  void Stop();
  std::size_t running() const { return running_.size(); }

 private:
  struct Running {
    PathTrace trace;
    DoneFn done;
    boost::asio::steady_timer timer;
  };
  void Do(const Endpoint& peer, PathTrace::Step step);

  boost::asio::io_context& io_;
  SendFn send_;
  TraceOptions options_;
  Hmac hmac_;
  std::uint64_t unverified_ = 0;
  std::map<Endpoint, std::unique_ptr<Running>> running_;
};

}  // namespace fabric::probe
