#include "benchtool/coordinator.h"

#include <openssl/rand.h>
#include <poll.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "auth/hmac.h"
#include "benchtool/control_client.h"
#include "benchtool/wire.h"

namespace fabric::bench {
namespace {

using Clock = ControlClient::Clock;

struct Failure {
  int rank = -1;
  std::string text;
  bool connection_lost = false;
};

class Run {
 public:
  explicit Run(const RunOptions& o) : o_(o), hmac_(o.key) {}

  RunOutcome Go() {
    RunOutcome out;
    int n = static_cast<int>(o_.hosts.size());
    if (auto why = CheckShape(o_.pattern, n, o_.tp)) return Fail(*why);
    if (o_.sizes.empty()) return Fail("no sizes to run");
    for (std::uint64_t size : o_.sizes) {
      if (auto why = CheckPlans(o_.pattern, n, o_.tp, size)) return Fail(*why);
    }
    auto deadline = Clock::now() + std::chrono::seconds(10);
    for (int r = 0; r < n; ++r) {
      clients_.push_back(std::make_unique<ControlClient>(hmac_, o_.hosts[r]));
      std::string err;
      if (!clients_.back()->Open(deadline, &err)) {
        clients_.pop_back();
        StopAll();
        return Fail(r, "cannot reach agent: " + err);
      }
    }
    PrepareMsg p;
    Bytes token(16);
    RAND_bytes(token.data(), 16);
    RAND_bytes(reinterpret_cast<std::uint8_t*>(&p.session_id), 8);
    p.token = token;
    p.peers = o_.hosts;
    p.transport = o_.transport;
    p.pattern = std::string(PatternName(o_.pattern));
    p.tp = static_cast<std::uint32_t>(o_.tp);
    p.max_size_bytes = *std::max_element(o_.sizes.begin(), o_.sizes.end());
    p.io_timeout_ms = static_cast<std::uint32_t>(o_.io_timeout.count());
    std::vector<Bytes> replies;
    auto phase = Clock::now() + o_.io_timeout + std::chrono::seconds(10);
    for (int r = 0; r < n; ++r) {
      p.rank = r;
      if (!SendTo(r, MsgType::kPrepare, EncodePrepare(p))) return Stopped();
    }
    if (!Gather(MsgType::kPrepared, phase, &replies)) return Stopped();
    ConnectMsg c;
    for (auto& b : replies) {
      auto m = DecodePrepared(b);
      if (!m) return Stopped(Failure{-1, "an agent sent a bad endpoint"});
      c.endpoints.push_back(m->endpoint);
      out_.rails.push_back(std::move(m->rails));
    }
    // Before any traffic: a mixed host set is refused unless allowed.
    out_.fabric = CheckHostSet(o_.hosts, out_.rails);
    if (out_.fabric.mixed && !o_.allow_mixed) {
      return Stopped(Failure{-1, "refused: " + out_.fabric.message +
                                     " (--allow-mixed runs it anyway)"});
    }
    Bytes connect = EncodeConnect(c);
    for (int r = 0; r < n; ++r) {
      if (!SendTo(r, MsgType::kConnect, connect)) return Stopped();
    }
    phase = Clock::now() + o_.io_timeout + std::chrono::seconds(10);
    if (!Gather(MsgType::kOk, phase, &replies)) return Stopped();

    const auto run_start = Clock::now();
    auto seconds_since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    std::vector<SizeTime> done;
    for (std::size_t k = 0; k < o_.sizes.size(); ++k) {
      const std::uint64_t size = o_.sizes[k];
      SizeProgress progress;
      progress.index = k;
      progress.count = o_.sizes.size();
      progress.size_bytes = size;
      progress.elapsed_seconds = seconds_since(run_start);
      if (o_.progress) o_.progress(progress);
      const auto size_start = Clock::now();
      RunMsg run{size, static_cast<std::uint32_t>(o_.warmup),
                 static_cast<std::uint32_t>(o_.iterations)};
      Bytes b = EncodeRun(run);
      for (int r = 0; r < n; ++r) {
        if (!SendTo(r, MsgType::kRun, b)) return Stopped();
      }
      if (!Gather(MsgType::kRunResult, Clock::now() + o_.size_timeout,
                  &replies)) {
        return Stopped();
      }
      SizeMeasurement m;
      m.size_bytes = size;
      m.seconds.assign(o_.iterations, 0.0);
      m.counters.resize(o_.iterations);
      for (int r = 0; r < n; ++r) {
        auto res = DecodeRunResult(replies[r]);
        if (!res ||
            res->iterations.size() != static_cast<std::size_t>(o_.iterations)) {
          return Stopped(Failure{r, "sent a malformed result"});
        }
        for (int i = 0; i < o_.iterations; ++i) {
          const auto& it = res->iterations[i];
          m.seconds[i] = std::max(m.seconds[i], it.nanoseconds * 1e-9);
          for (const auto& [name, v] : it.counters) m.counters[i][name] += v;
        }
      }
      out_.sizes.push_back(std::move(m));
      progress.done = true;
      progress.iterations_done = o_.iterations;
      progress.size_seconds = seconds_since(size_start);
      progress.elapsed_seconds = seconds_since(run_start);
      done.push_back({size, progress.size_seconds});
      progress.remaining_seconds =
          EstimateRemaining(done, {o_.sizes.begin() + k + 1, o_.sizes.end()});
      if (o_.progress) o_.progress(progress);
    }
    StopAll();
    out_.ok = true;
    return std::move(out_);
  }

