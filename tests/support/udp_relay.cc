#include "tests/support/udp_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <string>

namespace fabric::testing {
namespace {

sockaddr_in Addr(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// CLOCK_REALTIME: the clock of the kernel's SO_TIMESTAMPNS receive stamps.
std::int64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

constexpr std::size_t kHeldRing = 4096;
// A minute of probes at 1 ms.
constexpr std::size_t kRoundsKept = 60'000;
// A probe and its answer share bytes 8..23 (session and sequence number,
// probe/wire.h): the relay pairs them by that.
constexpr std::size_t kIdOffset = 8, kIdBytes = 16;

// One datagram from a non-blocking socket with the time the kernel received
// it; -1 when there is none.
ssize_t Receive(int fd, char* buf, std::size_t size, sockaddr_in* from,
                std::int64_t* kernel_ns) {
  iovec iov{buf, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = from ? sizeof(*from) : 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = ::recvmsg(fd, &msg, 0);
  if (n < 0) return n;
  *kernel_ns = NowNs();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
      *kernel_ns =
          static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }
  }
  return n;
}

}  // namespace

std::chrono::nanoseconds UdpRelay::MedianHeld(double from_s, double to_s) {
  std::vector<std::int64_t> v;
  {
    std::lock_guard lock(held_mu_);
    for (const auto& [when, held] : held_round_) {
      double t = static_cast<double>(when) * 1e-9;
      if (t >= from_s && t <= to_s) v.push_back(held);
    }
  }
  if (v.empty()) return std::chrono::nanoseconds(0);
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return std::chrono::nanoseconds(v[v.size() / 2]);
}

UdpRelay::UdpRelay(std::string netns, std::string front_ip, int front_port,
                   std::string upstream_ip, int upstream_port)
    : netns_(std::move(netns)),
      front_ip_(std::move(front_ip)),
      upstream_ip_(std::move(upstream_ip)),
      front_port_(front_port),
      upstream_port_(upstream_port) {}

UdpRelay::~UdpRelay() { Stop(); }

bool UdpRelay::Start(std::string* error) {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  thread_ = std::thread([&] {
    std::string why;
    if (!netns_.empty()) {
      int ns = ::open(("/run/netns/" + netns_).c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) why = "setns failed";
      if (ns >= 0) ::close(ns);
    }
    if (why.empty()) {
      front_fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
      upstream_fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
      wake_fd_ = ::eventfd(0, EFD_NONBLOCK);
      int on = 1;
      for (int fd : {front_fd_, upstream_fd_}) {
        ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
      }
      sockaddr_in front = Addr(front_ip_, front_port_);
      if (::bind(front_fd_, reinterpret_cast<sockaddr*>(&front),
                 sizeof(front)) != 0) {
        why = "bind " + front_ip_ + ":" + std::to_string(front_port_) + ": " +
              std::strerror(errno);
      }
    }
    {
      // Notified under the lock: `cv` lives on Start()'s stack, which
      // returns as soon as it can take the lock after seeing `ready`.
      std::lock_guard lock(mu);
      start_error_ = why;
      ready = true;
      cv.notify_all();
    }
    if (why.empty()) Run();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return ready; });
  started_ = start_error_.empty();
  if (!started_) {
    if (error) *error = start_error_;
    thread_.join();
  }
  return started_;
}

void UdpRelay::Stop() {
  if (thread_.joinable()) {
    stop_ = true;
    if (wake_fd_ >= 0) {
      std::uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof(one));
    }
    thread_.join();
  }
  for (int* fd : {&front_fd_, &upstream_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void UdpRelay::Run() {
  // Wake-ups on time: the default 50 µs slack would add to every delay.
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  struct Held {
    std::int64_t arrived, due;
    std::vector<char> bytes;
  };
  std::deque<Held> held;
  std::vector<char> last;
  sockaddr_in upstream = Addr(upstream_ip_, upstream_port_);
  sockaddr_in client{};
  bool have_client = false;
  char buf[2048];
  auto send_up = [&](const std::vector<char>& b) {
    ::sendto(upstream_fd_, b.data(), b.size(), 0,
             reinterpret_cast<sockaddr*>(&upstream), sizeof(upstream));
    ++forwarded_;
  };
  // Up-holds by probe id until the answer comes back: a round trip's
  // holds are summed per probe, since a median of sums is not the sum of
  // medians when wake-ups are skewed.
  std::map<std::string, std::int64_t> up_held;
  std::deque<std::string> up_order;
  auto id = [](const char* b, std::size_t n) {
    return n >= kIdOffset + kIdBytes ? std::string(b + kIdOffset, kIdBytes)
                                     : std::string();
  };
  // A hold ends when sendto() starts: the call itself delivers the datagram
  // to the receiver's socket (veth), whose kernel stamp is taken inside it.
  auto record_up = [&](const std::vector<char>& b, std::int64_t held) {
    std::string key = id(b.data(), b.size());
    if (key.empty()) return;
    if (up_order.size() >= kHeldRing) {
      up_held.erase(up_order.front());
      up_order.pop_front();
    }
    up_held[key] = held;
    up_order.push_back(std::move(key));
  };
  auto record_back = [&](const char* b, std::size_t n, std::int64_t held) {
    auto it = up_held.find(id(b, n));
    if (it == up_held.end()) return;
    std::int64_t round = it->second + held;
    up_held.erase(it);
    std::lock_guard lock(held_mu_);
    if (held_round_.size() >= kRoundsKept) held_round_.pop_front();
    held_round_.push_back({NowNs(), round});
  };
  while (!stop_) {
    std::int64_t now = NowNs();
    while (!held.empty() && held.front().due <= now) {
      record_up(held.front().bytes, NowNs() - held.front().arrived);
      send_up(held.front().bytes);
      last = std::move(held.front().bytes);
      held.pop_front();
    }
    // Every ReplayLast() call is one replay, however late this thread
    // wakes on a loaded machine.
    for (int n = replay_.exchange(0); n > 0 && !last.empty(); --n) {
      send_up(last);
    }
    timespec timeout{1, 0};
    if (!held.empty()) {
      std::int64_t left = std::max<std::int64_t>(0, held.front().due - now);
      timeout = {static_cast<time_t>(left / 1'000'000'000),
                 static_cast<long>(left % 1'000'000'000)};
    }
    pollfd fds[3] = {{front_fd_, POLLIN, 0},
                     {upstream_fd_, POLLIN, 0},
                     {wake_fd_, POLLIN, 0}};
    if (::ppoll(fds, 3, &timeout, nullptr) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      while (true) {
        sockaddr_in from{};
        std::int64_t arrived = 0;
        ssize_t n = Receive(front_fd_, buf, sizeof(buf), &from, &arrived);
        if (n < 0) break;
        client = from;
        have_client = true;
        int every = drop_every_;
        if (every > 0 && ++counter_ % static_cast<std::uint64_t>(every) == 0) {
          ++dropped_;
          continue;
        }
        std::vector<char> bytes(buf, buf + n);
        std::int64_t d = delay_us_;
        if (d <= 0 && held.empty()) {
          record_up(bytes, NowNs() - arrived);
          send_up(bytes);
          last = std::move(bytes);
        } else {
          held.push_back({arrived, arrived + d * 1000, std::move(bytes)});
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        std::int64_t arrived = 0;
        ssize_t n = Receive(upstream_fd_, buf, sizeof(buf), nullptr, &arrived);
        if (n < 0) break;
        if (have_client) {
          record_back(buf, static_cast<std::size_t>(n), NowNs() - arrived);
          ::sendto(front_fd_, buf, static_cast<std::size_t>(n), 0,
                   reinterpret_cast<sockaddr*>(&client), sizeof(client));
        }
      }
    }
  }
}

}  // namespace fabric::testing
