// UdpTransport: probes over one UDP socket (the probe port, default 10916)
// with kernel receive timestamps (SO_TIMESTAMPING: the software stamp, and
// the NIC's raw hardware stamp where the interface already has hardware
// stamping switched on; fabricmon never reconfigures a NIC to get one).
// Sends and receives on the daemon's io_context; no thread of its own.
// The timestamp and drop-count parsing are pure functions on a
// control-message buffer. Answers are read in batches (recvmmsg); the
// receive buffer holds a tick's answers from hundreds of peers, and what
// the kernel still dropped there is counted (SO_RXQ_OVFL).
//
// Thread-safety: see probe/transport.h; Healthy()/LastError() take a mutex.
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "probe/path_trace.h"
#include "probe/transport.h"

namespace fabric::probe {

// Where to listen: `:port` (every address, IPv6 and IPv4), `ip:port`,
// `[v6]:port`. Only IP literals: no name lookup at bind time.
std::optional<Endpoint> ParseListenAddress(const std::string& text,
                                           std::string* error);

// What the probe socket asks of SO_RCVBUF (the kernel doubles it, capped
// at net.core.rmem_max).
constexpr int kReceiveBufferBytes = 1 << 20;

// The SO_RXQ_OVFL drop count in the control messages of `msg`, if any.
std::optional<std::uint32_t> ParseDropCount(const msghdr& msg);

// The arrival interface in the IP_PKTINFO / IPV6_PKTINFO control message of
// `msg`; 0 without one.
int ParseIfindex(const msghdr& msg);

// The SCM_TIMESTAMPING stamps in the control messages of `msg`.
Timestamp ParseTimestamps(const msghdr& msg);

class UdpTransport : public Transport {
 public:
  UdpTransport(boost::asio::io_context& io, Endpoint listen);
  ~UdpTransport() override;

  std::string_view Name() const override { return "udp"; }
  bool Start(Handlers handlers, std::string* error) override;
  void Stop() override;
  bool Healthy() const override;
  std::string LastError() const override;
  bool CanReach(const Endpoint&) const override { return true; }
  std::optional<Timestamp> Send(const Endpoint& peer,
                                std::span<const std::uint8_t> packet,
                                std::uint64_t tx_id) override;
  bool Reply(const Source& to, std::span<const std::uint8_t> packet) override;
  // Lazy only with kernel receive stamps: the socket leaves the io
  // context's epoll set (released, the descriptor kept) until turned off.
  bool SetLazyReceive(bool on) override;
  void Poll() override;
  std::optional<std::uint64_t> ReceiveDrops() const override;

  // Path tracing (probe/path_trace.h) on this socket, so that trace
  // datagrams share the probes' 5-tuple. io thread only.
  // Sends `payload` to `peer` with IP TTL / IPv6 hop limit `ttl`.
  bool SendTrace(const Endpoint& peer, std::span<const std::uint8_t> payload,
                 int ttl, std::string* error);
  // Every ICMP error the socket's error queue delivers (IP_RECVERR); the
  // socket drops trace datagrams that reach it without a word.
  void SetIcmpHandler(std::function<void(const IcmpReport&)> handler);

  // The bound address (port 0 resolved), for tests.
  Endpoint local_endpoint() const;
  // Whether lazy receive is on, for tests.
  bool lazy() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace fabric::probe
