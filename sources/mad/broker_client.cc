#include "sources/mad/broker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace fabric::mad::broker {
namespace {

using Clock = std::chrono::steady_clock;

// A broker that stops reading (stopped, wedged) must not wedge the
// collector thread writing to it: a send that waits this long fails.
constexpr timeval kSendTimeout{5, 0};
constexpr auto kCallTimeout = std::chrono::seconds(5);

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

int ConnectSocket(const std::string& path, std::string* error) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long: " + path;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return *error = Errno("socket"), -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    *error = Errno(("connect " + path).c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

// Spawns `program --fd 3` with the other end of a socket pair as fd 3,
// default signal dispositions and an empty signal mask.
int Spawn(const std::string& program, pid_t* child, std::string* error) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
    return *error = Errno("socketpair"), -1;
  }
  // dup2 onto itself would keep close-on-exec: make sure it is not fd 3.
  if (pair[1] == 3) {
    const int moved = ::fcntl(pair[1], F_DUPFD_CLOEXEC, 4);
    ::close(pair[1]);
    pair[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string fd_arg = "3";
  char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>("--fd"),
                  fd_arg.data(), nullptr};
  const int rc =
      ::posix_spawn(child, program.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pair[1]);
  if (rc != 0) {
    *error = "spawn " + program + ": " + std::strerror(rc);
    ::close(pair[0]);
    return -1;
  }
  return pair[0];
}

}  // namespace

Counters& ProcessCounters() {
  static Counters counters;
  return counters;
}

std::unique_ptr<Connection> Connection::Open(const Endpoint& endpoint,
                                             std::string* error) {
  pid_t child = 0;
  const int fd = endpoint.socket_path.empty()
                     ? Spawn(endpoint.program, &child, error)
                     : ConnectSocket(endpoint.socket_path, error);
  if (fd < 0) {
    ++ProcessCounters().connect_failures;
    return nullptr;
  }
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kSendTimeout,
               sizeof(kSendTimeout));
  return std::unique_ptr<Connection>(new Connection(fd, child));
}

Connection::~Connection() {
  ::close(fd_);
  if (child_ <= 0) return;
  // The broker exits on EOF; give it a moment, then make sure.
  for (int i = 0; i < 200; ++i) {
    const pid_t r = ::waitpid(child_, nullptr, WNOHANG);
    if (r == child_ || (r < 0 && errno == ECHILD)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child_, SIGKILL);
  ::waitpid(child_, nullptr, 0);
}

bool Connection::Broke() {
  if (!broken_.exchange(true)) ++ProcessCounters().connections_lost;
  return false;
}

bool Connection::Send(const Request& request) {
  return Queue(request) && Flush();
}

bool Connection::Queue(const Request& request) {
  if (broken_) return false;
  const std::size_t before = outbox_.size();
  AppendRequest(request, &outbox_);
  if (outbox_.size() <= kMaxMessage && queued_ < kMaxRequestsPerMessage) {
    ++queued_;
    return true;
  }
  // Full: send what was there, start the next message with this one.
  std::vector<std::uint8_t> last(outbox_.begin() + before, outbox_.end());
  outbox_.resize(before);
  const bool sent = Flush();
  outbox_ = std::move(last);
  queued_ = 1;
  return sent;
}

bool Connection::Flush() {
  if (outbox_.empty()) return !broken_;
  const std::vector<std::uint8_t> bytes = std::move(outbox_);
  outbox_.clear();
  queued_ = 0;
  if (broken_) return false;
  if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(bytes.size())) {
    return true;
  }
  return Broke();
}

std::optional<Reply> Connection::Pending() {
  if (inbox_.empty()) return std::nullopt;
  Reply r = std::move(inbox_.front());
  inbox_.pop_front();
  return r;
}

std::optional<Reply> Connection::Receive(std::chrono::microseconds wait) {
  if (auto r = Pending()) return r;
  if (broken_) return std::nullopt;
  std::uint8_t buf[kMaxMessage];
  // A reply already queued is read without a poll() first: during a sweep
  // most are (one syscall per message, not two).
  ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0 && errno == EAGAIN && wait.count() > 0) {
    pollfd p{fd_, POLLIN, 0};
    const int ms = static_cast<int>((wait.count() + 999) / 1000);
    if (::poll(&p, 1, ms) <= 0) return std::nullopt;
    n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
  if (n > 0) {
    if (auto replies = DecodeReplies({buf, static_cast<std::size_t>(n)})) {
      inbox_.assign(std::make_move_iterator(replies->begin() + 1),
                    std::make_move_iterator(replies->end()));
      return std::move(replies->front());
    }
  }
  // EOF, a socket error or a reply we cannot read: this broker is done.
  Broke();
  return std::nullopt;
}

