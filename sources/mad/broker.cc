#include "sources/mad/broker.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/thread_annotations.h"
#include "sources/mad/broker_routes.h"

namespace fabric::mad::broker {
namespace {

using Clock = std::chrono::steady_clock;

// The kernel reports a umad send's timeout itself; this is the broker's own
// bound on a slot it never heard back about.
constexpr auto kGrace = std::chrono::seconds(2);
// How long the answer thread waits for answers before it checks for expired
// slots and for the end of the session.
constexpr auto kAnswerWait = std::chrono::milliseconds(100);
// With nothing in flight: shorter waits, kIdleWaits of them, then a sleep
// until the next MAD (Session::Answers says why).
constexpr auto kIdleWait = std::chrono::milliseconds(10);
constexpr int kIdleWaits = 10;
// How long the request thread waits for a message before it checks
// whether the answer thread found the client gone.
constexpr timeval kReceiveWait{1, 0};

// Two threads: this one reads requests from the client and posts them;
// the answer thread (from OPEN on) waits for umad answers and timeouts and
// sends them back. (One poll() on both descriptors would do, but ibsim's
// umad2sim cannot wait on a umad fd and a socket at once.)
class Session {
 public:
  Session(int fd, const Deps& deps, const Limits& limits)
      : fd_(fd), deps_(deps), limits_(limits) {}

  ~Session() EXCLUDES(mutex_) {
    {
      MutexLock hold(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (answers_.joinable()) answers_.join();
  }

  int Run() {
    std::vector<std::uint8_t> buf(kMaxMessage + 1);
    while (!broken_) {
      // One blocking recv per message (a client sends a batch, then waits
      // for answers, so this thread mostly waits): it gives up after
      // kReceiveWait (SO_RCVTIMEO, set by Serve), when the answer thread
      // may have found the client gone. A non-blocking socket says EAGAIN
      // at once: then poll() waits instead.
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_TRUNC);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 1000) < 0 && errno != EINTR) return 1;
        continue;
      }
      if (n == 0) {
        // SOCK_SEQPACKET says 0 both for a hang-up and for an empty
        // datagram: only the hang-up leaves the socket at end of file.
        pollfd p{fd_, POLLRDHUP, 0};
        if (::poll(&p, 1, 0) != 0 && (p.revents & (POLLRDHUP | POLLHUP))) {
          return 0;  // the client hung up
        }
        MutexLock hold(mutex_);
        CountRefusal(Refusal::kMalformed, 0, "empty message");
        continue;  // no tid to answer: nothing is waiting for a reply
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        return 1;
      }
      const std::size_t size = static_cast<std::size_t>(n);
      const auto decoded =
          DecodeRequests({buf.data(), std::min(size, buf.size())});
      if (size > kMaxMessage) {
        // Reply as a MAD refusal: the client may be waiting for that tid.
        MutexLock hold(mutex_);
        Refuse(Kind::kMad, decoded.front().tid, Refusal::kMalformed,
               "oversized message");
      } else {
        for (const DecodedRequest& d : decoded) Handle(d);
      }
      Flush();
    }
    return 1;
  }

  RefusalCounts refused() EXCLUDES(mutex_) {
    MutexLock hold(mutex_);
    return refused_;
  }

 private:
  struct Slot {
    std::string key;
    Clock::time_point expires;
    std::optional<DrPath> learn;  // a DR NodeInfo's route
  };

  // The answer thread.
  void Answers() EXCLUDES(mutex_) {
    std::vector<MadTransport::Answer> answers;
    int idle = 0;  // umad waits in a row with nothing in flight or answered
    while (true) {
      auto wait = kAnswerWait;
      {
        // Idle for a while (nothing in flight, nothing answered; a late
        // answer waits in the kernel's queue until the next MAD): sleep
        // until a MAD is posted or the session ends, so an idle broker
        // does not wake ten times a second. Until then short umad waits,
        // so that a client that hung up is seen within kIdleWait (the
        // daemon reaps its brokers when it exits: --once waits for this);
        // not the condition variable at once, which would add a wake-up
        // to every MAD of a discovery (one in flight at a time).
        MutexLock hold(mutex_);
        if (in_flight_.empty() && idle >= kIdleWaits) {
          wake_.wait(hold.native(), [&]() REQUIRES(mutex_) {
            return !in_flight_.empty() || stop_ || broken_;
          });
          idle = 0;
        }
        if (stop_ || broken_) return;
        if (in_flight_.empty()) wait = kIdleWait;
      }
      answers.clear();
      wire_->Poll(wait, &answers);
      {
        MutexLock hold(mutex_);
        idle = answers.empty() && in_flight_.empty() ? idle + 1 : 0;
        for (const auto& a : answers) Answer(a);
        Expire();
      }
      Flush();
    }
  }

