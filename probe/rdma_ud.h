// The RDMA probe path: one UD (unreliable datagram) QP per local port,
// through the VerbsOps seam. It moves probe packets (bytes the probe codec
// built and authenticated) between ports and reports each send and receive
// with the best timestamp the device has: the NIC's completion timestamp
// (ClockKind::kHardware) or the host clock at poll time (kSoftware, e.g.
// soft-RoCE). A UD QP reaches any peer through an address handle, keeps no
// per-peer connection state and never retransmits, so a lost probe stays
// lost (R-Pingmesh's choice; see docs/rdma.md).
//
// Addresses: a peer's (GID, LID, QPN, Q_Key) comes from the UDP address
// exchange (SetPeer); the responder answers any sender through an address
// handle built from the received completion (Reply), so it needs no
// exchange. RoCE always sends a GRH (sgid = the port's chosen GID); IB sends
// one only when the peer's subnet prefix differs from ours.
//
// Failure: a device that vanishes or a QP that goes to the error state
// makes failure() non-empty and every later Send fail with ENODEV; the owner
// drops the port and calls ListRdmaPorts() again. Nothing here throws.
//
// Thread-safety: a UdPort is used by one thread at a time (the probe
// collector's io_context strand): Send, Reply, Poll and SetPeer all touch
// the same rings. ListRdmaPorts and PickGid may run anywhere.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "probe/hca_clock.h"
#include "probe/rdma_ports.h"
#include "probe/verbs_ops.h"

namespace fabric::rdma {

// Where a UD packet goes: what the UDP address exchange carries.
struct UdAddress {
  Gid gid{};
  std::uint16_t lid = 0;  // IB only
  std::uint32_t qpn = 0;
  std::uint32_t qkey = 0;
  bool operator==(const UdAddress&) const = default;
};

// The 40 bytes in front of every UD receive: a GRH (IB, RoCEv1) or, on
// RoCEv2 over IPv4, 20 unused bytes and the IPv4 header. The sender's GID
// (IPv4-mapped for the latter); nullopt when the bytes are neither.
std::optional<Gid> GrhSourceGid(std::span<const std::uint8_t> grh);

inline constexpr std::size_t kGrhBytes = 40;

struct Stamp {
  std::int64_t ns = 0;  // CLOCK_MONOTONIC domain (see hca_clock.h)
  ClockKind kind = ClockKind::kSoftware;
};

struct UdEvent {
  enum class Kind { kSent, kReceived, kSendFailed, kDropped };
  Kind kind = Kind::kSent;
  std::uint64_t cookie = 0;  // kSent / kSendFailed: the caller's
  Stamp stamp;
  // The host clock (UdOptions::now_ns) when the completion was polled: a
  // software stamp even where `stamp` is a hardware one.
  std::int64_t polled_ns = 0;
  // kReceived: the configured peer whose address matches the source (empty
  // for an unknown sender, e.g. a prober this node does not probe itself).
  std::string peer;
  std::optional<Gid> source_gid;
  std::uint16_t source_lid = 0;
  std::uint32_t source_qpn = 0;
  std::vector<std::uint8_t> payload;
  std::string error;  // kSendFailed / kDropped: why
  // kReceived: what Reply() needs to build the way back.
  Completion wc;
  std::array<std::uint8_t, kGrhBytes> grh{};
};

struct UdOptions {
  // Our Q_Key. The high bit marks a controlled Q_Key that unprivileged
  // senders cannot use; ours is an ordinary one ("FBM1").
  std::uint32_t qkey = 0x46424d31;
  int recv_ring = 256;             // receive buffers kept posted
  int send_slots = 128;            // sends in flight
  std::size_t max_payload = 256;   // at most the port's MTU
  std::uint8_t traffic_class = 0;  // RoCE: DSCP << 2
  std::uint8_t sl = 0;
  // Host nanoseconds (CLOCK_MONOTONIC by default; any clock that does not
  // step backwards often works); injectable for tests.
  std::function<std::int64_t()> now_ns;
  // How often the HCA clock anchor is re-read (ibv_query_rt_values_ex).
  std::int64_t reanchor_ns = 1000000000;
};

class UdPort {
 public:
  // Opens the device, creates PD, completion channel, CQ (with completion
  // timestamps when the device has them; without when it refuses), the UD
  // QP (RESET -> INIT -> RTR -> RTS), registers one buffer and posts the
  // receive ring. nullptr and *error naming device, port and step on failure.
  static std::unique_ptr<UdPort> Open(VerbsOps& ops, const RdmaPort& port,
                                      const UdOptions& options,
                                      std::string* error);
  ~UdPort();
  UdPort(const UdPort&) = delete;
  UdPort& operator=(const UdPort&) = delete;

