// The RDMA bulk transport of fabricmon-bench: one RC (reliable connected) QP
// per other rank, data moved with RDMA WRITE with immediate straight into
// the receiver's region, over the VerbsOps seam (probe/verbs_ops.h).
//
// Wire protocol on each link (all of it RDMA writes with immediate, so a
// link needs only the peer's region and credit-area keys):
//   - hello: a zero-length write, immediate 0xffffffff, sent by both sides
//     in Connect(); Connect returns when every listed peer's hello arrived.
//   - credit: when a rank enters Exchange() with a receive from peer P, it
//     writes a 16-byte record {offset, length, seq} into P's credit inbox
//     (slot seq % kCreditSlots), immediate = 0x80000000 | seq. That is the
//     "receiver grants each write" rule of benchtool/transport.h: P never
//     writes into a region before its owner asked for the bytes.
//   - data: P writes the bytes to {offset} of the receiver's region (split
//     into writes of at most RcOptions::max_write), immediate = data seq.
//     The receiver counts bytes per receive op; RC delivers in order.
// Endpoint (the opaque bytes the coordinator relays): EncodeRcEndpoint.
//
// Bulk data is not MACed (the session's control channel is): a stranger
// cannot reach an RC QP that was connected to a given peer QP number and
// packet sequence number it never learnt, and the rkeys are only in the
// authenticated endpoints. SessionInfo::token is therefore not sent.
//
// Blocking: Connect/Exchange wait on the completion channel's fd through
// RcOptions::wait (poll(2) by default) in slices of at most 100 ms, so
// Abort() from another thread is seen within one slice, and a peer that
// makes no progress for io_timeout fails the call naming it.
//
// Thread-safety: as BulkTransport: one driving thread; Abort() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "benchtool/transport.h"
#include "probe/rdma_ports.h"
#include "probe/verbs_ops.h"

namespace fabric::bench {

// What one rank's RC endpoint carries (version 1, little-endian, 72 bytes +
// 8 per rank).
struct RcEndpoint {
  rdma::Gid gid{};
  std::uint16_t lid = 0;
  std::uint16_t mtu_bytes = 0;
  bool roce = false;
  std::uint64_t region_addr = 0;
  std::uint64_t region_bytes = 0;
  std::uint32_t region_rkey = 0;
  std::uint64_t credit_addr = 0;  // the inbox: ranks x kCreditSlots records
  std::uint32_t credit_rkey = 0;
  struct Qp {
    std::uint32_t qpn = 0;  // this rank's QP towards rank r (0 for itself)
    std::uint32_t psn = 0;  // its first packet sequence number
  };
  std::vector<Qp> qps;  // one per rank of the session
};

Endpoint EncodeRcEndpoint(const RcEndpoint& endpoint);
// nullopt and *error on a short, long, wrongly versioned or inconsistent
// endpoint (never reads past `bytes`).
std::optional<RcEndpoint> DecodeRcEndpoint(std::span<const std::uint8_t> bytes,
                                           std::string* error);

inline constexpr int kCreditSlots = 64;
inline constexpr std::size_t kCreditRecordBytes = 16;

struct RcOptions {
  int recv_depth = 64;                           // receives kept posted per QP
  int send_depth = 64;                           // writes in flight per QP
  std::size_t max_write = std::size_t{1} << 30;  // bytes per RDMA WRITE
  // RC retransmission: 4.096 us * 2^ack_timeout per try, retry_cnt tries.
  // 16 and 7: a peer that reaches RTR up to ~2 s after us still connects
  // (packets to a QP not yet in RTR are dropped and retried), and a dead
  // peer fails the link after ~2 s instead of hanging.
  int ack_timeout = 16;
  int retry_cnt = 7;
  // Waits until `fd` is readable or `timeout` passed (poll(2) by default).
  std::function<void(int fd, std::chrono::milliseconds timeout)> wait;
  std::function<std::chrono::steady_clock::time_point()> now;
};

// The transport the agent's TransportFactory makes for "rdma": libibverbs
// on the port rdma::PickPortForAddress chooses. nullptr and *error when
// fabricmon was built without rdma-core or the host has no active RDMA port.
std::unique_ptr<BulkTransport> MakeRdmaTransport(
    const std::string& bind_address, std::string* error);

class RdmaRcTransport final : public BulkTransport {
 public:
  // `port` is the local port to use (from rdma::ListRdmaPorts); `ops`
  // outlives the transport.
  RdmaRcTransport(rdma::VerbsOps& ops, rdma::RdmaPort port,
                  RcOptions options = {});
  // The same, owning its VerbsOps.
  RdmaRcTransport(std::unique_ptr<rdma::VerbsOps> ops, rdma::RdmaPort port,
                  RcOptions options = {});
  ~RdmaRcTransport() override;
  RdmaRcTransport(const RdmaRcTransport&) = delete;
  RdmaRcTransport& operator=(const RdmaRcTransport&) = delete;

