#include "probe/udp_transport.h"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "core/thread_annotations.h"
#include "probe/engine.h"
#include "probe/peers.h"

namespace fabric::probe {
namespace {

using boost::asio::ip::udp;

std::int64_t Ns(const timespec& ts) {
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// IPv4 peers are reached through the dual-stack socket as v4-mapped
// addresses, and v4-mapped sources are shown as plain IPv4.
Endpoint ForSocket(const Endpoint& e, bool v6_socket) {
  if (v6_socket && e.address().is_v4()) {
    return Endpoint(boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped,
                                                     e.address().to_v4()),
                    e.port());
  }
  return e;
}

Endpoint Plain(const Endpoint& e) {
  if (e.address().is_v6() && e.address().to_v6().is_v4_mapped()) {
    return Endpoint(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped,
                                                     e.address().to_v6()),
                    e.port());
  }
  return e;
}

// The rate-limit and replay key of a source: its address's bytes (4 for
// IPv4, which fit a string without allocating), not its text (formatting
// that was 4% of a responder's CPU samples).
std::string SourceKey(const boost::asio::ip::address& a) {
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    return std::string(b.begin(), b.end());
  }
  auto b = a.to_v6().to_bytes();
  return std::string(b.begin(), b.end());
}

}  // namespace

std::optional<Endpoint> ParseListenAddress(const std::string& text,
                                           std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Endpoint> {
    if (error) *error = "listen address \"" + text + "\": " + why;
    return std::nullopt;
  };
  std::string host_port = text;
  bool any = !text.empty() && text[0] == ':';
  if (any) host_port = "any" + text;
  std::string why;
  auto peer = ParsePeer(host_port, &why, 0);
  if (!peer) return fail(why);
  if (peer->port == 0) return fail("needs a port");
  if (any) return Endpoint(boost::asio::ip::address_v6::any(), peer->port);
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(peer->host, ec);
  if (ec) return fail("not an IP address (use :port for every address)");
  return Endpoint(address, peer->port);
}

std::optional<std::uint32_t> ParseDropCount(const msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
        c->cmsg_len >= CMSG_LEN(sizeof(std::uint32_t))) {
      std::uint32_t drops;
      std::memcpy(&drops, CMSG_DATA(c), sizeof(drops));
      return drops;
    }
  }
  return std::nullopt;
}

int ParseIfindex(const msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in_pktinfo))) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      return info.ipi_ifindex;
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in6_pktinfo))) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      return static_cast<int>(info.ipi6_ifindex);
    }
  }
  return 0;
}

Timestamp ParseTimestamps(const msghdr& msg) {
  Timestamp ts;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING ||
        c->cmsg_len < CMSG_LEN(sizeof(scm_timestamping))) {
      continue;
    }
    scm_timestamping stamps;
    std::memcpy(&stamps, CMSG_DATA(c), sizeof(stamps));
    // ts[0]: software; ts[2]: raw hardware (ts[1] is deprecated).
    ts.software_ns = Ns(stamps.ts[0]);
    ts.hardware_ns = Ns(stamps.ts[2]);
  }
  return ts;
}

struct UdpTransport::State : std::enable_shared_from_this<State> {
  State(boost::asio::io_context& io, Endpoint l) : socket(io), listen(l) {}

  void SetError(const std::string& e) {
    MutexLock lock(mu);
    error = e;
  }

