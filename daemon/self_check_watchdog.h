// SelfCheckWatchdog: feeds the systemd watchdog (WATCHDOG=1) while the
// daemon can still serve scrapes and its collections make progress, and
// says why when it stops (docs/security.md, "Watchdog").
//
// The check exercises what a scrape exercises: a connection to the real
// listener answered on the event loop (RunSelfCheck, self_check.h) and a
// render of the exposition on the server's render thread
// (http::Server::CheckRender); both are the daemon's `check` function.
//
// The rule, for a watchdog period W (the shipped unit: WatchdogSec=30):
//  - a check starts every W/6 (5 s), one at a time, and gets W/2 to answer;
//  - WATCHDOG=1 is sent at each of those ticks while the last answered check
//    finished less than W/2 ago (and collections make progress);
//  - so one failed or slow check changes nothing: the next one, W/6 later,
//    can answer in its place. Feeding stops only after W/2 without any
//    answered check (three checks in a row), and systemd restarts the daemon
//    W after the last WATCHDOG=1: a dead /metrics is restarted within 1.5 W,
//    a loaded one that answers one check in three is never restarted.
// Each change of whether the watchdog is fed is logged with the reason.
//
// Thread-safety: create, use and destroy on the event-loop thread of `io`.
// The clock and the notifier are injectable for tests.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "daemon/self_check.h"

namespace fabric {

class SelfCheckWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using Done = std::function<void(SelfCheckResult)>;
  struct Hooks {
    // Runs one check, bounded by `timeout`, a scrape's render within
    // `recent` (one check period) counting as the check's; calls `done` on
    // the event loop exactly once.
    std::function<void(std::chrono::milliseconds timeout,
                       std::chrono::milliseconds recent, Done done)>
        check;
    // Sends a notify state ("WATCHDOG=1"); SystemdNotify in the daemon.
    std::function<void(const char*)> notify;
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
  };

  // `period`: the watchdog period systemd asked for (W).
  SelfCheckWatchdog(boost::asio::io_context& io,
                    std::chrono::microseconds period, Hooks hooks);
  SelfCheckWatchdog(const SelfCheckWatchdog&) = delete;
  SelfCheckWatchdog& operator=(const SelfCheckWatchdog&) = delete;

  // Ticks every W/6 from now on (the first tick at once).
  void Start();
  void Stop();
  // One tick: feed or not, and start a check if none is running. Start()
  // calls it on its timer; tests call it directly.
  void Tick();
  // Whether collections make progress, and why not (from Supervise).
  void SetCollections(bool ok, std::string why);

  std::chrono::milliseconds check_period() const;
  std::chrono::milliseconds check_timeout() const;
  bool feeding() const { return feeding_; }

 private:
  void CheckDone(SelfCheckResult result);
  // Logs each change of whether the watchdog is fed, with the reason.
  void Update();

  std::chrono::microseconds period_;
  Hooks hooks_;
  boost::asio::steady_timer timer_;
  bool running_ = false;
  bool check_pending_ = false;
  Clock::time_point last_answer_;
  std::string last_failure_;
  bool collections_ok_ = true;
  std::string collections_why_;
  bool feeding_ = true;
};

}  // namespace fabric
