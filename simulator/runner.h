// Runs a Cluster in real time on its own thread and keeps the sysfs trees
// of the chosen hosts up to date: the simulated clock follows the wall
// clock tick by tick (if the machine falls behind, several ticks are stepped
// before the next render, so counter rates stay true to the model).
//
// Thread-safety: Start/Stop/Wait from one owning thread; WithCluster() may
// be called from any thread (it holds the runner's mutex, e.g. for the MAD
// view), ProbeLoss() too (it does not).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "simulator/model.h"
#include "simulator/render.h"

namespace fabric::sim {

class LiveRunner {
 public:
  // The trees are rewritten every 200 ms (every other 100 ms tick), not at
  // every tick: a renderer writing every 100 ms ran in lock step with the
  // daemon's default 100 ms poll, so that one poll interval now and then
  // saw two writes (a utilisation peak of twice the truth) and the next
  // none. Every 200 ms, like firmware that refreshes its counters in steps,
  // no poll sees two writes, and the congestion collector spreads each
  // step over the time it accumulated in (collectors/congestion_window.h).
  // With a tick longer than this, every tick is rendered.
  static constexpr Duration kRenderPeriod = std::chrono::milliseconds(200);

  // Renders hosts [0, config.hosts) into <out>/<host name>/ (or, with
  // `single_root`, host 0 directly into `out`).
  LiveRunner(SimConfig config, std::filesystem::path out,
             bool single_root = false);
  ~LiveRunner();  // stops the thread; leaves the trees

  // Steps `simulated` of model time at once (before Start), e.g. to render a
  // frozen tree with non-trivial counters.
  void Warmup(Duration simulated);
  // Renders the initial state (t = 0) synchronously. False on I/O error.
  bool RenderNow(std::string* error);
  // Starts the real-time loop; `duration` 0 = until Stop().
  void Start(Duration duration = Duration{0});
  void Stop();
  // Blocks until the loop ends (duration reached or Stop()).
  void Wait();
  bool running() const { return running_; }
  // Last render error, empty when fine.
  std::string error() const;

  // Removes every tree this runner rendered.
  void RemoveTrees();

  void WithCluster(const std::function<void(const Cluster&)>& fn) const;
  std::vector<std::filesystem::path> host_roots() const;

  // The share of host `from`'s probes to host `to` the fabric drops now
  // (Cluster::ProbeLoss), from a table published after every step under a
  // lock of its own, not the runner's: the probe relay forwards in real
  // time. A machine that falls behind steps and renders back to back
  // holding the runner's lock, and every probe that waited for it timed
  // out: all pairs lost probes at once (the demo tour under ctest -j8).
  double ProbeLoss(int from, int to) const;

 private:
  void Loop(Duration duration);
  void PublishProbeLoss() REQUIRES(mu_);

  mutable Mutex mu_;
  Cluster cluster_ GUARDED_BY(mu_);
  std::vector<SysfsRenderer> renderers_ GUARDED_BY(mu_);
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<bool> running_{false};
  std::string error_ GUARDED_BY(mu_);
  // Taken after mu_ (PublishProbeLoss), or alone (ProbeLoss).
  mutable Mutex loss_mu_;
  std::vector<Cluster::LossyPair> lossy_pairs_ GUARDED_BY(loss_mu_);
  std::thread thread_;
};

}  // namespace fabric::sim