  bool Open(std::string* why) {
    boost::system::error_code ec;
    Endpoint at = listen;
    socket.open(at.protocol(), ec);
    if (!ec && at.address().is_v6()) {
      // Dual stack: IPv4 peers too, unless the host has IPv6 off.
      socket.set_option(boost::asio::ip::v6_only(false), ec);
    }
    if (!ec) socket.bind(at, ec);
    if (ec && listen.address().is_v6() &&
        listen.address().to_v6().is_unspecified()) {
      // No IPv6 here: every IPv4 address instead.
      boost::system::error_code ignored;
      socket.close(ignored);
      at = Endpoint(boost::asio::ip::address_v4::any(), listen.port());
      ec.clear();
      socket.open(at.protocol(), ec);
      if (!ec) socket.bind(at, ec);
    }
    if (ec) {
      boost::system::error_code ignored;
      socket.close(ignored);
      *why = "cannot bind UDP " + listen.address().to_string() + ":" +
             std::to_string(listen.port()) + ": " + ec.message();
      return false;
    }
    v6 = at.address().is_v6();
    protocol = at.protocol();
    fd = socket.native_handle();
    bound = socket.local_endpoint(ec);
    int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
                SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
    // Without kernel stamps the engine takes its own clock on receipt:
    // less exact, still a measurement.
    kernel_stamps = ::setsockopt(socket.native_handle(), SOL_SOCKET,
                                 SO_TIMESTAMPING, &flags, sizeof(flags)) == 0;
    // Room for a tick's answers from hundreds of peers (a 96-byte datagram
    // takes about 1 KiB of buffer as the kernel counts it), and the kernel's
    // count of what still did not fit (SO_RXQ_OVFL, with every datagram).
    // The kernel caps the size at net.core.rmem_max.
    int rcvbuf = kReceiveBufferBytes;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    // Don't Fragment on IPv4 (and v4-mapped) probes: a 124-byte datagram
    // never needs fragmenting, and the kernel then skips choosing an IP ID
    // per datagram (__ip_select_ident, 4% of a 1,000-peer prober's CPU
    // samples). Best effort: without it probes still go out.
    int pmtu = IP_PMTUDISC_DO;
    ::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
    int one = 1;
    counts_drops =
        ::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) == 0;
    // The interface each datagram arrived by (IP_PKTINFO; on a dual-stack
    // socket IPv4 peers' too): the netdev names the fabric port a probe
    // used (Received::ifindex). Best effort: without it, ports are unknown.
    ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
    if (bound.address().is_v6()) {
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
    }
    // ICMP errors to the error queue (path tracing reads Time Exceeded
    // there). Best effort: without it traces fail, probes do not.
    ::setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    if (bound.address().is_v6()) {
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
    }
    socket.non_blocking(true, ec);
    {
      MutexLock lock(mu);
      open = true;
      error.clear();
    }
    Receive();
    return true;
  }

  void Receive() {
    socket.async_wait(
        udp::socket::wait_read,
        [self = shared_from_this()](boost::system::error_code ec) {
          if (!ec) self->OnReadable();
        });
  }

  void OnReadable() {
    // Lazy: Poll() reads from now on (a continuation posted before the
    // switch ends here).
    if (fd < 0 || lazy) return;
    if (Drain()) {
      // Still more queued after a bounded drain: let the timer's handlers
      // run, then continue (no new edge would wake an epoll wait).
      boost::asio::post(socket.get_executor(),
                        [self = shared_from_this()] { self->OnReadable(); });
    } else {
      Receive();
    }
  }

  // Reads what is queued, a batch per system call (bounded, so a flood
  // cannot starve the timer). A short batch means the queue was empty: no
  // extra call to hear EAGAIN, and a datagram arriving after it wakes the
  // reactor again (epoll is edge-triggered).
  // True when the bound stopped it with datagrams possibly still queued.
  bool Drain() {
    constexpr unsigned kBatch = 32;
    struct Slot {
      // Longer than any probe; a longer datagram is truncated (and
      // malformed either way).
      std::array<std::uint8_t, 512> buf;
      alignas(cmsghdr) std::array<char, 256> control;
      sockaddr_storage from;
      iovec iov;
    };
    std::array<Slot, kBatch> slots;
    std::array<mmsghdr, kBatch> msgs;
    for (int round = 0; round < 8 && fd >= 0; ++round) {
      DrainErrors();
      for (unsigned i = 0; i < kBatch; ++i) {
        Slot& s = slots[i];
        s.iov = {s.buf.data(), s.buf.size()};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_name = &s.from;
        msgs[i].msg_hdr.msg_namelen = sizeof(s.from);
        msgs[i].msg_hdr.msg_iov = &s.iov;
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = s.control.data();
        msgs[i].msg_hdr.msg_controllen = s.control.size();
      }
      int n = ::recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
      // With IP_RECVERR every ICMP error also fails one receive with its
      // errno (the error itself waits in the error queue): read on.
      if (n < 0 && IcmpErrno(errno)) continue;
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          SetError(std::string("recvmmsg: ") + std::strerror(errno));
        }
        return false;
      }
      for (int i = 0; i < n; ++i) {
        const msghdr& msg = msgs[i].msg_hdr;
        Received r;
        // A truncated datagram (MSG_TRUNC) fills the buffer: longer than
        // any probe, so malformed.
        r.bytes =
            std::span<const std::uint8_t>(slots[i].buf.data(), msgs[i].msg_len);
        // A peer's path trace that reached us: nothing to answer or count.
        if (IsTracePayload(r.bytes)) continue;
        Endpoint source;
        std::memcpy(
            source.data(), &slots[i].from,
            std::min<std::size_t>(msg.msg_namelen, sizeof(slots[i].from)));
        source.resize(msg.msg_namelen);
        r.from.udp = Plain(source);
        r.from.key = SourceKey(r.from.udp.address());
        r.rx = kernel_stamps ? ParseTimestamps(msg) : Timestamp{};
        if (auto d = ParseDropCount(msg)) drops.store(*d);
        r.ifindex = ParseIfindex(msg);
        if (!r.rx.software_ns) r.rx.software_ns = RealtimeNs();
        if (handlers.on_receive) handlers.on_receive(r);
      }
      if (n < static_cast<int>(kBatch)) return false;
    }
    return fd >= 0;
  }

  static bool IcmpErrno(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ||
           e == EHOSTDOWN || e == EPROTO || e == EMSGSIZE;
  }

  // Reads the error queue (bounded), handing ICMP errors to on_icmp.
  void DrainErrors() {
    for (int i = 0; i < 64 && fd >= 0; ++i) {
      std::array<std::uint8_t, 64> buf;
      alignas(cmsghdr) std::array<char, 256> control;
      sockaddr_storage name;
      iovec iov{buf.data(), buf.size()};
      msghdr msg{};
      msg.msg_name = &name;
      msg.msg_namelen = sizeof(name);
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      ssize_t n = ::recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
      if (n < 0) return;
      auto report =
          ParseErrorRecord(msg, std::span<const std::uint8_t>(
                                    buf.data(), static_cast<std::size_t>(n)));
      if (report && on_icmp) on_icmp(*report);
    }
  }

  bool SendTrace(const Endpoint& to, std::span<const std::uint8_t> payload,
                 int ttl, std::string* error) {
    if (fd < 0) {
      *error = "socket closed";
      return false;
    }
    Endpoint e = ForSocket(to, v6);
    const bool hop_limit =
        to.address().is_v6() && !to.address().to_v6().is_v4_mapped();
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    iovec iov{const_cast<std::uint8_t*>(payload.data()), payload.size()};
    msghdr msg{};
    msg.msg_name = e.data();
    msg.msg_namelen = static_cast<socklen_t>(e.size());
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = hop_limit ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = hop_limit ? IPV6_HOPLIMIT : IP_TTL;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &ttl, sizeof(ttl));
    // Retried like SendTo: a pending ICMP error fails one send.
    for (int i = 0; i < kSendTries; ++i) {
      if (::sendmsg(fd, &msg, MSG_DONTWAIT) >= 0) return true;
      if (!IcmpErrno(errno)) break;
    }
    *error = std::string("sendmsg: ") + std::strerror(errno);
    return false;
  }

  bool SetLazy(bool on) {
    if (fd < 0 || !kernel_stamps || on == lazy) return lazy;
    boost::system::error_code ec;
    if (on) {
      // Out of the epoll set (the pending wait ends, aborted); the
      // descriptor stays open, owned here.
      socket.release(ec);
      if (!ec) lazy = true;
      return lazy;
    }
    socket.assign(protocol, fd, ec);
    if (ec) {
      // Nothing would wake the io thread for a request: say so.
      MutexLock lock(mu);
      open = false;
      error = "cannot watch the probe socket again: " + ec.message();
      return lazy;
    }
    lazy = false;
    Receive();
    return lazy;
  }

  void Poll() {
    // Bounded like Drain(), so a flood cannot hold the timer's handler.
    for (int i = 0; lazy && i < 16 && Drain(); ++i) {
    }
  }

  void Close() {
    boost::system::error_code ignored;
    if (lazy && fd >= 0) {
      ::close(fd);
    } else {
      socket.close(ignored);
    }
    fd = -1;
    lazy = false;
  }

  // With IP_RECVERR every ICMP error that reaches the socket (port
  // unreachable from anyone who can spoof one: ICMP carries no proof) is
  // also left pending as the socket's error, and the next send fails with
  // it without sending (the kernel checks the socket error before it
  // allocates the datagram). That failure consumed the error, so the send
  // is tried again; a send that fails kSendTries times fails for a reason
  // of its own (no route, no buffer).
  static constexpr int kSendTries = 3;
  bool SendTo(const Endpoint& to, std::span<const std::uint8_t> packet) {
    if (fd < 0) return false;
    Endpoint e = ForSocket(to, v6);
    for (int i = 0; i < kSendTries; ++i) {
      ssize_t n = ::sendto(fd, packet.data(), packet.size(), MSG_DONTWAIT,
                           e.data(), e.size());
      if (n == static_cast<ssize_t>(packet.size())) return true;
      if (n >= 0 || !IcmpErrno(errno)) return false;
    }
    return false;
  }

  udp::socket socket;  // not open while lazy (released)
  Endpoint listen;
  Endpoint bound;
  Handlers handlers;
  std::function<void(const IcmpReport&)> on_icmp;
  udp protocol = udp::v4();
  // The socket's descriptor while open, whether or not `socket` holds it.
  int fd = -1;
  bool lazy = false;
  bool v6 = false;
  bool kernel_stamps = false;
  bool counts_drops = false;
  // The socket's drop count as the last datagram read reported it.
  std::atomic<std::uint32_t> drops{0};
  mutable Mutex mu;
  bool open GUARDED_BY(mu) = false;
  std::string error GUARDED_BY(mu);
};

