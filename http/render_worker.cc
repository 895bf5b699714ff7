#include "http/render_worker.h"

#include <boost/asio/post.hpp>
#include <exception>
#include <vector>

#include "core/thread_annotations.h"
#include "http/gzip.h"

namespace fabric::http {

struct RenderWorker::Job {
  Job(bool g, Done done) : gzip(g) { waiters.push_back(std::move(done)); }
  Mutex mu;  // Request (event loop) against Run (worker)
  bool started GUARDED_BY(mu) = false;
  bool gzip GUARDED_BY(mu) = false;
  std::vector<Done> waiters GUARDED_BY(mu);
};

RenderWorker::RenderWorker(boost::asio::any_io_executor loop,
                           std::function<std::string()> render)
    : loop_(std::move(loop)), render_(std::move(render)) {}

RenderWorker::~RenderWorker() {
  pool_.stop();
  pool_.join();
}

void RenderWorker::Request(bool gzip, Done done) {
  if (queued_) {
    MutexLock lock(queued_->mu);
    if (!queued_->started) {
      queued_->gzip = queued_->gzip || gzip;
      queued_->waiters.push_back(std::move(done));
      return;
    }
  }
  auto job = std::make_shared<Job>(gzip, std::move(done));
  queued_ = job;
  boost::asio::post(pool_, [this, job] { Run(*job); });
}

void RenderWorker::Run(Job& job) {
  bool gzip = false;
  std::vector<Done> waiters;
  {
    MutexLock lock(job.mu);
    job.started = true;
    gzip = job.gzip;
    waiters = std::move(job.waiters);
  }
  auto out = std::make_shared<Rendered>();
  try {
    out->text = render_();
    if (gzip) out->gzip = Gzip(out->text);
  } catch (const std::exception&) {
    out->failed = true;
  }
  // The waiters (they hold the connections) move to the event loop and are
  // destroyed there, never on this thread.
  boost::asio::post(loop_,
                    [last_done = last_done_, waiters = std::move(waiters),
                     result = std::shared_ptr<const Rendered>(out)] {
                      if (!result->failed)
                        *last_done = std::chrono::steady_clock::now();
                      for (const auto& done : waiters) done(result);
                    });
}

}  // namespace fabric::http
