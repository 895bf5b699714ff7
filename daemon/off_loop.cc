#include "daemon/off_loop.h"

#include <boost/asio/post.hpp>
#include <system_error>
#include <thread>

namespace fabric {

OffLoop::OffLoop(boost::asio::io_context& io)
    : shared_(std::make_shared<Shared>()) {
  shared_->io = &io;
}

OffLoop::~OffLoop() {
  std::lock_guard lock(shared_->mu);
  shared_->io = nullptr;
}

bool OffLoop::Run(Job job) {
  {
    std::lock_guard lock(shared_->mu);
    ++shared_->running;
  }
  try {
    std::thread([shared = shared_, job = std::move(job)] {
      std::function<void()> done = job();
      std::lock_guard lock(shared->mu);
      --shared->running;
      // Posted under the lock, so the owner cannot go away in between.
      if (shared->io != nullptr) boost::asio::post(*shared->io, done);
    }).detach();
  } catch (const std::system_error&) {
    std::lock_guard lock(shared_->mu);
    --shared_->running;
    return false;
  }
  return true;
}

int OffLoop::running() const {
  std::lock_guard lock(shared_->mu);
  return shared_->running;
}

}  // namespace fabric