 private:
  RunOutcome Fail(const std::string& text) {
    out_.error = text;
    return std::move(out_);
  }
  RunOutcome Fail(int r, const std::string& text) {
    out_.failed_host = o_.hosts[r];
    out_.error =
        "host " + o_.hosts[r] + " (rank " + std::to_string(r) + "): " + text;
    return std::move(out_);
  }

  bool SendTo(int r, MsgType type, const Bytes& payload) {
    std::string err;
    if (clients_[r]->Send(type, payload, &err)) return true;
    failures_.push_back({r, err, true});
    return false;
  }

  // Waits for every agent's answer of `want`. Any error ends the wait.
  bool Gather(MsgType want, Clock::time_point deadline,
              std::vector<Bytes>* replies) {
    int n = static_cast<int>(clients_.size());
    replies->assign(n, {});
    std::vector<bool> have(n, false);
    int left = n;
    while (left > 0) {
      std::vector<pollfd> fds;
      std::vector<int> ranks;
      for (int r = 0; r < n; ++r) {
        if (have[r]) continue;
        fds.push_back({clients_[r]->fd(), POLLIN, 0});
        ranks.push_back(r);
      }
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - Clock::now())
                    .count();
      if (ms <= 0) {
        failures_.push_back({ranks.front(), "no answer in time", true});
        return false;
      }
      fds.push_back({o_.interrupt_fd, POLLIN, 0});  // ignored when -1
      poll(fds.data(), fds.size(), static_cast<int>(ms) + 1);
      if (fds.back().revents) {
        interrupted_ = true;
        failures_.push_back({-1, "interrupted"});
        return false;
      }
      fds.pop_back();
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        int r = ranks[i];
        bool complete = false;
        std::string err;
        if (!clients_[r]->Pump(&complete, &err)) {
          failures_.push_back({r, err, true});
          return false;
        }
        if (!complete) continue;
        MsgType type;
        Bytes payload;
        clients_[r]->Take(&type, &payload);
        if (type == MsgType::kError) {
          auto e = DecodeError(payload);
          failures_.push_back({r, e ? e->text : "sent a malformed error"});
          if (e && e->peer_rank >= 0) blamed_.push_back(e->peer_rank);
          return false;
        }
        if (type != want) {
          failures_.push_back({r, "answered " + std::string(MsgTypeName(type)) +
                                      " instead of " +
                                      std::string(MsgTypeName(want))});
          return false;
        }
        (*replies)[r] = std::move(payload);
        have[r] = true;
        --left;
      }
    }
    return true;
  }

  void StopAll() {
    for (auto& c : clients_) {
      std::string ignored;
      if (c->fd() >= 0) c->Send(MsgType::kStop, {}, &ignored);
    }
  }