std::optional<Reply> Connection::Call(const Request& request,
                                      std::chrono::milliseconds timeout) {
  if (!Send(request)) return std::nullopt;
  const auto until = Clock::now() + timeout;
  while (!broken_ && Clock::now() < until) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        until - Clock::now());
    auto reply = Receive(left);
    if (reply && reply->kind == request.kind && reply->tid == request.tid) {
      return reply;
    }
  }
  return std::nullopt;
}

std::unique_ptr<Transport> Transport::Open(const Endpoint& endpoint,
                                           const std::string& ca, int port,
                                           std::string* error) {
  auto c = Connection::Open(endpoint, error);
  if (!c) return nullptr;
  Request open = MakeRequest(Kind::kOpen, 0);
  open.ca = ca;
  open.port = port;
  const auto reply = c->Call(open, kCallTimeout);
  if (!reply) {
    *error = "MAD broker did not answer OPEN (it exited? see its log)";
    return nullptr;
  }
  if (reply->status != Status::kOk) {
    *error = "MAD broker: " + reply->error;
    return nullptr;
  }
  return std::unique_ptr<Transport>(new Transport(std::move(c)));
}

bool Transport::Post(std::uint16_t dlid, const Mad& mad,
                     std::chrono::milliseconds timeout) {
  const MadCall call = CallFromMad(dlid, mad, timeout);
  Request r = MakeRequest(Kind::kMad, call.tid);
  r.mad = call;
  if (!connection_->Queue(r)) return false;
  posted_.insert(call.tid);
  return true;
}

void Transport::Poll(std::chrono::microseconds wait,
                     std::vector<Answer>* answers) {
  connection_->Flush();
  if (connection_->broken()) {
    // No answer will come for what this connection carried (or never
    // sent): fail it now rather than at each try's timeout.
    for (std::uint32_t tid : posted_) {
      Answer a;
      a.tid = tid;
      a.error = std::errc::io_error;
      answers->push_back(a);
    }
    posted_.clear();
    return;
  }
  auto reply = connection_->Receive(wait);
  while (reply) {
    if (reply->kind == Kind::kMad) {
      Answer a;
      a.tid = reply->tid;
      a.mad = reply->mad;
      switch (reply->status) {
        case Status::kOk:
          break;
        case Status::kTimedOut:
          a.timed_out = true;
          break;
        case Status::kRefused:
          ++ProcessCounters().refused[static_cast<std::size_t>(reply->refusal)];
          a.error = std::errc::permission_denied;
          break;
        case Status::kFailed:
          a.error = std::errc::io_error;
          break;
      }
      posted_.erase(a.tid);
      answers->push_back(a);
    }
    // The rest of the same message only: another recv here would mostly
    // say EAGAIN; the next Poll reads a message already waiting first.
    reply = connection_->Pending();
  }
}

namespace {

class AllowListTransport : public MadTransport {
 public:
  explicit AllowListTransport(std::unique_ptr<MadTransport> inner)
      : inner_(std::move(inner)) {}
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds timeout) override {
    const MadCall call = CallFromMad(dlid, mad, timeout);
    const Refusal why = Check(call);
    if (why != Refusal::kNone) {
      ++ProcessCounters().refused[static_cast<std::size_t>(why)];
      spdlog::warn("refused {} MAD (attribute {:#x}): not an allowed Get",
                   RefusalName(why), call.attribute);
      return false;
    }
    return inner_->Post(dlid, BuildMad(call), timeout);
  }
  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override {
    inner_->Poll(wait, answers);
  }

 private:
  std::unique_ptr<MadTransport> inner_;
};

}  // namespace

std::unique_ptr<MadTransport> AllowListed(std::unique_ptr<MadTransport> inner) {
  return std::make_unique<AllowListTransport>(std::move(inner));
}

std::vector<LocalPort> PortLister::List(std::string* error) {
  MutexLock hold(mutex_);
  // Once more on a new connection when the kept one went away.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!connection_ || connection_->broken()) {
      connection_ = Connection::Open(endpoint_, error);
      if (!connection_) return {};
    }
    static std::atomic<std::uint32_t> next_tid{1};
    const auto reply =
        connection_->Call(MakeRequest(Kind::kPorts, next_tid++), kCallTimeout);
    if (reply) {
      if (reply->status != Status::kOk) {
        *error = "MAD broker could not list the local ports (see its log)";
      }
      return reply->ports;
    }
    connection_.reset();
  }
  *error = "MAD broker did not answer (it exited? see its log)";
  return {};
}

}  // namespace fabric::mad::broker
