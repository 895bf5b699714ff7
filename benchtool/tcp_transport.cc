#include "benchtool/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "benchtool/dataflow.h"

namespace fabric::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kDataMagic = 0x464d4244;  // "FMBD"
constexpr std::size_t kDataHeader = 12;
constexpr std::size_t kHelloBytes = 8 + 4 + 64 + 1;

std::string Errno(int e) { return std::strerror(e); }

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Resolves host:port numerically or by name (the hosts file may hold names).
bool Resolve(const std::string& host, std::uint16_t port, sockaddr_storage* out,
             socklen_t* len, std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(),
                       &hints, &res);
  if (rc != 0 || res == nullptr) {
    *error = std::string("cannot resolve: ") + gai_strerror(rc);
    return false;
  }
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

class Tcp final : public BulkTransport {
 public:
  explicit Tcp(TcpTransportOptions o) : options_(std::move(o)) {
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Tcp() override {
    Close();
    if (wake_ >= 0) ::close(wake_);
  }

  std::string_view Name() const override { return "tcp"; }

  std::optional<Endpoint> Prepare(const SessionInfo& session,
                                  std::size_t region_bytes,
                                  TransportError* error) override {
    session_ = session;
    try {
      region_.assign(region_bytes, std::byte{0});
    } catch (const std::bad_alloc&) {
      *error = {-1, "",
                "cannot allocate " + std::to_string(region_bytes) + " bytes"};
      return std::nullopt;
    }
    sockaddr_storage addr{};
    socklen_t len = 0;
    std::string why;
    if (!Resolve(options_.bind_address, 0, &addr, &len, &why)) {
      *error = {-1, "",
                "bulk listener on '" + options_.bind_address + "': " + why};
      return std::nullopt;
    }
    listen_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (listen_ < 0 || bind(listen_, reinterpret_cast<sockaddr*>(&addr), len) ||
        ::listen(listen_, 64)) {
      *error = {-1, "", "bulk listener: " + Errno(errno)};
      return std::nullopt;
    }
    SetNonBlocking(listen_);
    sockaddr_storage bound{};
    socklen_t blen = sizeof bound;
    getsockname(listen_, reinterpret_cast<sockaddr*>(&bound), &blen);
    std::uint16_t port =
        bound.ss_family == AF_INET6
            ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
            : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return TcpEndpoint(port);
  }

  std::span<std::byte> Region() override { return region_; }

  TransportStatus Connect(std::span<const Endpoint> endpoints,
                          std::span<const int> send_to,
                          std::span<const int> recv_from) override {
    auto deadline = Clock::now() + session_.io_timeout;
    for (int r : send_to) {
      if (r < 0 || r >= session_.ranks() || r == session_.rank ||
          static_cast<std::size_t>(r) >= endpoints.size() ||
          endpoints[r].size() != 2) {
        return Err(r, "no usable bulk endpoint");
      }
      std::string host;
      std::uint16_t ignored;
      if (!SplitHostPort(session_.peers[r], &host, &ignored)) {
        return Err(r, "malformed address");
      }
      std::uint16_t port = (endpoints[r][0] << 8) | endpoints[r][1];
      if (auto e = Dial(r, host, port, deadline)) return e;
    }
    // Accept until every expected sender presented a valid hello; anything
    // else that connects is closed.
    std::set<int> waiting(recv_from.begin(), recv_from.end());
    while (!waiting.empty()) {
      if (aborted_) return Err(-1, "aborted");
      int ms = MsLeft(deadline);
      if (ms <= 0) return Err(*waiting.begin(), "did not connect in time");
      pollfd p[2] = {{listen_, POLLIN, 0}, {wake_, POLLIN, 0}};
      if (poll(p, 2, ms) < 0 && errno != EINTR) return Err(-1, Errno(errno));
      if (!(p[0].revents & POLLIN)) continue;
      int fd = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int rank = ReadHello(fd, deadline);
      if (rank < 0 || !waiting.count(rank)) {
        ::close(fd);
        continue;
      }
      waiting.erase(rank);
      Tune(fd);
      in_[rank] = fd;
    }
    return std::nullopt;
  }

  void Abort() override {
    aborted_ = true;
    std::uint64_t one = 1;
    if (wake_ >= 0) (void)!write(wake_, &one, sizeof one);
  }

  void Close() override {
    // After an abort, reset the links instead of letting the kernel flush
    // what is still queued: the other ranks stop receiving at once.
    if (aborted_) {
      linger hard{1, 0};
      for (auto& [r, fd] : out_) {
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      }
    }
    for (auto& [r, fd] : out_) ::close(fd);
    for (auto& [r, fd] : in_) ::close(fd);
    out_.clear();
    in_.clear();
    if (listen_ >= 0) ::close(listen_);
    listen_ = -1;
    region_.clear();
    region_.shrink_to_fit();
  }

  // 1 MiB: 8 ms of a 1 Gbit/s link, so a slice's own cost stays small.
  std::size_t PipelineSlice() const override { return 1 << 20; }

  // The plan as a dataflow (dataflow.h): a send starts once the receives
  // and reductions it reads are complete, a receive once the earlier sends
  // of its bytes are in the kernel; the streams keep each link's order.
  TransportStatus Run(std::span<const Step> steps) override {
    // An agent runs one plan per iteration; its schedule is kept, since
    // working it out is quadratic in the plan's ops (0.3 ms for n=64 at a
    // small size, about 5% of such an iteration, estimated at ~6 ms).
    if (!std::equal(steps.begin(), steps.end(), plan_.begin(), plan_.end())) {
      plan_.assign(steps.begin(), steps.end());
      schedule_ = Schedule(plan_);
    }
    const std::vector<FlowOp>& ops = schedule_;
    std::size_t placed = 0, reduces = 0;
    for (const FlowOp& f : ops) placed += f.reduces.size();
    for (const Step& s : plan_) reduces += s.reduce.size();
    if (placed != reduces) return BulkTransport::Run(plan_);
    std::vector<std::optional<ArrivalReducer>> reducers(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!ops[i].send)
        reducers[i].emplace(Region(), *ops[i].op, ops[i].reduces);
    }
    return Drive(ops, [&](std::size_t i, std::size_t bytes) {
      reducers[i]->Arrived(bytes);
    });
  }

