// The /metrics exposition rendered, and gzipped, on one worker thread for
// the server, so that a big exposition (seconds for a million series) never
// holds up the event loop that answers probes and other clients. Requests
// that arrive while a render waits to start share it (it starts after them,
// so its data is as fresh as their own render's would be): any number of
// clients and pipelined requests cost at most one running and one queued
// render.
//
// Thread-safety: construct, call Request and destroy on the event-loop
// thread. `render` runs on the worker thread (it must be safe there); each
// `done` runs on the event loop. Destruction waits for a running render to
// end; its result and the queued render's callers are dropped unanswered.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fabric::http {

struct Rendered {
  std::string text;
  std::optional<std::string> gzip;  // when asked for and zlib succeeded
  bool failed = false;              // `render` threw: answer 500
};

class RenderWorker {
 public:
  using Done = std::function<void(std::shared_ptr<const Rendered>)>;

  RenderWorker(boost::asio::any_io_executor loop,
               std::function<std::string()> render);
  ~RenderWorker();
  RenderWorker(const RenderWorker&) = delete;
  RenderWorker& operator=(const RenderWorker&) = delete;

  // Calls `done` on the event loop with a render that starts after this
  // call; `gzip`: the caller wants Rendered::gzip too.
  void Request(bool gzip, Done done);
  // When the last render's callers were answered (event loop); the
  // epoch before the first.
  std::chrono::steady_clock::time_point last_done() const {
    return *last_done_;
  }

 private:
  struct Job;
  void Run(Job& job);  // on the worker thread

  boost::asio::any_io_executor loop_;
  std::function<std::string()> render_;
  boost::asio::thread_pool pool_{1};
  // The last job posted; callers join it while it has not started.
  std::shared_ptr<Job> queued_;
  // Shared with the answers posted to the loop, which may run after this
  // worker is gone.
  std::shared_ptr<std::chrono::steady_clock::time_point> last_done_ =
      std::make_shared<std::chrono::steady_clock::time_point>();
};

}  // namespace fabric::http
