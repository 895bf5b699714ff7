// Transport: what a probe transport (UDP: probe/udp_transport.h; RDMA verbs
// UD: probe/rdma_transport.h) implements so that the probe engine can send
// encoded probes (probe/wire.h) to peers and receive answers and requests,
// each with the timestamps the transport could take and their clock kind.
//
// Peers are named by their UDP endpoint (host:port of the probe port, as
// configured). The UDP channel always exists: an RDMA transport learns a
// peer's verbs address (GID, QPN, Q_Key) through an address exchange that the
// engine runs over UDP (MessageType::kAddressRequest/kAddressAnswer), and
// hands the transport the result with SetPeerAddress(); until then
// CanReach() is false and the engine probes that peer over UDP.
//
// Thread-safety: every call, and every handler the transport invokes, runs on
// the io_context thread the transport was made with, except Healthy(),
// LastError() and ReceiveDrops(), which the collector calls from its own
// thread (the transport guards what they read).
#pragma once

#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/wire.h"

namespace fabric::probe {

using Endpoint = boost::asio::ip::udp::endpoint;

// A moment as the transport could take it. CLOCK_REALTIME nanoseconds for
// software stamps (what SO_TIMESTAMPING's software stamps use), the NIC's
// clock converted to nanoseconds for hardware ones; 0 = not taken. Only two
// stamps of the same kind are ever subtracted.
struct Timestamp {
  std::int64_t software_ns = 0;
  std::int64_t hardware_ns = 0;
};

// Who sent a datagram, as the transport can answer it.
struct Source {
  // The rate-limit and replay key, opaque: the IP address's bytes (UDP),
  // the GID as text (RDMA).
  std::string key;
  // UDP: where to answer. RDMA: the peer's UDP endpoint when the transport
  // knows it (else unspecified).
  Endpoint udp;
  // RDMA: the source QP (from the completion and its GRH).
  RdmaAddress rdma;
};

struct Received {
  std::span<const std::uint8_t> bytes;
  Source from;
  // When the datagram arrived (kernel RX stamp; completion stamp).
  Timestamp rx;
  // The local interface it arrived by (UDP: IP_PKTINFO); 0 = not known.
  int ifindex = 0;
};

class Transport {
 public:
  struct Handlers {
    // Every datagram received, probes and answers alike. `bytes` is valid
    // during the call only.
    std::function<void(const Received&)> on_receive;
    // A probe's transmit stamp learned after Send() returned (the kernel's
    // TX stamp from the error queue, a send completion), by `tx_id`.
    std::function<void(std::uint64_t tx_id, Timestamp tx)> on_sent;
  };

  virtual ~Transport() = default;

  // The `transport` label: "udp", "rdma".
  virtual std::string_view Name() const = 0;
  // Opens and starts receiving. False with the reason in `error`.
  virtual bool Start(Handlers handlers, std::string* error) = 0;
  // Closes; no handler runs after it returns.
  virtual void Stop() = 0;
  // Open and receiving.
  virtual bool Healthy() const = 0;
  // The last error since Start (empty when none), for the log and Collect.
  virtual std::string LastError() const = 0;

  // Whether the transport can send to `peer` now (RDMA: its address known).
  virtual bool CanReach(const Endpoint& peer) const = 0;
  // Sends one encoded probe. `tx_id` names it in on_sent. Returns the
  // software stamp taken just before the send, or nullopt when the send
  // failed (the probe then counts as a send error, neither sent nor lost:
  // a failure an unauthenticated ICMP error can cause is no loss).
  virtual std::optional<Timestamp> Send(const Endpoint& peer,
                                        std::span<const std::uint8_t> packet,
                                        std::uint64_t tx_id) = 0;
  // Sends an answer to where a request came from.
  virtual bool Reply(const Source& to,
                     std::span<const std::uint8_t> packet) = 0;

  // Lazy receive: while on, arriving datagrams do not wake the io thread;
  // they wait in the kernel until Poll() reads them. The engine turns it on
  // when its timer wakes it every few milliseconds anyway and no peer
  // probes this node, so a prober wakes once per probe instead of twice.
  // Only exact where receive stamps are taken on arrival (kernel stamps),
  // not on reading. Returns whether lazy receive is now on.
  virtual bool SetLazyReceive(bool /*on*/) { return false; }
  // Delivers (on_receive) what has arrived, without waiting.
  virtual void Poll() {}
  // Any thread: datagrams the kernel dropped at this transport's socket
  // (receive buffer full) as of the last one read; nullopt = not counted.
  virtual std::optional<std::uint64_t> ReceiveDrops() const {
    return std::nullopt;
  }

  // RDMA hooks (the UDP transport keeps the defaults). The verbs address a
  // peer needs to reach this transport; nullopt = no RDMA here.
  virtual std::optional<RdmaAddress> LocalAddress() const {
    return std::nullopt;
  }
  // A peer's verbs address, learned by the engine's address exchange.
  virtual void SetPeerAddress(const Endpoint& /*peer*/,
                              const RdmaAddress& /*address*/) {}
  // Extra labels for a peer's series (RDMA: device, port).
  virtual std::vector<std::pair<std::string, std::string>> PeerLabels() const {
    return {};
  }
};

}  // namespace fabric::probe
