#include "daemon/off_loop.h"

#include <boost/asio/post.hpp>
#include <system_error>
#include <thread>

#include "core/thread_annotations.h"

namespace fabric {

OffLoop::OffLoop(boost::asio::io_context& io)
    : shared_(std::make_shared<Shared>()) {
  shared_->io = &io;
}

OffLoop::~OffLoop() {
  MutexLock lock(shared_->mu);
  shared_->io = nullptr;
}

bool OffLoop::Run(Job job) {
  {
    MutexLock lock(shared_->mu);
    ++shared_->running;
  }
  try {
    std::thread([shared = shared_, job = std::move(job)] {
      std::function<void()> done = job();
      MutexLock lock(shared->mu);
      --shared->running;
      // Posted under the lock, so the owner cannot go away in between.
      if (shared->io != nullptr) boost::asio::post(*shared->io, done);
    }).detach();
  } catch (const std::system_error&) {
    MutexLock lock(shared_->mu);
    --shared_->running;
    return false;
  }
  return true;
}

int OffLoop::running() const {
  MutexLock lock(shared_->mu);
  return shared_->running;
}

}  // namespace fabric
