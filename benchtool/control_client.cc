#include "benchtool/control_client.h"

#include <netdb.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "benchtool/tcp_transport.h"

namespace fabric::bench {
namespace {

int MsLeft(ControlClient::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - ControlClient::Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count()) + 1;
}

}  // namespace

ControlClient::~ControlClient() { Close(); }

void ControlClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool ControlClient::Open(Clock::time_point deadline, std::string* error) {
  std::string host;
  std::uint16_t port = 0;
  if (!SplitHostPort(address_, &host, &port)) {
    *error = "not host:port";
    return false;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *error = std::string("cannot resolve: ") + gai_strerror(rc);
    return false;
  }
  fd_ = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int c = fd_ < 0 ? -1 : ::connect(fd_, res->ai_addr, res->ai_addrlen);
  int e = errno;
  freeaddrinfo(res);
  if (fd_ < 0 || (c != 0 && e != EINPROGRESS)) {
    *error = std::string("connect: ") + std::strerror(e);
    return false;
  }
  pollfd p{fd_, POLLOUT, 0};
  if (poll(&p, 1, MsLeft(deadline)) <= 0) {
    *error = "connect timed out";
    return false;
  }
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  getsockopt(fd_, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr != 0) {
    *error = std::string("connect: ") + std::strerror(soerr);
    return false;
  }
  nonces_.mine.resize(kNonceBytes);
  if (RAND_bytes(nonces_.mine.data(), kNonceBytes) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  if (!Send(MsgType::kHello, EncodeHello({nonces_.mine}), error)) {
    return false;
  }
  MsgType type;
  Bytes payload;
  if (!Receive(deadline, &type, &payload, error)) {
    // An agent refuses a hello it cannot verify by closing.
    *error +=
        " (an agent closes on a hello signed with another key: is "
        "the key the same?)";
    return false;
  }
  auto hello = DecodeHello(payload);
  if (type != MsgType::kHello || !hello) {
    *error = "did not answer with a hello";
    return false;
  }
  nonces_.theirs = hello->nonce;
  return true;
}

bool ControlClient::Send(MsgType type, const Bytes& payload,
                         std::string* error) {
  std::uint64_t seq = type == MsgType::kHello ? 0 : ++send_seq_;
  Bytes frame = SealFrame(hmac_, nonces_, type, seq, payload);
  std::size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n =
        ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, 10000) <= 0) {
        *error = "send timed out";
        return false;
      }
      continue;
    }
    *error = std::string("send: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool ControlClient::Pump(bool* complete, std::string* error) {
  *complete = ready_.has_value();
  if (*complete) return true;
  std::uint8_t chunk[65536];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.insert(buffer_.end(), chunk, chunk + n);
    } else if (n == 0) {
      *error = "closed the control connection";
      return false;
    } else if (errno == EAGAIN || errno == EINTR) {
      break;
    } else {
      *error = std::string("control connection: ") + std::strerror(errno);
      return false;
    }
  }
  if (buffer_.size() < kHeaderBytes) return true;
  FrameHeader h;
  if (DecodeHeader(buffer_, &h) != Refusal::kNone) {
    *error = "sent a malformed frame";
    return false;
  }
  std::size_t whole = kHeaderBytes + h.payload_len + kMacBytes;
  if (buffer_.size() < whole) return true;
  Bytes payload;
  Refusal r = OpenFrame(hmac_, nonces_, std::span(buffer_).first(whole),
                        &last_seq_, &h, &payload);
  if (r != Refusal::kNone) {
    *error = "sent a frame that does not verify (" +
             std::string(RefusalName(r)) + "): is the key the same?";
    return false;
  }
  buffer_.erase(buffer_.begin(), buffer_.begin() + whole);
  ready_.emplace(h.type, std::move(payload));
  *complete = true;
  return true;
}

void ControlClient::Take(MsgType* type, Bytes* payload) {
  *type = ready_->first;
  *payload = std::move(ready_->second);
  ready_.reset();
}

bool ControlClient::Receive(Clock::time_point deadline, MsgType* type,
                            Bytes* payload, std::string* error) {
  for (;;) {
    bool complete = false;
    if (!Pump(&complete, error)) return false;
    if (complete) {
      Take(type, payload);
      return true;
    }
    int ms = MsLeft(deadline);
    if (ms <= 0) {
      *error = "no answer in time";
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    poll(&p, 1, ms);
  }
}

}  // namespace fabric::bench