  std::string_view Name() const override { return "rdma"; }
  std::optional<Endpoint> Prepare(const SessionInfo& session,
                                  std::size_t region_bytes,
                                  TransportError* error) override;
  std::span<std::byte> Region() override;
  TransportStatus Connect(std::span<const Endpoint> endpoints,
                          std::span<const int> send_to,
                          std::span<const int> recv_from) override;
  void Abort() override;
  void Close() override;

 protected:
  // Reports arrivals only through the base class's final calls: a receive's
  // bytes land by RDMA write, seen whole when its last write completes.
  TransportStatus DoExchange(std::span<const Op> sends,
                             std::span<const Op> recvs,
                             const Arrived& arrived) override;

 private:
  struct Credit {
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
  };
  struct Link {
    rdma::Handle qp = 0;
    std::uint32_t qpn = 0;
    std::uint32_t psn = 0;
    bool connected = false;
    bool hello = false;
    RcEndpoint remote;
    std::uint32_t credit_seq_out = 0;  // next credit we grant
    std::uint32_t credit_seq_in = 0;   // next credit we expect
    std::uint32_t data_seq_out = 0;
    std::deque<Credit> credits;     // grants for our sends
    std::deque<Op> sends;           // waiting for a grant
    std::deque<std::size_t> recvs;  // bytes still due per receive op
    int writes_in_flight = 0;
    std::deque<rdma::RcWriteImm> backlog;  // over send_depth: posted later
  };

  TransportError Local(std::string what) const;
  TransportError About(int rank, std::string what) const;
  TransportStatus Wait(const std::function<bool()>& done,
                       const std::function<int()>& waiting_for);
  TransportStatus Drain(int* handled);
  TransportStatus OnCompletion(const rdma::Completion& wc);
  TransportStatus Post(int rank, const rdma::RcWriteImm& write);
  TransportStatus PumpSends(int rank);
  TransportStatus GrantCredit(int rank, const Op& op);
  std::uint8_t* Inbox(int rank, std::uint32_t seq);
  std::uint8_t* Outbox(int rank, std::uint32_t seq);
  void Release();

  std::unique_ptr<rdma::VerbsOps> owned_ops_;
  rdma::VerbsOps& ops_;
  rdma::RdmaPort port_;
  RcOptions options_;
  SessionInfo session_;
  std::atomic<bool> aborted_{false};
  bool failed_ = false;

  rdma::Handle context_ = 0;
  rdma::Handle pd_ = 0;
  rdma::Handle channel_ = 0;
  int channel_fd_ = -1;
  rdma::Handle cq_ = 0;
  std::byte* region_ = nullptr;
  std::size_t region_bytes_ = 0;
  rdma::MrKeys region_mr_{};
  std::vector<std::uint8_t> credit_area_;  // inbox, then outbox
  rdma::MrKeys credit_mr_{};
  std::vector<Link> links_;  // by rank (links_[rank_] unused)
};

}  // namespace fabric::bench