  const RdmaPort& port() const { return port_; }
  // What the UDP address exchange announces for this port.
  UdAddress local() const;
  ClockKind clock() const { return clock_kind_; }
  // Readable when a completion is waiting: then call Poll().
  int fd() const { return channel_fd_; }
  const std::string& failure() const { return failure_; }

  // Records (or replaces) the address of `peer`. False and *error when the
  // address cannot be used (QPN 0 or over 24 bits, no GID on RoCE, no LID on
  // IB, the AH refused).
  bool SetPeer(const std::string& peer, const UdAddress& address,
               std::string* error);
  void ForgetPeer(const std::string& peer);
  bool HasPeer(const std::string& peer) const;

  // Posts `payload` to `peer`; the kSent event with `cookie` carries the
  // send timestamp. Errors: no_such_device_or_address (no address for the
  // peer yet), message_size, no_buffer_space (all send slots in flight),
  // no_such_device (the port failed), or what ibv_post_send said.
  std::error_code Send(const std::string& peer,
                       std::span<const std::uint8_t> payload,
                       std::uint64_t cookie);
  // The responder's answer to a kReceived event, to whoever sent it.
  std::error_code Reply(const UdEvent& received,
                        std::span<const std::uint8_t> payload,
                        std::uint64_t cookie);

  // Drains the CQ into `events`, reposts receive buffers and re-arms the
  // CQ. Call when fd() is readable (and now and then: it also refreshes the
  // clock anchor).
  void Poll(std::vector<UdEvent>* events);

 private:
  struct Peer {
    UdAddress address;
    Handle ah = 0;
  };
  struct InFlight {
    int slot = 0;
    std::uint64_t cookie = 0;
  };

  UdPort(VerbsOps& ops, RdmaPort port, UdOptions options);
  bool Setup(std::string* error);
  std::error_code PostTo(Handle ah, std::uint32_t qpn, std::uint32_t qkey,
                         std::span<const std::uint8_t> payload,
                         std::uint64_t cookie);
  void OnCompletion(const Completion& wc, std::vector<UdEvent>* events);
  Stamp StampOf(const Completion& wc, std::int64_t now);
  void Fail(std::string reason);
  void ReleaseRetired();
  std::uint8_t* RecvBuffer(int index);
  std::uint8_t* SendBuffer(int slot);
  std::string SourceKey(const std::optional<Gid>& gid, std::uint16_t lid,
                        std::uint32_t qpn) const;

  VerbsOps& ops_;
  RdmaPort port_;
  UdOptions options_;
  ClockKind clock_kind_ = ClockKind::kSoftware;
  HcaClock hca_clock_;
  bool can_read_clock_ = false;
  std::int64_t last_anchor_ns_ = 0;

  Handle context_ = 0;
  Handle pd_ = 0;
  Handle channel_ = 0;
  int channel_fd_ = -1;
  Handle cq_ = 0;
  Handle qp_ = 0;
  std::uint32_t qpn_ = 0;
  MrKeys mr_{};
  std::vector<std::uint8_t> buffer_;
  std::size_t recv_stride_ = 0;

  std::vector<int> free_slots_;
  std::map<std::uint64_t, InFlight> in_flight_;  // by wr_id
  std::uint64_t next_wr_id_ = 1;
  std::map<std::string, Peer> peers_;
  std::map<std::string, std::string> peer_by_source_;
  std::map<std::string, Handle> reply_ahs_;  // by source key
  std::vector<Handle> retired_ahs_;  // destroyed once no send is in flight
  std::string failure_;
};

}  // namespace fabric::rdma
