// OffLoop: runs a job that may block (reading files an operator names, on a
// file system that can hang) on a thread of its own and hands what it
// returns to the event loop, so neither the loop nor shutdown waits on it.
//
// Thread-safety: Run, running and the destructor are called on one thread
// (the event loop's); jobs run on their own threads, their results on the
// loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "core/thread_annotations.h"

namespace fabric {

class OffLoop {
 public:
  // A job returns what to do with its result on the event loop.
  using Job = std::function<std::function<void()>()>;

  explicit OffLoop(boost::asio::io_context& io);
  // Posts no more results. A job still running is left to its (detached)
  // thread, which ends when the job returns; the result is dropped.
  ~OffLoop();
  OffLoop(const OffLoop&) = delete;
  OffLoop& operator=(const OffLoop&) = delete;

  // Starts `job` on a new detached thread, then posts what it returns to
  // the io_context. The job must not refer to the caller's state: it may
  // outlive it. False (nothing started) when no thread can be created.
  bool Run(Job job);

  // Jobs whose thread has not returned yet. A process that exits while one
  // runs must not run exit-time destructors under it (std::_Exit).
  int running() const;

 private:
  struct Shared {
    Mutex mu;
    // Null once the owner is gone.
    boost::asio::io_context* io GUARDED_BY(mu) = nullptr;
    int running GUARDED_BY(mu) = 0;
  };
  std::shared_ptr<Shared> shared_;
};

}  // namespace fabric
