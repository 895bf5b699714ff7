#include "sources/mad/mad_transport.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <unordered_map>

#include "core/thread_annotations.h"

namespace fabric {
namespace {

using Clock = std::chrono::steady_clock;

// Offsets in the MAD header and the directed-route SMP (IBA 13.4.3, 14.2.1).
constexpr std::size_t kMethodOffset = 3;
constexpr std::size_t kTidOffset = 8;
constexpr std::size_t kAttrIdOffset = 16;
constexpr std::size_t kHopCountOffset = 7;
constexpr std::size_t kInitialPathOffset = 128;

// In-flight limits apply per LID, or per directed route (its initial path).
std::string DestinationKey(const MadRequest& r) {
  if (r.mad[1] != kMadClassSmiDirected) {
    return "L" + std::to_string(r.dlid);
  }
  const std::size_t hops = std::min<std::size_t>(r.mad[kHopCountOffset], 63);
  return "D" + std::string(reinterpret_cast<const char*>(
                               r.mad.data() + kInitialPathOffset + 1),
                           hops);
}

void SetTid(Mad& mad, std::uint64_t tid) {
  for (int i = 0; i < 8; ++i) {
    mad[kTidOffset + i] = static_cast<std::uint8_t>(tid >> (56 - 8 * i));
  }
}

struct InFlight {
  MadRequest request;
  std::string key;
  int attempts = 0;
  Clock::time_point expires;
};

}  // namespace

MadStats MadTransport::Run(std::deque<MadRequest>& pending,
                           const MadOptions& options, const Completion& done) {
  MadStats stats;
  const int max_out = std::max(1, options.max_outstanding);
  const int max_dest = std::max(1, options.max_per_destination);
  const auto timeout = std::max(options.timeout, std::chrono::milliseconds(1));
  std::unordered_map<std::uint32_t, InFlight> in_flight;
  std::unordered_map<std::string, int> per_dest;
  std::unordered_map<std::string, std::deque<MadRequest>> waiting;
  std::deque<MadRequest> ready;  // waited for a destination slot, now free
  std::deque<std::pair<Clock::time_point, std::uint32_t>> expiries;
  // Process-wide: shared transports are used from several threads.
  static std::atomic<std::uint32_t> next_tid{0x10000};

  auto finish = [&](const MadRequest& request, MadResult result) {
    if (result.ok()) {
      ++stats.ok;
    } else if (result.error() == std::errc::timed_out) {
      ++stats.timeouts;
    } else {
      ++stats.errors;
    }
    done(request, result);
  };
  auto fail = [&](const MadRequest& request, std::errc e) {
    finish(request, e);
  };
  auto release = [&](const std::string& key) {
    auto it = waiting.find(key);
    if (it != waiting.end() && !it->second.empty()) {
      ready.push_back(std::move(it->second.front()));
      it->second.pop_front();
      if (it->second.empty()) waiting.erase(it);
    } else if (--per_dest[key] <= 0) {
      per_dest.erase(key);
    }
  };
  // Sends `f` (a fresh try); false when the transport refused it.
  auto post = [&](InFlight f) {
    const std::uint32_t tid = next_tid++;
    SetTid(f.request.mad, tid);
    const std::uint16_t dlid = f.request.mad[1] == kMadClassSmiDirected
                                   ? kPermissiveLid
                                   : f.request.dlid;
    ++f.attempts;
    if (!Post(dlid, f.request.mad, timeout)) {
      release(f.key);
      fail(f.request, std::errc::io_error);
      return;
    }
    f.expires = Clock::now() + timeout;
    expiries.emplace_back(f.expires, tid);
    in_flight.emplace(tid, std::move(f));
  };
  // Starts `r` now if its destination has room, else parks it.
  auto start = [&](MadRequest r, bool slot_held) {
    const std::uint8_t mclass = r.mad[1];
    if (r.mad[kMethodOffset] != kMadMethodGet) {
      if (slot_held) release(DestinationKey(r));
      fail(r, std::errc::operation_not_permitted);
      return;
    }
    if (mclass != kMadClassSmiLid && mclass != kMadClassSmiDirected &&
        mclass != kMadClassPerf) {
      if (slot_held) release(DestinationKey(r));
      fail(r, std::errc::invalid_argument);
      return;
    }
    std::string key = DestinationKey(r);
    if (!slot_held) {
      int& n = per_dest[key];
      if (n >= max_dest) {
        waiting[key].push_back(std::move(r));
        return;
      }
      ++n;
    }
    post(InFlight{std::move(r), std::move(key), 0, {}});
  };

  std::vector<Answer> answers;
  while (true) {
    if (Clock::now() >= options.deadline) break;
    while (static_cast<int>(in_flight.size()) < max_out &&
           (!ready.empty() || !pending.empty())) {
      if (!ready.empty()) {
        MadRequest r = std::move(ready.front());
        ready.pop_front();
        start(std::move(r), true);
      } else {
        MadRequest r = std::move(pending.front());
        pending.pop_front();
        start(std::move(r), false);
      }
    }
    if (in_flight.empty()) {
      if (ready.empty() && pending.empty()) break;
      continue;
    }
    // Wait for answers until the earliest expiry (or the run's deadline).
    while (!expiries.empty() && !in_flight.count(expiries.front().second)) {
      expiries.pop_front();
    }
    auto until = expiries.empty() ? Clock::now() : expiries.front().first;
    until = std::min(until, options.deadline);
    const auto wait =
        std::max(std::chrono::duration_cast<std::chrono::microseconds>(
                     until - Clock::now()),
                 std::chrono::microseconds(0));
    answers.clear();
    Poll(wait, &answers);
    for (Answer& a : answers) {
      auto it = in_flight.find(a.tid);
      if (it == in_flight.end()) continue;  // late answer to an old try
      if (a.error != std::errc{}) {
        InFlight f = std::move(it->second);
        in_flight.erase(it);
        release(f.key);
        fail(f.request, a.error);
        continue;
      }
      if (!a.timed_out &&
          (a.mad[kMethodOffset] != kMadMethodGetResp ||
           a.mad[kAttrIdOffset] != it->second.request.mad[kAttrIdOffset] ||
           a.mad[kAttrIdOffset + 1] !=
               it->second.request.mad[kAttrIdOffset + 1])) {
        continue;  // not the answer to this request
      }
      if (a.timed_out) {
        it->second.expires = Clock::now();  // retried below
        expiries.emplace_front(it->second.expires, a.tid);
        continue;
      }
      InFlight f = std::move(it->second);
      in_flight.erase(it);
      release(f.key);
      finish(f.request, a.mad);
    }
    // Expired tries: retry with a new transaction id, or give up.
    const auto now = Clock::now();
    while (!expiries.empty() && expiries.front().first <= now) {
      const std::uint32_t tid = expiries.front().second;
      expiries.pop_front();
      auto it = in_flight.find(tid);
      if (it == in_flight.end() || it->second.expires > now) continue;
      InFlight f = std::move(it->second);
      in_flight.erase(it);
      if (f.attempts <= options.retries && now < options.deadline) {
        ++stats.retries;
        post(std::move(f));
      } else {
        release(f.key);
        fail(f.request, std::errc::timed_out);
      }
    }
  }
  // Deadline: everything left is canceled.
  for (auto& [tid, f] : in_flight) {
    fail(f.request, std::errc::operation_canceled);
  }
  for (auto& r : ready) fail(r, std::errc::operation_canceled);
  for (auto& [key, q] : waiting) {
    for (auto& r : q) fail(r, std::errc::operation_canceled);
  }
  while (!pending.empty()) {
    MadRequest r = std::move(pending.front());
    pending.pop_front();
    fail(r, std::errc::operation_canceled);
  }
  return stats;
}

MadResult MadTransport::Send(const MadRequest& request,
                             const MadOptions& options) {
  std::deque<MadRequest> pending{request};
  // Run() calls `done` exactly once; the default is never returned.
  MadResult out = std::errc::operation_canceled;
  Run(pending, options,
      [&](const MadRequest&, const MadResult& r) { out = r; });
  return out;
}

namespace {

class SharedMadTransport : public MadTransport {
 public:
  SharedMadTransport(std::shared_ptr<MadTransport> target,
                     std::shared_ptr<Mutex> lock)
      : target_(std::move(target)), lock_(std::move(lock)) {}
  MadStats Run(std::deque<MadRequest>& pending, const MadOptions& options,
               const Completion& done) override {
    MutexLock hold(*lock_);
    return target_->Run(pending, options, done);
  }

 protected:
  // Never reached: Run() goes to the target.
  bool Post(std::uint16_t, const Mad&, std::chrono::milliseconds) override {
    return false;
  }
  void Poll(std::chrono::microseconds, std::vector<Answer>*) override {}

 private:
  // Shared with the other users of the target: used under *lock_ only.
  // (GUARDED_BY, not PT_GUARDED_BY: clang 14 takes the latter on raw and
  // unique pointers only.)
  std::shared_ptr<MadTransport> target_ GUARDED_BY(*lock_);
  std::shared_ptr<Mutex> lock_;
};

}  // namespace

std::unique_ptr<MadTransport> ShareMadTransport(
    std::shared_ptr<MadTransport> target, std::shared_ptr<Mutex> lock) {
  return std::make_unique<SharedMadTransport>(std::move(target),
                                              std::move(lock));
}

}  // namespace fabric