  void Handle(const DecodedRequest& d) {
    const std::optional<Request>& r = d.request;
    if (!r) {
      // Reply as a MAD refusal: the client may be waiting for `tid`.
      MutexLock hold(mutex_);
      Refuse(Kind::kMad, d.tid, Refusal::kMalformed, "malformed request");
      return;
    }
    switch (r->kind) {
      case Kind::kPorts:
        return Ports(r->tid);
      case Kind::kStats:
        return Stats(r->tid);
      case Kind::kOpen:
        return Open(*r);
      case Kind::kMad:
        return Mad(r->mad);
    }
  }

  void Ports(std::uint32_t tid) EXCLUDES(mutex_) {
    Reply reply = MakeReply(Kind::kPorts, tid);
    std::string error;
    reply.ports = deps_.list_ports(&error);
    if (!error.empty()) {
      reply.status = Status::kFailed;
      spdlog::warn("listing local ports: {}", error);
    }
    MutexLock hold(mutex_);
    Queue(std::move(reply));
  }

  void Stats(std::uint32_t tid) EXCLUDES(mutex_) {
    Reply reply = MakeReply(Kind::kStats, tid);
    MutexLock hold(mutex_);
    reply.refused.assign(refused_.begin(), refused_.end());
    Queue(std::move(reply));
  }

  void Open(const Request& r) EXCLUDES(mutex_) {
    if (wire_) {
      MutexLock hold(mutex_);
      return Refuse(Kind::kOpen, r.tid, Refusal::kState, "already open");
    }
    Reply reply = MakeReply(Kind::kOpen, r.tid);
    std::string error;
    LocalPort local;
    if (!PickLocalPort(deps_.list_ports(&error), r.ca, r.port, &local)) {
      reply.error = "no IB port " + (r.ca.empty() ? "(any)" : r.ca) + " " +
                    std::to_string(r.port) +
                    (error.empty() ? "" : ": " + error);
    } else if (!(wire_ = deps_.open(local.ca, local.port, &reply.error))) {
      if (reply.error.empty()) reply.error = "cannot open " + local.ca;
    } else {
      spdlog::info("serving {} port {}", local.ca, local.port);
      answers_ = std::thread([this] { Answers(); });
    }
    if (!wire_) {
      reply.status = Status::kFailed;
      spdlog::warn("OPEN {} {}: {}", r.ca, r.port, reply.error);
    }
    MutexLock hold(mutex_);
    Queue(std::move(reply));
  }

  void Mad(const MadCall& call) EXCLUDES(mutex_) {
    MutexLock hold(mutex_);
    Refusal refusal = Check(call);
    std::string key;
    if (refusal == Refusal::kNone && !wire_) refusal = Refusal::kState;
    if (refusal == Refusal::kNone && call.mgmt_class == kMadClassSmiDirected &&
        static_cast<int>(call.path.size()) > limits_.max_hops) {
      refusal = Refusal::kDestination;  // deeper than any real fabric
    }
    if (refusal == Refusal::kNone) {
      key = "L" + std::to_string(call.dlid);
      if (call.mgmt_class == kMadClassSmiDirected) {
        const RouteBook::Resolved r = routes_.Resolve(call.path);
        if (r.loop) refusal = Refusal::kDestination;  // passes a node twice
        key = r.key;
      }
    }
    if (refusal == Refusal::kNone) {
      auto dest = per_dest_.find(key);
      if (in_flight_.count(call.tid) ||
          static_cast<int>(in_flight_.size()) >= limits_.max_in_flight ||
          (dest != per_dest_.end() &&
           dest->second >= limits_.max_per_destination)) {
        refusal = Refusal::kInFlight;
      }
    }
    if (refusal != Refusal::kNone) {
      return Refuse(Kind::kMad, call.tid, refusal, "refused");
    }
    const std::uint16_t dlid =
        call.mgmt_class == kMadClassSmiDirected ? kPermissiveLid : call.dlid;
    const auto timeout = std::chrono::milliseconds(call.timeout_ms);
    if (!wire_->Post(dlid, BuildMad(call), timeout)) {
      Queue(
          MakeReply(Kind::kMad, call.tid, Status::kFailed, "umad send failed"));
      return;
    }
    ++per_dest_[key];
    Slot& slot = in_flight_[call.tid];
    slot = {key, Clock::now() + timeout + kGrace, std::nullopt};
    if (call.mgmt_class == kMadClassSmiDirected &&
        call.attribute == kAttrNodeInfo) {
      slot.learn = call.path;  // its answer teaches a cable
    }
    if (in_flight_.size() == 1) wake_.notify_one();
    spdlog::debug("sent tid {:#x} class {:#x} attribute {:#x} to {}", call.tid,
                  call.mgmt_class, call.attribute, key);
  }

