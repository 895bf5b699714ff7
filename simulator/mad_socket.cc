#include "simulator/mad_socket.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "simulator/mad.h"
#include "simulator/runner.h"

namespace fabric::sim {
namespace {

constexpr char kMagic[4] = {'F', 'S', 'M', '1'};
constexpr std::size_t kHeaderSize = 16;
constexpr std::size_t kRequestSize = kHeaderSize + kMadSize;

bool SocketAddress(const std::string& path, sockaddr_un* addr,
                   std::string* error) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    *error = "MAD socket path '" + path + "' is empty or too long";
    return false;
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Index into c.ports() of the host IB port with GUID `guid`; -1: none (its
// directed-route MADs go unanswered, LID-routed ones are still answered).
int LocalPortIndex(const Cluster& c, std::uint64_t guid) {
  for (std::size_t i = 0; i < c.ports().size(); ++i) {
    const Port& p = c.ports()[i];
    if (p.host >= 0 && p.guid == guid &&
        p.link_layer == LinkLayer::kInfiniBand) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

class SocketMadTransport : public MadTransport {
 public:
  SocketMadTransport(int fd, std::uint64_t local_port_guid)
      : fd_(fd), guid_(local_port_guid) {}
  ~SocketMadTransport() override { ::close(fd_); }

 protected:
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds) override {
    std::uint8_t request[kRequestSize] = {};
    std::memcpy(request, kMagic, sizeof(kMagic));
    for (int i = 0; i < 8; ++i) request[4 + i] = guid_ >> (56 - 8 * i);
    request[12] = dlid >> 8;
    request[13] = dlid & 0xff;
    std::memcpy(request + kHeaderSize, mad.data(), kMadSize);
    return ::send(fd_, request, sizeof(request), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(sizeof(request));
  }

  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override {
    pollfd p{fd_, POLLIN, 0};
    const timespec ts{static_cast<time_t>(wait.count() / 1000000),
                      static_cast<long>(wait.count() % 1000000 * 1000)};
    if (::ppoll(&p, 1, &ts, nullptr) <= 0) return;
    Mad mad;
    while (true) {
      const ssize_t n = ::recv(fd_, mad.data(), mad.size(), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      if (n == static_cast<ssize_t>(kMadSize))
        answers->push_back(Answer::Of(mad));
    }
  }

 private:
  int fd_;
  std::uint64_t guid_;
};

}  // namespace

MadSocketServer::MadSocketServer(const LiveRunner& runner)
    : answer_(
          [&runner](std::uint64_t guid, std::uint16_t dlid, const Mad& mad) {
            MadResult answer = std::errc::host_unreachable;
            runner.WithCluster([&](const Cluster& c) {
              answer = AnswerMad(c, dlid, mad, LocalPortIndex(c, guid));
            });
            return answer;
          }) {}

MadSocketServer::~MadSocketServer() { Stop(); }

bool MadSocketServer::Start(const std::string& path, std::string* error) {
  sockaddr_un addr;
  if (!SocketAddress(path, &addr, error)) return false;
  // Only a socket is replaced: a typo naming a regular file must not
  // delete it.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    ::unlink(path.c_str());
  }
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0 || wake_fd_ < 0 ||
      ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = Errno("cannot bind MAD socket", path);
    Stop();
    return false;
  }
  path_ = path;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void MadSocketServer::Stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (fd_ >= 0) ::close(fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  fd_ = wake_fd_ = -1;
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void MadSocketServer::Loop() {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (fds[0].revents) Serve();
  }
}

// Answers every request waiting on the socket.
void MadSocketServer::Serve() {
  std::uint8_t request[kRequestSize + 1];
  while (true) {
    sockaddr_un from{};
    socklen_t from_len = sizeof(from);
    const ssize_t n = ::recvfrom(fd_, request, sizeof(request), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    if (n != static_cast<ssize_t>(kRequestSize) ||
        std::memcmp(request, kMagic, sizeof(kMagic)) != 0) {
      ++ignored_;
      continue;
    }
    std::uint64_t guid = 0;
    for (int i = 0; i < 8; ++i) guid = (guid << 8) | request[4 + i];
    const std::uint16_t dlid =
        static_cast<std::uint16_t>((request[12] << 8) | request[13]);
    Mad mad;
    std::memcpy(mad.data(), request + kHeaderSize, kMadSize);
    const MadResult answer = answer_(guid, dlid, mad);
    if (!answer.ok()) continue;  // no answer, as on the fabric
    // A client that went away (or an unbound one) just misses its answer.
    if (::sendto(fd_, answer->data(), kMadSize, MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<sockaddr*>(&from),
                 from_len) == static_cast<ssize_t>(kMadSize)) {
      ++answered_;
    }
  }
}

std::unique_ptr<MadTransport> ConnectMadSocket(const std::string& path,
                                               std::uint64_t local_port_guid,
                                               std::string* error) {
  sockaddr_un addr;
  if (!SocketAddress(path, &addr, error)) return nullptr;
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = Errno("cannot create a socket for", path);
    return nullptr;
  }
  // Autobind (an abstract address of the kernel's choosing) so that the
  // server has somewhere to send the answers; then only the server's
  // datagrams are received.
  const sockaddr_un any{.sun_family = AF_UNIX, .sun_path = {}};
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&any),
             sizeof(sa_family_t)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = Errno("cannot reach fabricmon-sim's MAD socket", path);
    ::close(fd);
    return nullptr;
  }
  // A send blocks while the server's queue is full; never for long (the
  // collector's run has a deadline).
  const timeval send_timeout{.tv_sec = 1, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout,
               sizeof(send_timeout));
  return std::make_unique<SocketMadTransport>(fd, local_port_guid);
}

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

}  // namespace fabric::sim
