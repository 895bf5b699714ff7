#include "simulator/runner.h"

namespace fabric::sim {

LiveRunner::LiveRunner(SimConfig config, std::filesystem::path out,
                       bool single_root)
    : cluster_(std::move(config)) {
  for (size_t h = 0; h < cluster_.hosts().size(); ++h) {
    renderers_.emplace_back(single_root ? out : out / cluster_.hosts()[h].name,
                            static_cast<int>(h));
    if (single_root) break;
  }
  MutexLock lock(mu_);
  PublishProbeLoss();
}

LiveRunner::~LiveRunner() {
  Stop();
  Wait();
}

void LiveRunner::Warmup(Duration simulated) {
  MutexLock lock(mu_);
  const Duration end = cluster_.now() + simulated;
  while (cluster_.now() + cluster_.tick() <= end) cluster_.Step();
  PublishProbeLoss();
}

bool LiveRunner::RenderNow(std::string* error) {
  MutexLock lock(mu_);
  for (auto& r : renderers_) {
    if (!r.Render(cluster_, error)) return false;
  }
  return true;
}

void LiveRunner::Start(Duration duration) {
  if (thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = false;
  }
  running_ = true;
  thread_ = std::thread([this, duration] { Loop(duration); });
}

void LiveRunner::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void LiveRunner::Wait() {
  if (thread_.joinable()) thread_.join();
}

std::string LiveRunner::error() const {
  MutexLock lock(mu_);
  return error_;
}

void LiveRunner::RemoveTrees() {
  MutexLock lock(mu_);
  for (auto& r : renderers_) r.Remove();
}

void LiveRunner::WithCluster(
    const std::function<void(const Cluster&)>& fn) const {
  MutexLock lock(mu_);
  fn(cluster_);
}

double LiveRunner::ProbeLoss(int from, int to) const {
  MutexLock lock(loss_mu_);
  return Cluster::LossOf(lossy_pairs_, from, to);
}

void LiveRunner::PublishProbeLoss() {
  std::vector<Cluster::LossyPair> pairs = cluster_.LossyProbePairs();
  MutexLock lock(loss_mu_);
  lossy_pairs_ = std::move(pairs);
}

std::vector<std::filesystem::path> LiveRunner::host_roots() const {
  std::vector<std::filesystem::path> roots;
  MutexLock lock(mu_);
  for (const auto& r : renderers_) roots.push_back(r.root());
  return roots;
}

void LiveRunner::Loop(Duration duration) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  MutexLock lock(mu_);
  const Duration sim_start = cluster_.now();
  std::int64_t rendered_slot = 0;  // RenderNow() drew the start
  while (!stop_) {
    // Step until the simulated clock has caught up with the wall clock.
    const Duration elapsed =
        std::chrono::duration_cast<Duration>(Clock::now() - start);
    bool stepped = false;
    while (cluster_.now() - sim_start + cluster_.tick() <= elapsed) {
      cluster_.Step();
      stepped = true;
      if (duration.count() > 0 && cluster_.now() - sim_start >= duration) {
        break;
      }
    }
    if (stepped) PublishProbeLoss();
    // Render once per render period, not every tick (see kRenderPeriod).
    const auto slot = (cluster_.now() - sim_start) / kRenderPeriod;
    if (stepped && slot != rendered_slot) {
      rendered_slot = slot;
      for (auto& r : renderers_) {
        std::string error;
        if (!r.Render(cluster_, &error)) error_ = error;
      }
    }
    if (duration.count() > 0 && cluster_.now() - sim_start >= duration) break;
    const auto next = start + (cluster_.now() - sim_start) + cluster_.tick();
    cv_.wait_until(lock.native(), next,
                   [this]() REQUIRES(mu_) { return stop_; });
  }
  running_ = false;
}

}  // namespace fabric::sim