  void Answer(const MadTransport::Answer& a) REQUIRES(mutex_) {
    auto it = in_flight_.find(a.tid);
    spdlog::debug("answer tid {:#x}{}{}", a.tid,
                  a.timed_out ? " (timed out)" : "",
                  it == in_flight_.end() ? " (not in flight)" : "");
    if (it == in_flight_.end()) return;  // not ours, or already expired
    if (!a.timed_out && it->second.learn) {
      routes_.Learn(*it->second.learn, a.mad);
    }
    Release(it);
    Reply reply = MakeReply(Kind::kMad, a.tid);
    reply.mad = a.mad;
    if (a.timed_out) {
      reply.status = Status::kTimedOut;
      reply.error = "timed out";
    }
    Queue(std::move(reply));
  }

  void Expire() REQUIRES(mutex_) {
    const auto now = Clock::now();
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (it->second.expires > now) {
        ++it;
        continue;
      }
      const std::uint32_t tid = it->first;
      it = Release(it);
      Queue(MakeReply(Kind::kMad, tid, Status::kTimedOut, "timed out"));
    }
  }

  std::unordered_map<std::uint32_t, Slot>::iterator Release(
      std::unordered_map<std::uint32_t, Slot>::iterator it) REQUIRES(mutex_) {
    auto dest = per_dest_.find(it->second.key);
    if (dest != per_dest_.end() && --dest->second <= 0) per_dest_.erase(dest);
    return in_flight_.erase(it);
  }

  void CountRefusal(Refusal why, std::uint32_t tid, const char* what)
      REQUIRES(mutex_) {
    std::uint64_t& n = refused_[static_cast<std::size_t>(why)];
    ++n;
    // Every refusal is a bug or an attack: log it, but a flood only at
    // 1, 2, 4, 8, ... of each reason.
    if ((n & (n - 1)) == 0) {
      spdlog::warn("refused {} request (tid {:#x}): {} ({} so far)",
                   RefusalName(why), tid, what, n);
    }
  }

  void Refuse(Kind kind, std::uint32_t tid, Refusal why, const char* what)
      REQUIRES(mutex_) {
    CountRefusal(why, tid, what);
    Reply reply =
        MakeReply(kind, tid, Status::kRefused, std::string(RefusalName(why)));
    reply.refusal = why;
    Queue(std::move(reply));
  }

  // Replies are queued under the lock and sent after it is released: a
  // send may wait for the client to read, and the client may be waiting
  // for this thread's twin to read its requests. Whatever is queued goes
  // in as few messages as fit (one datagram per batch of answers, not
  // one per MAD).
  void Queue(Reply reply) REQUIRES(mutex_) {
    outbox_.push_back(std::move(reply));
  }
  void Flush() EXCLUDES(mutex_) {
    std::vector<Reply> out;
    {
      MutexLock hold(mutex_);
      out.swap(outbox_);
    }
    std::vector<std::uint8_t> message, one;
    for (const Reply& r : out) {
      one.clear();
      AppendReply(r, &one);
      if (!message.empty() && message.size() + one.size() > kMaxMessage) {
        Send(message);
        message.clear();
      }
      message.insert(message.end(), one.begin(), one.end());
    }
    if (!message.empty()) Send(message);
  }

  void Send(const std::vector<std::uint8_t>& bytes) {
    if (::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0 &&
        errno != EINTR) {
      broken_ = true;
    }
  }

  const int fd_;
  const Deps& deps_;
  const Limits limits_;
  // Set once by OPEN, before the answer thread starts; Post (this thread)
  // and Poll (the answer thread) may overlap (umad_transport.h).
  std::unique_ptr<MadTransport> wire_;
  std::thread answers_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> broken_{false};  // a send to the client failed
  std::condition_variable wake_;     // the answer thread's, on mutex_
  Mutex mutex_;
  std::unordered_map<std::uint32_t, Slot> in_flight_ GUARDED_BY(mutex_);
  std::map<std::string, int> per_dest_ GUARDED_BY(mutex_);
  RouteBook routes_ GUARDED_BY(mutex_);
  RefusalCounts refused_ GUARDED_BY(mutex_){};
  std::vector<Reply> outbox_ GUARDED_BY(mutex_);
};

}  // namespace

int Serve(int fd, const Deps& deps, const Limits& limits,
          RefusalCounts* refused) {
  // A client that stops reading must not wedge the broker: a send that
  // waits this long fails, and the session ends.
  const timeval send_timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout,
               sizeof(send_timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kReceiveWait,
               sizeof(kReceiveWait));
  Session session(fd, deps, limits);
  const int rc = session.Run();
  if (refused) *refused = session.refused();
  return rc;
}

}  // namespace fabric::mad::broker