  // Ends the run after a failure: tells every agent to stop, then gives the
  // others a moment to report, so that when a host died the error names it
  // (its control connection closes) rather than a neighbour that merely saw
  // its bulk link break.
  RunOutcome Stopped(std::optional<Failure> extra = std::nullopt) {
    if (extra) failures_.push_back(*extra);
    StopAll();
    if (interrupted_) {
      out_.interrupted = true;
      return Fail("interrupted");
    }
    auto grace = Clock::now() + std::chrono::seconds(2);
    int n = static_cast<int>(clients_.size());
    std::vector<bool> done(n, false);
    for (const auto& f : failures_) {
      if (f.rank >= 0 && f.connection_lost) done[f.rank] = true;
    }
    while (Clock::now() < grace) {
      std::vector<pollfd> fds;
      std::vector<int> ranks;
      for (int r = 0; r < n; ++r) {
        if (done[r]) continue;
        fds.push_back({clients_[r]->fd(), POLLIN, 0});
        ranks.push_back(r);
      }
      if (fds.empty()) break;
      poll(fds.data(), fds.size(), 100);
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        int r = ranks[i];
        bool complete = false;
        std::string err;
        if (!clients_[r]->Pump(&complete, &err)) {
          failures_.push_back({r, err, true});
          done[r] = true;
          continue;
        }
        if (complete) {
          MsgType t;
          Bytes ignored;
          clients_[r]->Take(&t, &ignored);
        }
      }
    }
    // A lost connection names the host that died; else the host most
    // blamed by its peers' bulk errors; else the first failure.
    const Failure* pick = &failures_.front();
    for (const auto& f : failures_) {
      if (f.connection_lost) {
        pick = &f;
        break;
      }
    }
    std::string detail;
    for (const auto& f : failures_) {
      if (&f == pick || f.rank < 0) continue;
      detail += "; " + o_.hosts[f.rank] + " reported: " + f.text;
    }
    if (!pick->connection_lost && !blamed_.empty()) {
      int r = blamed_.front();
      if (r >= 0 && r < n) {
        return Fail(r, "failed during the run (its peers: " + pick->text + ")" +
                           detail);
      }
    }
    if (pick->rank < 0) return Fail(pick->text + detail);
    return Fail(pick->rank, pick->text + detail);
  }

  const RunOptions& o_;
  Hmac hmac_;
  std::vector<std::unique_ptr<ControlClient>> clients_;
  std::vector<Failure> failures_;
  std::vector<int> blamed_;
  bool interrupted_ = false;
  RunOutcome out_;
};

bool ParseOneSize(std::string s, std::uint64_t* out) {
  if (s.empty()) return false;
  std::uint64_t mult = 1;
  char last = s.back();
  if (last == 'K' || last == 'k') mult = 1ull << 10;
  if (last == 'M' || last == 'm') mult = 1ull << 20;
  if (last == 'G' || last == 'g') mult = 1ull << 30;
  if (mult != 1) s.pop_back();
  if (s.empty() || s.size() > 12) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v * mult;
  return true;
}

}  // namespace

RunOutcome RunBenchmark(const RunOptions& options) { return Run(options).Go(); }

std::vector<std::uint64_t> ParseSizes(const std::string& text,
                                      std::string* error) {
  std::vector<std::uint64_t> sizes;
  auto bad = [&](const std::string& why) {
    *error = "--sizes '" + text + "': " + why;
    return std::vector<std::uint64_t>{};
  };
  auto c1 = text.find(':');
  if (c1 == std::string::npos) {
    std::size_t start = 0;
    while (start <= text.size()) {
      auto comma = text.find(',', start);
      std::string part =
          text.substr(start, comma == std::string::npos ? std::string::npos
                                                        : comma - start);
      std::uint64_t v;
      if (!ParseOneSize(part, &v)) return bad("'" + part + "' is not a size");
      sizes.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return sizes;
  }
  auto c2 = text.find(':', c1 + 1);
  if (c2 == std::string::npos) return bad("expected FROM:TO:xF or FROM:TO:+S");
  std::uint64_t from, to, step;
  std::string s = text.substr(c2 + 1);
  if (!ParseOneSize(text.substr(0, c1), &from) ||
      !ParseOneSize(text.substr(c1 + 1, c2 - c1 - 1), &to) || s.size() < 2 ||
      (s[0] != 'x' && s[0] != '+') || !ParseOneSize(s.substr(1), &step)) {
    return bad("expected FROM:TO:xF or FROM:TO:+S");
  }
  if (from == 0 || from > to) return bad("FROM must be > 0 and <= TO");
  if ((s[0] == 'x' && step < 2) || step == 0) return bad("step too small");
  for (std::uint64_t v = from; v <= to && sizes.size() < 1000;
       v = s[0] == 'x' ? v * step : v + step) {
    sizes.push_back(v);
  }
  return sizes;
}

}  // namespace fabric::bench
