#include "daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <exception>
#include <optional>

#include "collectors/registry.h"
#include "daemon/broker_metrics.h"
#include "daemon/collection.h"
#include "daemon/fd_limit.h"
#include "daemon/off_loop.h"
#include "daemon/poller.h"
#include "daemon/reload_verdict.h"
#include "daemon/self_check.h"
#include "daemon/self_check_watchdog.h"
#include "daemon/simulate.h"
#include "daemon/systemd_notify.h"
#include "exporters/exposition.h"
#include "http/server.h"

namespace fabric {
namespace {

// How long shutdown waits for collections still running.
constexpr std::chrono::seconds kShutdownGrace{5};
// Collections abandoned by reloads (stuck in the kernel, each holding a
// thread) at which the daemon stops feeding the systemd watchdog, so that
// systemd restarts it rather than let threads pile up. (A collector whose
// abandoned collection is still stuck is not started again until it
// returns, so there is at most one per collector.)
constexpr std::size_t kMaxAbandoned = 4;
// How often the pollers are supervised (overruns published, stuck
// collections found): half the shortest timeout, within [100 ms, 1 s], so
// an overrun is reported at most half a timeout late without waking the
// daemon more than needed.
std::chrono::milliseconds SupervisePeriod(
    const std::vector<std::unique_ptr<Poller>>& pollers) {
  std::chrono::microseconds shortest = std::chrono::seconds(2);
  for (const auto& p : pollers) shortest = std::min(shortest, p->timeout());
  return std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(shortest / 2),
      std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
}

// What a reload applies, read and parsed (TLS files loaded) away from the
// event loop: the config with the flags applied and the web config.
struct ReloadFiles {
  std::optional<Config> config;
  std::optional<http::Security> security;
  std::string error;  // why the reload is rejected, when either is absent
};

ReloadFiles LoadReloadFiles(const Options& options) {
  ReloadFiles out;
  try {
    out.config = LoadConfigFile(options.config_path, !options.config_given,
                                AllCollectorKeys(), &out.error);
    if (!out.config || !ApplyOptions(options, *out.config, &out.error)) {
      out.config.reset();
      return out;
    }
    for (const auto& warning : out.config->warnings) {
      spdlog::warn("reload: {}", warning);
    }
    out.security =
        http::LoadSecurity(options.web_config_file.value_or(""), &out.error);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  if (!out.security) out.config.reset();
  return out;
}

class Daemon {
 public:
  Daemon(const Options& options, Config config)
      : options_(options),
        config_(std::move(config)),
        signals_(io_, SIGHUP, SIGTERM, SIGINT),
        supervise_timer_(io_),
        store_(std::make_shared<SnapshotStore>()),
        budget_(ProcessFdBudget()),
        collectable_(std::make_shared<FdMetrics>(
            RealFdOs(), budget_,
            std::make_shared<BrokerMetrics>(
                std::make_shared<SnapshotCollectable>(store_, ThisBuild())))),
        http_metrics_(std::make_shared<http::ServerMetrics>()),
        in_flight_(std::make_shared<InFlight>()),
        reload_loader_(io_) {}

  int Run() {
    // Before any sysfs reader exists: they keep descriptors from the budget.
    const std::size_t fd_limit = RaiseFdLimit(RealFdOs());
    budget_->Resize(FdBudgetFor(fd_limit));
    spdlog::info("sysfs readers keep at most {} descriptors open",
                 budget_->size());
    std::string error;
    auto security = http::LoadSecurity(WebConfigPath(), &error);
    if (security) {
      http_ = http::Server::Start(io_, config_.listen_address, *security,
                                  {collectable_}, http_metrics_, &error);
    }
    if (!http_) {
      spdlog::error("{}", error);
      return 1;
    }
    spdlog::info("listening on {} ({})", http_->BoundAddress(),
                 http::Describe(*security));
    if (!WebConfigPath().empty() && !security->level.tls &&
        !security->level.basic_auth) {
      spdlog::warn("{} serves /metrics over plain HTTP without basic auth",
                   WebConfigPath());
    }
    self_check_tls_ = security->tls != nullptr;
    StartPollers();
    Supervise();
    WaitSignal();
    StartWatchdog();
    SystemdNotify("READY=1\nSTATUS=serving /metrics");
    WriteVerdict();
    io_.run();

    // Stopped. Connections close first, then wait (bounded) for
    // collections.
    http_.reset();
    if (!in_flight_->WaitIdle(kShutdownGrace)) {
      spdlog::warn("a collection is still running after {}s; exiting anyway",
                   kShutdownGrace.count());
      spdlog::shutdown();
      std::_Exit(0);  // never join a thread stuck in a hung read
    }
    if (reload_loader_.running() > 0) {
      spdlog::warn("a reload is still reading {}; exiting without it",
                   options_.config_path);
      spdlog::shutdown();
      std::_Exit(0);  // its thread must not run under exit-time destructors
    }
    spdlog::info("stopped");
    return 0;
  }

 private:
  // Starts pollers for the enabled collectors that are not running yet,
  // except those whose abandoned collection is still stuck: a new one
  // would most likely block on the same file and hold another thread and
  // its descriptors. They start once it returns (Supervise).
  void StartPollers() {
    auto sysfs = std::shared_ptr<const Sysfs>(
        MakeRealSysfs(config_.sysfs_root, SysfsCacheMode::kAuto, budget_));
    auto running = [this](const std::string& name) {
      return std::any_of(pollers_.begin(), pollers_.end(),
                         [&](const auto& p) { return p->name() == name; });
    };
    auto stuck = [this](const std::string& name) {
      return std::any_of(abandoned_.begin(), abandoned_.end(),
                         [&](const auto& p) { return p->name() == name; });
    };
    auto want = [&](const std::string& name) {
      if (running(name)) return false;
      if (stuck(name)) {
        spdlog::warn(
            "{}: not started while its abandoned collection is stuck; it "
            "starts once that returns",
            name);
        return false;
      }
      return true;
    };
    for (auto& c : BuildCollectors(config_, sysfs, want)) {
      auto poller = std::make_unique<Poller>(std::move(c), store_, in_flight_);
      poller->Start(io_);
      pollers_.push_back(std::move(poller));
    }
    // Drop snapshots of collectors this config no longer runs (a stuck
    // one's says it is stuck until it starts again).
    for (const auto& snap : store_->All()) {
      if (!running(snap->collector) && !stuck(snap->collector)) {
        store_->Remove(snap->collector);
      }
    }
    spdlog::info("reading {} with {} collector(s)", config_.sysfs_root,
                 pollers_.size());
  }

  void StopPollers() {
    for (auto& p : pollers_) p->Stop();
    pollers_.clear();
    abandoned_.clear();  // their threads are detached and own their state
  }

  // Stops the pollers whose settings differ under `next`; the others keep
  // running with their state.
  void StopChangedPollers(const Config& next) {
    std::vector<std::unique_ptr<Poller>> kept;
    for (auto& p : pollers_) {
      if (SameCollectorSettings(config_, next, p->name())) {
        kept.push_back(std::move(p));
        continue;
      }
      spdlog::info("{}: settings changed, restarting", p->name());
      if (p->Stop()) {
        spdlog::warn("{}: its running collection is abandoned", p->name());
        abandoned_.push_back(std::move(p));
      }
    }
    pollers_ = std::move(kept);
  }

  // Publishes overruns, forgets abandoned collections that have returned
  // (their collector, and with it its descriptors, is freed then) and
  // starts their collectors again, and decides whether collections make
  // progress.
  void Supervise() {
    std::size_t stuck = 0;
    for (auto& p : pollers_) stuck += p->Supervise() ? 1 : 0;
    const std::size_t abandoned = abandoned_.size();
    std::erase_if(abandoned_, [](const auto& p) {
      if (p->running()) return false;
      spdlog::info("{}: its abandoned collection returned", p->name());
      return true;
    });
    if (abandoned_.size() < abandoned) StartPollers();
    // Progress: not every collector is stuck, and abandoned collections
    // have not piled up. A daemon whose collections are all wedged is not
    // healthy, even though its event loop still runs.
    const bool healthy = (pollers_.empty() || stuck < pollers_.size()) &&
                         abandoned_.size() < kMaxAbandoned;
    if (healthy != collections_ok_) {
      collections_ok_ = healthy;
      if (watchdog_) {
        watchdog_->SetCollections(
            healthy,
            healthy ? ""
                    : fmt::format("{} of {} collectors stuck, {} abandoned "
                                  "collections",
                                  stuck, pollers_.size(), abandoned_.size()));
      }
    }
    supervise_timer_.expires_after(SupervisePeriod(pollers_));
    supervise_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Supervise();
    });
  }

