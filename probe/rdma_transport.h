// RdmaTransport: the probe Transport (probe/transport.h) over verbs UD, one
// UdPort (probe/rdma_ud.h) per active local RDMA port. Every port answers
// probes; probes go out of one port, the "sending port": the rail's own
// when it names one (a `device` rail: on IB an IPoIB address is no GID, so
// the address alone cannot tell the rails' ports apart), else the one whose
// GID is the probe listen address (RoCE), else the first. Its address is what
// the engine's address exchange announces (LocalAddress), and a peer becomes
// reachable over RDMA once the exchange gave its address (SetPeerAddress).
//
// Completions are read when a port's completion-channel fd turns readable
// (a boost::asio descriptor wait on the transport's io_context), so nothing
// polls while the fabric is quiet. Timestamps: software stamps are
// CLOCK_REALTIME (as the UDP transport's); hardware ones are the NIC's
// completion stamps mapped onto the same clock (probe/hca_clock.h), filled
// only on ports whose device has them (soft-RoCE has not).
//
// Thread-safety: as Transport: everything on the io_context thread except
// Healthy() and LastError(), which read a status kept under a mutex.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_annotations.h"
#include "probe/rdma_ud.h"
#include "probe/transport.h"
#include "probe/verbs_ops.h"

namespace fabric::probe {

class RdmaTransport final : public Transport {
 public:
  // The sending port: `device`/`port` when `device` is not empty (Start
  // fails when that port is not active), else picked by `listen_address`
  // ("host:port" as configured).
  struct SendingPort {
    std::string listen_address;
    std::string device;
    int port = 1;
  };
  RdmaTransport(boost::asio::io_context& io,
                std::unique_ptr<rdma::VerbsOps> ops, SendingPort sending,
                rdma::UdOptions options = {});
  ~RdmaTransport() override;

  std::string_view Name() const override { return "rdma"; }
  // Fails when the host has no active RDMA port or none can be opened.
  bool Start(Handlers handlers, std::string* error) override;
  void Stop() override;
  bool Healthy() const override;
  std::string LastError() const override;

  bool CanReach(const Endpoint& peer) const override;
  std::optional<Timestamp> Send(const Endpoint& peer,
                                std::span<const std::uint8_t> packet,
                                std::uint64_t tx_id) override;
  bool Reply(const Source& to, std::span<const std::uint8_t> packet) override;

  std::optional<RdmaAddress> LocalAddress() const override;
  void SetPeerAddress(const Endpoint& peer,
                      const RdmaAddress& address) override;
  // device and port of the sending port.
  std::vector<std::pair<std::string, std::string>> PeerLabels() const override;

  // "hardware" / "software": the sending port's clock (docs, a label).
  std::string_view ClockName() const;
  // Reads every port's completions now (what the fd wait does); for tests
  // and for a caller that polls on its own schedule.
  void PollNow();

 private:
  struct Port {
    std::unique_ptr<rdma::UdPort> ud;
    std::unique_ptr<boost::asio::posix::stream_descriptor> fd;
  };
  bool SenderWorks() const;
  void UpdateHealth();
  void SetError(std::string error);
  void Arm(std::size_t index);
  void Dispatch(std::size_t index);
  static std::string Key(const Endpoint& peer);

  boost::asio::io_context& io_;
  std::unique_ptr<rdma::VerbsOps> ops_;
  SendingPort sending_;
  rdma::UdOptions options_;
  Handlers handlers_;
  std::vector<Port> ports_;
  std::size_t sender_ = 0;  // index into ports_
  // What Healthy() and LastError() read from the collector's thread.
  mutable Mutex status_mu_;
  bool healthy_ GUARDED_BY(status_mu_) = false;
  std::string last_error_ GUARDED_BY(status_mu_);
  // What a Reply needs: the last datagram from each source (GID or LID and
  // QPN), bounded like UdPort's reply cache.
  std::map<std::string, std::pair<std::size_t, rdma::UdEvent>> last_from_;
  std::map<std::string, Endpoint> udp_of_;  // peer key -> its UDP endpoint
  std::vector<rdma::UdEvent> events_;
};

// The RDMA transport when this host has an active RDMA port, else nullptr
// with the reason (no rdma-core in this build, no device, none active) in
// `error`: the probe collector's `auto` transport then keeps to UDP.
std::unique_ptr<RdmaTransport> MakeRdmaTransport(
    boost::asio::io_context& io, RdmaTransport::SendingPort sending,
    std::string* error);

}  // namespace fabric::probe
