// BulkTransport: how one fabricmon-bench agent (one rank of a session) moves
// the benchmark's data to and from its neighbours. TCP (tcp_transport.h) and
// RDMA RC with write-with-immediate (the rdma branch) sit behind it; the
// pattern code (patterns.h) only calls this interface.
//
// A session's life, driven by the agent (agent.h):
//   1. Prepare(session, region_bytes): allocate (RDMA: register) one memory
//      region of `region_bytes` that every send and receive of the session
//      uses, and open whatever peers connect to (a TCP listener, RC QPs).
//      Returns this rank's Endpoint: opaque bytes (at most kMaxEndpointBytes)
//      that the coordinator carries over the authenticated control channel
//      to every other rank (TCP: listening port; RC: GID, QPNs, PSNs, rkey).
//   2. Connect(endpoints, send_to, recv_from): `endpoints[r]` is rank r's
//      Endpoint; connect to the ranks this rank sends to and accept/attach
//      the ranks it receives from. Both sides call Connect; it returns when
//      every listed link is up or fails naming the peer.
//   3. Exchange(sends, recvs), any number of times: start every send and
//      every receive at once (a ring step sends right while it receives from
//      the left; all-to-all posts n-1 of each) and return when all completed.
//      Ops name bytes of Region() by offset and length. The k-th send from A
//      to B matches the k-th receive at B from A, with the same length. A
//      send may not land in the receiver's region before the receiver has
//      entered the Exchange that posts the matching receive (RDMA: the
//      receiver grants each write with a credit), so a receiver's scratch
//      space is never overwritten while it still reads it.
//   4. Close(): release everything. Idempotent.
// Errors: every failure names the peer (its rank and the `host:port` from
// SessionInfo::peers) and what happened (refused, reset, closed mid-run,
// no progress for `io_timeout`). A peer that goes quiet must never block
// Exchange forever: after `io_timeout` without progress it fails.
//
// Thread-safety: one thread drives a transport (Prepare, Connect, Exchange,
// Close in order). Abort() is the exception: any thread may call it at any
// time, and it makes a blocked or later Prepare/Connect/Exchange return an
// error promptly (the coordinator said stop, or another rank died), after
// which the instance only accepts Close().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::bench {

// An Endpoint larger than this is refused by the control codec.
constexpr std::size_t kMaxEndpointBytes = 4096;
using Endpoint = std::vector<std::uint8_t>;

// What one rank knows of its session (all of it came over the authenticated
// control channel).
struct SessionInfo {
  std::uint64_t session_id = 0;
  // Random per session; a bulk link presents it so a stranger cannot attach
  // to a session it was not told about (bulk data itself is not MACed).
  std::vector<std::uint8_t> token;
  int rank = 0;
  // peers[r] = rank r's agent as the coordinator reached it, "host:port"
  // (host part is where rank r's bulk endpoint listens); peers.size() is the
  // number of ranks.
  std::vector<std::string> peers;
  std::chrono::milliseconds io_timeout{10000};

  int ranks() const { return static_cast<int>(peers.size()); }
};

// A failure, naming the peer it concerns (rank -1 and empty peer when it is
// local, e.g. an allocation).
struct TransportError {
  int rank = -1;
  std::string peer;
  std::string what;
  // "peer 10.0.0.2:10916 (rank 1): connection reset", or `what` alone.
  std::string Message() const;
};
// Empty = success.
using TransportStatus = std::optional<TransportError>;

// Bytes [offset, offset + length) of Region(), to or from rank `peer`.
struct Op {
  int peer = 0;
  std::size_t offset = 0;
  std::size_t length = 0;
  bool operator==(const Op&) const = default;
};

// One step of a plan (patterns.h): post all sends and receives at once, and
// add `reduce` ranges (src in scratch, dst in the buffer, float32 sum; a
// trailing part shorter than 4 bytes adds bytes) as their source arrives, so
// a reduce's dst must not be sent in the same step.
struct Reduce {
  std::size_t dst = 0, src = 0, length = 0;
  bool operator==(const Reduce&) const = default;
};
struct Step {
  std::vector<Op> sends, recvs;
  std::vector<Reduce> reduce;
  bool operator==(const Step&) const = default;
};

class BulkTransport {
 public:
  virtual ~BulkTransport() = default;
  // The `transport` label and results.json's "transport": "tcp", "rdma".
  virtual std::string_view Name() const = 0;
  virtual std::optional<Endpoint> Prepare(const SessionInfo& session,
                                          std::size_t region_bytes,
                                          TransportError* error) = 0;
  // Valid from a successful Prepare until Close.
  virtual std::span<std::byte> Region() = 0;
  virtual TransportStatus Connect(std::span<const Endpoint> endpoints,
                                  std::span<const int> send_to,
                                  std::span<const int> recv_from) = 0;
  // An op outside Region(), or naming this rank or an unconnected peer, is
  // an error (not undefined behaviour). `arrived(i, n)`, when given, says
  // the first n bytes of recvs[i] are in the region: a transport that sees
  // bytes arrive (TCP) calls it as they do, and every receive gets a call
  // with its whole length before a successful return (n never shrinks, but
  // may repeat). The caller reduces what has arrived while the rest of the
  // step is still on the wire, instead of leaving the links idle while it
  // reduces a whole chunk after the step.
  using Arrived = std::function<void(std::size_t recv, std::size_t bytes)>;
  TransportStatus Exchange(std::span<const Op> sends, std::span<const Op> recvs,
                           const Arrived& arrived = nullptr) {
    TransportStatus e = DoExchange(sends, recvs, arrived);
    if (!e && arrived) {
      for (std::size_t i = 0; i < recvs.size(); ++i)
        arrived(i, recvs[i].length);
    }
    return e;
  }
  // Runs a whole plan. The default runs it in lock step: one Exchange per
  // step, reducing as receives arrive. A transport may run it as a dataflow
  // (dataflow.h: each op waits only for the earlier ops touching its bytes)
  // and then says which slice Plan should cut steps into.
  virtual TransportStatus Run(std::span<const Step> steps);
  virtual std::size_t PipelineSlice() const { return 0; }
  virtual void Abort() = 0;
  virtual void Close() = 0;

 protected:
  // Exchange without the final calls of `arrived` (which may be null).
  virtual TransportStatus DoExchange(std::span<const Op> sends,
                                     std::span<const Op> recvs,
                                     const Arrived& arrived) = 0;
};

}  // namespace fabric::bench