  void WaitSignal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        ++verdict_.received;
        WriteVerdict();
        Reload();
        WaitSignal();
        return;
      }
      spdlog::info("received {}, stopping",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
      SystemdNotify("STOPPING=1");
      StopPollers();
      if (watchdog_) watchdog_->Stop();
      supervise_timer_.cancel();
      io_.stop();
    });
  }

  // The rule and its reasons: self_check_watchdog.h.
  void StartWatchdog() {
    const std::uint64_t usec = SystemdWatchdogUsec();
    if (usec == 0) return;
    SelfCheckWatchdog::Hooks hooks;
    hooks.check = [this](std::chrono::milliseconds timeout,
                         std::chrono::milliseconds recent,
                         SelfCheckWatchdog::Done done) {
      RunScrapeCheck(io_, *http_, self_check_tls_, timeout, recent,
                     [this, done = std::move(done)](SelfCheckResult result) {
                       self_check_tls_ = result.tls;
                       done(std::move(result));
                     });
    };
    hooks.notify = [](const char* state) { SystemdNotify(state); };
    watchdog_ = std::make_unique<SelfCheckWatchdog>(
        io_, std::chrono::microseconds(usec), std::move(hooks));
    watchdog_->SetCollections(collections_ok_, "");
    watchdog_->Start();
  }

  // SIGHUP. The files are read and parsed on a thread of their own (a FIFO,
  // /dev/zero or a hung mount named as a file must not stop scrapes and
  // probes), the result applied on the event loop. SIGHUPs while one is
  // loading make one more reload after it, which reads the latest files.
  void Reload() {
    if (reloading_) {
      if (!reload_again_) {
        spdlog::info(
            "SIGHUP: a reload is still reading {}; reloading again "
            "after it",
            options_.config_path);
      }
      reload_again_ = true;
      return;
    }
    spdlog::info("SIGHUP: reloading {}", options_.config_path);
    reloading_ = true;
    covering_ = verdict_.received;
    const bool started = reload_loader_.Run([this, options = options_] {
      auto files = std::make_shared<ReloadFiles>(LoadReloadFiles(options));
      // Runs on the event loop, where `this` is alive (OffLoop posts
      // nothing once the daemon is gone).
      return [this, files] { ReloadLoaded(std::move(*files)); };
    });
    if (!started) {
      reloading_ = false;
      Rejected("no thread to read the files on");
    }
  }

  // A reload never lowers /metrics' protection silently (docs/security.md):
  // turning TLS, basic auth or client certificate verification off must be
  // stated in the new web config (http::Downgrade), and is then logged as a
  // warning naming what was turned off. Otherwise the whole reload is
  // refused, with *error set for the log line.
  bool SecurityChangeAllowed(const http::Security& next,
                             std::string* error) const {
    std::vector<std::string> off;
    const std::string refused =
        http::Downgrade(http_->security().level, next.level, &off);
    if (!refused.empty()) {
      *error = "web config " + WebConfigPath() + ": " + refused;
      return false;
    }
    for (const auto& what : off) {
      spdlog::warn("reload turns {} off for /metrics, as {} states", what,
                   WebConfigPath().empty() ? std::string("the command line")
                                           : WebConfigPath());
    }
    return true;
  }

  void ReloadLoaded(ReloadFiles files) {
    reloading_ = false;
    if (files.config && !SecurityChangeAllowed(*files.security, &files.error)) {
      files.config.reset();
    }
    if (!files.config) {
      Rejected(files.error);
    } else {
      Apply(std::move(*files.config), std::move(*files.security));
    }
    if (reload_again_) {
      reload_again_ = false;
      Reload();
    }
  }

  // Applies a loaded config and web config on the event loop.
  void Apply(Config config, http::Security security) {
    std::string error;
    // --simulate owns the sysfs root and the ethtool dumps for the life of
    // the process.
    if (options_.simulate) {
      config.sysfs_root = config_.sysfs_root;
      config.ethtool_dir = config_.ethtool_dir;
      PointJobsAtSimulation(&config);
    }
    if (config.listen_address != config_.listen_address) {
      auto http = http::Server::Start(io_, config.listen_address, security,
                                      {collectable_}, http_metrics_, &error);
      if (!http) {
        Rejected(error);
        return;
      }
      http_ = std::move(http);
      spdlog::info("listening on {} ({})", http_->BoundAddress(),
                   http::Describe(security));
    } else {
      http_->Reconfigure(security);
      spdlog::info("/metrics serves {}", http::Describe(security));
    }
    StopChangedPollers(config);
    config_ = std::move(config);
    spdlog::set_level(spdlog::level::from_str(config_.log_level));
    StartPollers();
    spdlog::info("reload done");
    verdict_.ok = true;
    verdict_.why.clear();
    verdict_.covered = covering_;
    WriteVerdict();
  }

  void Rejected(const std::string& why) {
    spdlog::error("reload rejected, keeping the running config: {}", why);
    verdict_.ok = false;
    verdict_.why = why;
    verdict_.covered = covering_;
    WriteVerdict();
  }

  // For --signal-reload, which waits on it (daemon/reload_verdict.h). A
  // failure to write only costs `systemctl reload` its verdict: logged.
  void WriteVerdict() {
    if (options_.reload_verdict_path.empty()) return;
    std::string error;
    if (!WriteReloadVerdict(options_.reload_verdict_path, verdict_, &error)) {
      spdlog::warn("reload verdict: {}", error);
    }
  }

  std::string WebConfigPath() const {
    return options_.web_config_file.value_or("");
  }

  const Options& options_;
  Config config_;
  // Destroyed after everything below it: timers and handlers refer to it.
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer supervise_timer_;
  bool collections_ok_ = true;
  // The mode the server answered the last self-check in.
  bool self_check_tls_ = false;
  std::unique_ptr<SelfCheckWatchdog> watchdog_;
  std::shared_ptr<SnapshotStore> store_;
  std::shared_ptr<FdBudget> budget_;
  std::shared_ptr<prometheus::Collectable> collectable_;
  std::shared_ptr<http::ServerMetrics> http_metrics_;
  std::shared_ptr<InFlight> in_flight_;
  std::unique_ptr<http::Server> http_;
  std::vector<std::unique_ptr<Poller>> pollers_;
  // Retired pollers whose collection was still running (see poller.h).
  std::vector<std::unique_ptr<Poller>> abandoned_;
  // Reload: files are being read, and another SIGHUP came meanwhile.
  bool reloading_ = false;
  bool reload_again_ = false;
  // SIGHUPs received, and the last reload's verdict; covering_: the SIGHUPs
  // received when the reload now reading started.
  ReloadVerdict verdict_;
  std::uint64_t covering_ = 0;
  // Destroyed before io_: it posts to it.
  OffLoop reload_loader_;
};

}  // namespace

int RunDaemon(const Options& options, const Config& config) {
  Daemon daemon(options, config);
  return daemon.Run();
}

}  // namespace fabric
