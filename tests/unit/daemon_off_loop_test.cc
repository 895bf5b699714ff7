// Tests for daemon/off_loop.h: a job runs on its own thread and what it
// returns runs on the event loop; the loop keeps running while a job
// blocks; an OffLoop destroyed while its job blocks returns at once, and the
// job's result is dropped. Waits poll for states; nothing asserts on time.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "daemon/off_loop.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

TEST(OffLoopTest, JobRunsOffTheLoopItsResultOnIt) {
  boost::asio::io_context io;
  OffLoop off(io);
  const auto loop_thread = std::this_thread::get_id();
  std::thread::id job_thread, done_thread;
  ASSERT_TRUE(off.Run([&] {
    job_thread = std::this_thread::get_id();
    return [&] {
      done_thread = std::this_thread::get_id();
      io.stop();
    };
  }));
  auto guard = boost::asio::make_work_guard(io);
  io.run();
  EXPECT_NE(job_thread, loop_thread);
  EXPECT_EQ(done_thread, loop_thread);
  EXPECT_EQ(off.running(), 0);
}

TEST(OffLoopTest, LoopRunsWhileAJobBlocksAndDestructionDoesNotWait) {
  boost::asio::io_context io;
  std::promise<void> release;
  auto released = release.get_future().share();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto result_ran = std::make_shared<std::atomic<bool>>(false);
  {
    OffLoop off(io);
    ASSERT_TRUE(off.Run([released, finished, result_ran] {
      released.wait();  // a read stuck on a hung mount
      finished->store(true);
      return [result_ran] { result_ran->store(true); };
    }));
    // The loop still runs timers while the job is stuck.
    bool ticked = false;
    boost::asio::steady_timer timer(io, 1ms);
    timer.async_wait([&](const boost::system::error_code&) { ticked = true; });
    io.run();
    EXPECT_TRUE(ticked);
    EXPECT_EQ(off.running(), 1);
  }  // destroyed with the job still blocked
  release.set_value();
  // The job and its result are gone (nothing queued holds a copy) once the
  // thread is done.
  for (int i = 0; i < 400 && result_ran.use_count() > 1; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(finished->load());
  ASSERT_EQ(result_ran.use_count(), 1);
  io.restart();
  io.poll();
  EXPECT_FALSE(result_ran->load());
}

}  // namespace
}  // namespace fabric