UdpTransport::UdpTransport(boost::asio::io_context& io, Endpoint listen)
    : state_(std::make_shared<State>(io, listen)) {}

UdpTransport::~UdpTransport() { Stop(); }

bool UdpTransport::Start(Handlers handlers, std::string* error) {
  state_->handlers = std::move(handlers);
  std::string why;
  if (!state_->Open(&why)) {
    state_->SetError(why);
    if (error) *error = why;
    return false;
  }
  return true;
}

void UdpTransport::Stop() {
  state_->Close();
  state_->handlers = {};
  MutexLock lock(state_->mu);
  state_->open = false;
}

bool UdpTransport::Healthy() const {
  MutexLock lock(state_->mu);
  return state_->open;
}

std::string UdpTransport::LastError() const {
  MutexLock lock(state_->mu);
  return state_->error;
}

std::optional<Timestamp> UdpTransport::Send(
    const Endpoint& peer, std::span<const std::uint8_t> packet, std::uint64_t) {
  Timestamp tx;
  tx.software_ns = RealtimeNs();
  if (!state_->SendTo(peer, packet)) return std::nullopt;
  return tx;
}

bool UdpTransport::Reply(const Source& to,
                         std::span<const std::uint8_t> packet) {
  return state_->SendTo(to.udp, packet);
}

bool UdpTransport::SetLazyReceive(bool on) { return state_->SetLazy(on); }

void UdpTransport::Poll() { state_->Poll(); }

std::optional<std::uint64_t> UdpTransport::ReceiveDrops() const {
  if (!state_->counts_drops) return std::nullopt;
  return state_->drops.load();
}

bool UdpTransport::SendTrace(const Endpoint& peer,
                             std::span<const std::uint8_t> payload, int ttl,
                             std::string* error) {
  return state_->SendTrace(peer, payload, ttl, error);
}

void UdpTransport::SetIcmpHandler(
    std::function<void(const IcmpReport&)> handler) {
  state_->on_icmp = std::move(handler);
}

Endpoint UdpTransport::local_endpoint() const { return state_->bound; }

bool UdpTransport::lazy() const { return state_->lazy; }

}  // namespace fabric::probe