 protected:
  TransportStatus DoExchange(std::span<const Op> sends,
                             std::span<const Op> recvs,
                             const Arrived& arrived) override {
    Step step{{sends.begin(), sends.end()}, {recvs.begin(), recvs.end()}, {}};
    return Drive(Schedule(std::span(&step, 1)),
                 [&](std::size_t i, std::size_t bytes) {
                   if (arrived) arrived(i - sends.size(), bytes);
                 });
  }

 private:
  struct Pending {
    const Op* op;
    std::uint8_t header[kDataHeader];
    std::size_t done = 0;   // bytes of header + data moved
    std::size_t index = 0;  // in the schedule
  };

  // Moves every op of a schedule, each once what it waits for is complete,
  // over one poll() loop; arrived(i, n): the first n bytes of receive ops[i]
  // are in the region.
  TransportStatus Drive(
      const std::vector<FlowOp>& ops,
      const std::function<void(std::size_t, std::size_t)>& arrived) {
    std::vector<Pending> pending(ops.size());
    std::vector<bool> complete(ops.size(), false);
    std::map<int, std::deque<std::size_t>> out, in;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const FlowOp& f = ops[i];
      if (auto e = CheckOp(*f.op, f.send ? out_ : in_)) return e;
      pending[i] = Pending{f.op, {}, 0, i};
      if (f.send) PutHeader(pending[i].header, f.op->length);
      (f.send ? out : in)[f.op->peer].push_back(i);
    }
    auto ready = [&](std::size_t i) {
      for (std::size_t j : ops[i].after) {
        if (!complete[j]) return false;
      }
      return true;
    };
    auto last_progress = Clock::now();
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> who;  // rank, is_send
    while (!out.empty() || !in.empty()) {
      if (aborted_) return Err(-1, "aborted");
      fds.clear();
      who.clear();
      for (auto& [r, q] : out) {
        if (!ready(q.front())) continue;
        fds.push_back({out_[r], POLLOUT, 0});
        who.push_back({r, true});
      }
      for (auto& [r, q] : in) {
        if (!ready(q.front())) continue;
        fds.push_back({in_[r], POLLIN, 0});
        who.push_back({r, false});
      }
      // Cannot happen for a plan whose lock-step run completes: the
      // earliest unfinished op waits for nothing.
      if (fds.empty()) return Err(-1, "plan stuck: no operation can start");
      fds.push_back({wake_, POLLIN, 0});
      int ms = MsLeft(last_progress + session_.io_timeout);
      if (ms <= 0) {  // name a peer we wait to hear from, if any
        auto quiet = std::find_if(who.begin(), who.end(),
                                  [](const auto& w) { return !w.second; });
        return Err(quiet != who.end() ? quiet->first : who.front().first,
                   "no progress for " +
                       std::to_string(session_.io_timeout.count()) + " ms");
      }
      int n = poll(fds.data(), fds.size(), ms);
      if (n < 0 && errno != EINTR) return Err(-1, Errno(errno));
      for (std::size_t k = 0; k + 1 < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        auto [r, is_send] = who[k];
        auto& q = is_send ? out[r] : in[r];
        Pending& p = pending[q.front()];
        TransportStatus e = is_send ? SendSome(r, p) : RecvSome(r, p);
        if (e) return e;
        last_progress = Clock::now();
        if (!is_send && p.done > kDataHeader) {
          arrived(p.index, p.done - kDataHeader);
        }
        if (p.done == kDataHeader + p.op->length) {
          complete[p.index] = true;
          q.pop_front();
          if (q.empty()) (is_send ? out : in).erase(r);
        }
      }
    }
    return std::nullopt;
  }

  template <typename P>
  TransportStatus SendSome(int r, P& p) {
    ssize_t n;
    if (p.done < kDataHeader) {
      n = ::send(out_[r], p.header + p.done, kDataHeader - p.done,
                 MSG_NOSIGNAL);
    } else {
      std::size_t off = p.done - kDataHeader;
      n = ::send(out_[r], region_.data() + p.op->offset + off,
                 p.op->length - off, MSG_NOSIGNAL);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return std::nullopt;
      return Err(r, "send failed: " + Errno(errno));
    }
    p.done += n;
    return std::nullopt;
  }

  template <typename P>
  TransportStatus RecvSome(int r, P& p) {
    ssize_t n;
    if (p.done < kDataHeader) {
      n = ::recv(in_[r], p.header + p.done, kDataHeader - p.done, 0);
    } else {
      std::size_t off = p.done - kDataHeader;
      n = ::recv(in_[r], region_.data() + p.op->offset + off,
                 p.op->length - off, 0);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return std::nullopt;
      return Err(r, "receive failed: " + Errno(errno));
    }
    if (n == 0) return Err(r, "closed the connection mid-run");
    p.done += n;
    if (p.done == kDataHeader) {
      std::uint32_t magic = Get(p.header, 4);
      std::uint64_t len = Get(p.header + 4, 8);
      if (magic != kDataMagic || len != p.op->length) {
        return Err(r, "sent " + std::to_string(len) + " bytes, expected " +
                          std::to_string(p.op->length));
      }
    }
    return std::nullopt;
  }

  static std::uint64_t Get(const std::uint8_t* b, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | b[i];
    return v;
  }
  static void PutHeader(std::uint8_t* h, std::uint64_t len) {
    for (int i = 0; i < 4; ++i) h[i] = (kDataMagic >> (8 * (3 - i))) & 0xff;
    for (int i = 0; i < 8; ++i) h[4 + i] = (len >> (8 * (7 - i))) & 0xff;
  }

  TransportStatus CheckOp(const Op& o, const std::map<int, int>& links) {
    if (!links.count(o.peer)) return Err(o.peer, "not connected");
    if (o.offset > region_.size() || o.length > region_.size() - o.offset) {
      return Err(o.peer, "op outside the region");
    }
    return std::nullopt;
  }

  TransportError Error(int r, std::string what) const {
    std::string peer = r >= 0 && r < session_.ranks() ? session_.peers[r] : "";
    return TransportError{peer.empty() ? -1 : r, peer, std::move(what)};
  }
  TransportStatus Err(int r, std::string what) const {
    return Error(r, std::move(what));
  }

  static int MsLeft(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(left.count()) + 1;
  }

  static void Tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SetNonBlocking(fd);
  }

  bool WaitFd(int fd, short events, Clock::time_point deadline) {
    while (!aborted_) {
      int ms = MsLeft(deadline);
      if (ms <= 0) return false;
      pollfd p[2] = {{fd, events, 0}, {wake_, POLLIN, 0}};
      int n = poll(p, 2, ms);
      if (n > 0 && p[0].revents) return true;
    }
    return false;
  }

  TransportStatus Dial(int r, const std::string& host, std::uint16_t port,
                       Clock::time_point deadline) {
    sockaddr_storage addr{};
    socklen_t len = 0;
    std::string why;
    if (!Resolve(host, port, &addr, &len, &why)) return Err(r, why);
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Err(r, Errno(errno));
    SetNonBlocking(fd);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 &&
        errno != EINPROGRESS) {
      int e = errno;
      ::close(fd);
      return Err(r, "bulk connect: " + Errno(e));
    }
    if (!WaitFd(fd, POLLOUT, deadline)) {
      ::close(fd);
      return Err(r, aborted_ ? "aborted" : "bulk connect timed out");
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr != 0) {
      ::close(fd);
      return Err(r, "bulk connect: " + Errno(soerr));
    }
    // Hello: session id, rank, token (length-prefixed, <= 64 bytes).
    std::uint8_t hello[kHelloBytes] = {};
    for (int i = 0; i < 8; ++i) {
      hello[i] = (session_.session_id >> (8 * (7 - i))) & 0xff;
    }
    for (int i = 0; i < 4; ++i) {
      hello[8 + i] =
          (static_cast<std::uint32_t>(session_.rank) >> (8 * (3 - i))) & 0xff;
    }
    hello[12] = static_cast<std::uint8_t>(session_.token.size());
    std::memcpy(hello + 13, session_.token.data(),
                std::min<std::size_t>(session_.token.size(), 64));
    std::size_t sent = 0;
    while (sent < kHelloBytes) {
      ssize_t n = ::send(fd, hello + sent, kHelloBytes - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += n;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        ::close(fd);
        return Err(r, "bulk hello: " + Errno(errno));
      } else if (!WaitFd(fd, POLLOUT, deadline)) {
        ::close(fd);
        return Err(r, "bulk hello timed out");
      }
    }
    Tune(fd);
    out_[r] = fd;
    return std::nullopt;
  }

  // The rank a connecting peer presented, or -1 for a bad hello.
  int ReadHello(int fd, Clock::time_point deadline) {
    SetNonBlocking(fd);
    std::uint8_t hello[kHelloBytes];
    std::size_t got = 0;
    while (got < kHelloBytes) {
      ssize_t n = ::recv(fd, hello + got, kHelloBytes - got, 0);
      if (n > 0) {
        got += n;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR) ||
                 !WaitFd(fd, POLLIN,
                         std::min(deadline,
                                  Clock::now() + std::chrono::seconds(2)))) {
        return -1;
      }
    }
    std::uint64_t id = Get(hello, 8);
    int rank = static_cast<int>(Get(hello + 8, 4));
    std::size_t tlen = hello[12];
    if (id != session_.session_id || tlen != session_.token.size() ||
        tlen > 64 ||
        std::memcmp(hello + 13, session_.token.data(), tlen) != 0 || rank < 0 ||
        rank >= session_.ranks()) {
      return -1;
    }
    return rank;
  }

  TcpTransportOptions options_;
  SessionInfo session_;
  std::vector<std::byte> region_;
  int listen_ = -1;
  int wake_ = -1;
  std::vector<Step> plan_;  // the plan schedule_ was worked out for
  std::vector<FlowOp> schedule_;
  std::atomic<bool> aborted_{false};
  std::map<int, int> out_, in_;  // rank -> fd
};

}  // namespace

Endpoint TcpEndpoint(std::uint16_t port) {
  return Endpoint{static_cast<std::uint8_t>(port >> 8),
                  static_cast<std::uint8_t>(port & 0xff)};
}

bool SplitHostPort(const std::string& text, std::string* host,
                   std::uint16_t* port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) return false;
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  unsigned long p = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
    if (p > 65535) return false;
  }
  if (p == 0) return false;
  *host = h;
  *port = static_cast<std::uint16_t>(p);
  return true;
}

std::unique_ptr<BulkTransport> MakeTcpTransport(TcpTransportOptions options) {
  return std::make_unique<Tcp>(std::move(options));
}

}  // namespace fabric::bench
