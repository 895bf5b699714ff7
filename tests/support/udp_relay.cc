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

namespace fabric::testing {
namespace {

sockaddr_in Addr(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

std::int64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

constexpr std::size_t kHeldRing = 4096;
// Closer than this to a release, the relay polls without sleeping: a
// sleeping thread's wake-up on a busy machine is late by tens of µs.
constexpr std::int64_t kSpinNs = 200'000;

}  // namespace

std::chrono::nanoseconds UdpRelay::MedianHeld(std::size_t n) {
  std::lock_guard lock(held_mu_);
  std::vector<std::int64_t> v;
  std::size_t have = std::min({n, held_ns_.size()});
  for (std::size_t i = 0; i < have; ++i) {
    v.push_back(held_ns_[(held_next_ + kHeldRing - 1 - i) % kHeldRing]);
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
      sockaddr_in front = Addr(front_ip_, front_port_);
      if (::bind(front_fd_, reinterpret_cast<sockaddr*>(&front),
                 sizeof(front)) != 0) {
        why = "bind " + front_ip_ + ":" + std::to_string(front_port_) + ": " +
              std::strerror(errno);
      }
    }
    {
      std::lock_guard lock(mu);
      start_error_ = why;
      ready = true;
    }
    cv.notify_all();
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
  auto record = [&](std::int64_t arrived) {
    std::int64_t held = NowNs() - arrived;
    std::lock_guard lock(held_mu_);
    if (held_ns_.size() < kHeldRing) {
      held_ns_.push_back(held);
    } else {
      held_ns_[held_next_] = held;
    }
    held_next_ = (held_next_ + 1) % kHeldRing;
  };
  while (!stop_) {
    std::int64_t now = NowNs();
    while (!held.empty() && held.front().due <= now) {
      send_up(held.front().bytes);
      record(held.front().arrived);
      last = std::move(held.front().bytes);
      held.pop_front();
    }
    if (replay_.exchange(false) && !last.empty()) send_up(last);
    timespec timeout{1, 0};
    if (!held.empty()) {
      std::int64_t left = std::max<std::int64_t>(0, held.front().due - now);
      if (left < kSpinNs) left = 0;
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
        socklen_t len = sizeof(from);
        ssize_t n = ::recvfrom(front_fd_, buf, sizeof(buf), 0,
                               reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) break;
        client = from;
        have_client = true;
        int every = drop_every_;
        if (every > 0 && ++counter_ % static_cast<std::uint64_t>(every) == 0) {
          ++dropped_;
          continue;
        }
        std::vector<char> bytes(buf, buf + n);
        std::int64_t d = delay_us_, arrived = NowNs();
        if (d <= 0 && held.empty()) {
          send_up(bytes);
          record(arrived);
          last = std::move(bytes);
        } else {
          held.push_back({arrived, arrived + d * 1000, std::move(bytes)});
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        ssize_t n = ::recv(upstream_fd_, buf, sizeof(buf), 0);
        if (n < 0) break;
        if (have_client) {
          ::sendto(front_fd_, buf, static_cast<std::size_t>(n), 0,
                   reinterpret_cast<sockaddr*>(&client), sizeof(client));
        }
      }
    }
  }
}

}  // namespace fabric::testing
