#include "osm/sender.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace fabric::osm {
namespace {

// Poll timeouts: bound how long the destructor waits for the thread and
// how late a (theoretically) missed wake-up is noticed.
constexpr int kFullWaitMs = 100;
constexpr int kIdleWaitMs = 1000;

void PutLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::unique_ptr<Sender> Sender::Create(std::string_view path, std::size_t slots,
                                       std::string* error) {
  if (path.empty() || path.front() != '/' ||
      path.size() >= sizeof(sockaddr_un::sun_path)) {
    *error = "socket path must be absolute and shorter than 108 bytes";
    return nullptr;
  }
  std::unique_ptr<Sender> s(new (std::nothrow) Sender);
  if (!s) return nullptr;
  std::size_t capacity = 2;
  while (capacity < slots) capacity *= 2;
  s->slots_.reset(new (std::nothrow) Slot[capacity]);
  if (!s->slots_) {
    *error = "cannot allocate the event queue";
    return nullptr;
  }
  for (std::size_t i = 0; i < capacity; ++i) {
    s->slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  s->mask_ = capacity - 1;
  try {
    s->path_.assign(path);
  } catch (...) {
    return nullptr;
  }
  s->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->wake_fd_ < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  // The thread takes no signals: OpenSM's own threads handle them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    s->thread_ = std::thread([p = s.get()] { p->Run(); });
  } catch (...) {
    *error = "cannot start the sender thread";
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!s->thread_.joinable()) {
    close(s->wake_fd_);
    s->wake_fd_ = -1;
    return nullptr;
  }
  return s;
}

Sender::~Sender() {
  stop_.store(true, std::memory_order_seq_cst);
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

// Vyukov's bounded MPMC queue, producer side: claim a slot whose sequence
// says it is free, fill it, publish it by advancing its sequence.
void Sender::Enqueue(std::span<const uint8_t> datagram) {
  if (datagram.size() < kHeaderSize || datagram.size() > kMaxMessageSize) {
    CountDrop();
    return;
  }
  std::size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
  Slot* slot;
  for (;;) {
    slot = &slots_[pos & mask_];
    const std::size_t seq = slot->seq.load(std::memory_order_acquire);
    const auto diff =
        static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
    if (diff == 0) {
      if (enqueue_pos_.compare_exchange_weak(pos, pos + 1,
                                             std::memory_order_relaxed)) {
        break;
      }
    } else if (diff < 0) {
      CountDrop();  // full
      return;
    } else {
      pos = enqueue_pos_.load(std::memory_order_relaxed);
    }
  }
  std::memcpy(slot->bytes, datagram.data(), datagram.size());
  slot->len = static_cast<uint16_t>(datagram.size());
  slot->seq.store(pos + 1, std::memory_order_release);
  // Pairs with the fence in Sleep(): either the thread sees this slot
  // before sleeping or this sees `sleeping_` and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  }
}

bool Sender::Dequeue(uint8_t* out, std::size_t* len) {
  Slot& slot = slots_[dequeue_pos_ & mask_];
  if (slot.seq.load(std::memory_order_acquire) != dequeue_pos_ + 1) {
    return false;
  }
  *len = slot.len;
  std::memcpy(out, slot.bytes, slot.len);
  slot.seq.store(dequeue_pos_ + mask_ + 1, std::memory_order_release);
  ++dequeue_pos_;
  return true;
}

void Sender::Sleep() {
  sleeping_.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const Slot& next = slots_[dequeue_pos_ & mask_];
  const bool empty =
      next.seq.load(std::memory_order_acquire) != dequeue_pos_ + 1;
  if (empty && !stop_.load(std::memory_order_relaxed)) {
    pollfd p{wake_fd_, POLLIN, 0};
    poll(&p, 1, kIdleWaitMs);
    uint64_t count;
    [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof(count));
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

void Sender::Run() {
  uint8_t bytes[kMaxMessageSize];
  std::size_t len = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (Dequeue(bytes, &len)) {
      Deliver(bytes, len);
    } else {
      Sleep();
    }
  }
}

bool Sender::Connect() {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.data(), path_.size());
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    close(fd);
    return false;
  }
  fd_ = fd;
  return true;
}

void Sender::Deliver(uint8_t* bytes, std::size_t len) {
  if (fd_ < 0 && !Connect()) {
    CountDrop();
    return;
  }
  const uint64_t carried = dropped_.exchange(0, std::memory_order_relaxed);
  PutLe64(bytes + 8, carried);
  bool reconnected = false;
  while (!stop_.load(std::memory_order_relaxed)) {
    const ssize_t n = send(fd_, bytes, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(len)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // The daemon's queue is full: wait here, on this thread, until it
      // reads; OpenSM's threads keep filling the ring meanwhile.
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, kFullWaitMs);
      continue;
    }
    // The daemon went away (ECONNREFUSED: a restarted daemon has a new
    // socket at the path) or anything else: reconnect once and resend,
    // else drop.
    close(fd_);
    fd_ = -1;
    if (reconnected || !Connect()) break;
    reconnected = true;
  }
  dropped_.fetch_add(carried + 1, std::memory_order_relaxed);
}

}  // namespace fabric::osm
