#include "daemon/self_check_watchdog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace fabric {
namespace {

// The shortest time a check waits for an answer: a loaded machine can take
// a while to connect and answer on loopback.
constexpr std::chrono::milliseconds kMinCheckTimeout{1000};

}  // namespace

SelfCheckWatchdog::SelfCheckWatchdog(boost::asio::io_context& io,
                                     std::chrono::microseconds period,
                                     Hooks hooks)
    : period_(period),
      hooks_(std::move(hooks)),
      timer_(io),
      last_answer_(hooks_.now()) {}

std::chrono::milliseconds SelfCheckWatchdog::check_period() const {
  return std::max(
      std::chrono::duration_cast<std::chrono::milliseconds>(period_ / 6),
      std::chrono::milliseconds(1));
}

std::chrono::milliseconds SelfCheckWatchdog::check_timeout() const {
  return std::max(
      std::chrono::duration_cast<std::chrono::milliseconds>(period_ / 2),
      kMinCheckTimeout);
}

void SelfCheckWatchdog::Start() {
  running_ = true;
  spdlog::info(
      "systemd watchdog: a /metrics self-check every {}ms; fed while one "
      "answered within the last {}ms",
      check_period().count(),
      std::chrono::duration_cast<std::chrono::milliseconds>(period_ / 2)
          .count());
  Tick();
}

void SelfCheckWatchdog::Stop() {
  running_ = false;
  timer_.cancel();
}

void SelfCheckWatchdog::Tick() {
  Update();
  if (feeding_) hooks_.notify("WATCHDOG=1");
  if (!check_pending_) {
    check_pending_ = true;
    hooks_.check(check_timeout(), check_period(),
                 [this](SelfCheckResult result) { CheckDone(result); });
  }
  if (!running_) return;
  timer_.expires_after(check_period());
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && running_) Tick();
  });
}

void SelfCheckWatchdog::CheckDone(SelfCheckResult result) {
  check_pending_ = false;
  if (result.answered) {
    last_answer_ = hooks_.now();
    last_failure_.clear();
  } else {
    // The first failure after an answer is worth a line; a run of them is
    // summed up when feeding stops.
    if (last_failure_.empty()) {
      spdlog::warn(
          "/metrics self-check failed (the watchdog is still fed "
          "while one answered within the last {}ms): {}",
          std::chrono::duration_cast<std::chrono::milliseconds>(period_ / 2)
              .count(),
          result.why);
    }
    last_failure_ = result.why;
  }
  Update();
}

void SelfCheckWatchdog::SetCollections(bool ok, std::string why) {
  collections_ok_ = ok;
  collections_why_ = std::move(why);
  Update();
}

void SelfCheckWatchdog::Update() {
  const auto age = hooks_.now() - last_answer_;
  const bool http_ok = age < period_ / 2;
  const bool feed = http_ok && collections_ok_;
  if (feed == feeding_) return;
  feeding_ = feed;
  if (feed) {
    spdlog::info(
        "collections make progress and /metrics answers again; feeding the "
        "systemd watchdog");
    return;
  }
  std::string why = collections_ok_ ? "" : collections_why_;
  if (!http_ok) {
    why += fmt::format(
        "{}the /metrics self-check got no answer for {}ms (it renders and "
        "answers as a scrape does; last failure: {})",
        why.empty() ? "" : "; ",
        std::chrono::duration_cast<std::chrono::milliseconds>(age).count(),
        last_failure_.empty()
            ? std::string("the check is still waiting for its answer")
            : last_failure_);
  }
  spdlog::error("{}; no longer feeding the systemd watchdog", why);
}

}  // namespace fabric
