#include "simulator/probe_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "simulator/runner.h"

namespace fabric::sim {
namespace {

// Probes are small (probe/wire.h); anything larger is cut, as by a short
// buffer, and the responder rejects it.
constexpr std::size_t kMaxDatagram = 2048;

bool Address(const std::string& ip, int port, sockaddr_in* out) {
  *out = {};
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<std::uint16_t>(port));
  return ::inet_pton(AF_INET, ip.c_str(), &out->sin_addr) == 1;
}

int BoundSocket(const sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 &&
      ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return 0;
  }
  return ntohs(addr.sin_port);
}

}  // namespace

ProbeRelay::ProbeRelay(const LiveRunner& runner, std::string ip,
                       std::vector<int> responder_ports)
    : runner_(runner),
      ip_(std::move(ip)),
      responder_ports_(std::move(responder_ports)) {}

ProbeRelay::~ProbeRelay() { Stop(); }

bool ProbeRelay::Start(std::string* error) {
  sockaddr_in any;
  if (!Address(ip_, 0, &any)) {
    *error = "--probe-relay: '" + ip_ + "' is not an IPv4 address";
    return false;
  }
  const int hosts = static_cast<int>(responder_ports_.size());
  for (int from = 0; from < hosts; ++from) {
    for (int to = 0; to < hosts; ++to) {
      if (from == to) continue;
      Pair pair;
      pair.from = from;
      pair.to = to;
      sockaddr_in responder;
      Address(ip_, responder_ports_[to], &responder);
      pair.front_fd = BoundSocket(any);
      pair.upstream_fd = BoundSocket(any);
      pairs_.push_back(pair);  // closed by Stop() from here on
      if (pair.front_fd < 0 || pair.upstream_fd < 0 ||
          ::connect(pair.upstream_fd,
                    reinterpret_cast<const sockaddr*>(&responder),
                    sizeof(responder)) != 0) {
        *error = "--probe-relay: cannot bind on " + ip_ + ": " +
                 std::strerror(errno);
        Stop();
        return false;
      }
      pairs_.back().front_port = LocalPort(pair.front_fd);
    }
  }
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    *error = std::string("--probe-relay: eventfd: ") + std::strerror(errno);
    Stop();
    return false;
  }
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void ProbeRelay::Stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (Pair& p : pairs_) {
    if (p.front_fd >= 0) ::close(p.front_fd);
    if (p.upstream_fd >= 0) ::close(p.upstream_fd);
  }
  pairs_.clear();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

int ProbeRelay::FrontPort(int from, int to) const {
  for (const Pair& p : pairs_) {
    if (p.from == from && p.to == to) return p.front_port;
  }
  return 0;
}

bool ProbeRelay::WritePeersFiles(
    const std::vector<std::filesystem::path>& roots, std::string* error) const {
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const auto path = roots[i] / "probe-peers";
    const auto staging = roots[i] / ".probe-peers.new";
    {
      std::ofstream out(staging);
      out << "# host" << i << "'s probe peers, relayed by fabricmon-sim\n";
      for (std::size_t j = 0; j < roots.size(); ++j) {
        if (j == i) continue;
        out << ip_ << ":" << FrontPort(static_cast<int>(i), static_cast<int>(j))
            << "  # host" << j << "\n";
      }
      if (!out.flush()) {
        *error = "cannot write " + staging.string();
        return false;
      }
    }
    std::error_code ec;
    std::filesystem::rename(staging, path, ec);
    if (ec) {
      *error = "cannot rename " + staging.string() + ": " + ec.message();
      return false;
    }
  }
  return true;
}

void ProbeRelay::Loop() {
  std::vector<pollfd> fds;
  for (const Pair& p : pairs_) {
    fds.push_back({p.front_fd, POLLIN, 0});
    fds.push_back({p.upstream_fd, POLLIN, 0});
  }
  fds.push_back({wake_fd_, POLLIN, 0});
  while (true) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds.back().revents) return;
    for (std::size_t k = 0; k < pairs_.size(); ++k) {
      if (fds[2 * k].revents) Forward(pairs_[k]);
      if (fds[2 * k + 1].revents) Answer(pairs_[k]);
    }
  }
}

// Host `from`'s probes: to the responder, minus the model's loss.
void ProbeRelay::Forward(Pair& pair) {
  char buf[kMaxDatagram];
  while (true) {
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    const ssize_t n = ::recvfrom(pair.front_fd, buf, sizeof(buf), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    pair.sender = from;
    pair.have_sender = true;
    const double loss = runner_.ProbeLoss(pair.from, pair.to);
    pair.owed = loss > 0 ? pair.owed + loss : 0;
    if (pair.owed >= 1 - 1e-9) {  // five times 0.2 may sum to 0.99...9
      pair.owed -= 1;
      ++dropped_;
      continue;
    }
    // A responder not up yet refuses (ECONNREFUSED): the probe is lost,
    // as the prober will see.
    if (::send(pair.upstream_fd, buf, n, MSG_DONTWAIT) == n) ++forwarded_;
  }
}

// The responder's answers: back to whoever sent the pair's last probe.
void ProbeRelay::Answer(Pair& pair) {
  char buf[kMaxDatagram];
  while (true) {
    const ssize_t n = ::recv(pair.upstream_fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNREFUSED) continue;  // an earlier send's error
    if (n < 0) return;
    if (!pair.have_sender) continue;
    ::sendto(pair.front_fd, buf, n, MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&pair.sender),
             sizeof(pair.sender));
  }
}

}  // namespace fabric::sim
