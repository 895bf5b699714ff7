// Snippets for check.sh: with no CASE defined, correct uses of
// core/thread_annotations.h that clang's -Wthread-safety must accept; with
// -DCASE=n, one mistake each that it must reject (check.sh greps for the
// diagnostic). Under GCC every variant compiles: the macros expand to
// nothing.
#include <chrono>
#include <condition_variable>

#include "core/thread_annotations.h"

namespace {

class Counter {
 public:
  void Add() {
    fabric::MutexLock lock(mu_);
    AddLocked();
  }

  // The lock let go of around slow work and taken again.
  int AddAroundWork() {
    fabric::MutexLock lock(mu_);
    int before = n_;
    lock.Unlock();
    int work = before * 2;
    lock.Lock();
    n_ += work;
    return n_;
  }

  bool WaitZero() {
    fabric::MutexLock lock(mu_);
    return cv_.wait_for(lock.native(), std::chrono::milliseconds(1),
                        [this]() REQUIRES(mu_) { return n_ == 0; });
  }

  void AddLocked() REQUIRES(mu_) { ++n_; }

#if CASE == 1
  // A GUARDED_BY member read without its mutex.
  int Unlocked() { return n_; }
#elif CASE == 2
  // A REQUIRES function called without the mutex.
  void CallUnlocked() { AddLocked(); }
#elif CASE == 3
  // Written after MutexLock::Unlock().
  void AfterUnlock() {
    fabric::MutexLock lock(mu_);
    lock.Unlock();
    n_ = 0;
  }
#elif CASE == 4
  // A wait predicate not marked REQUIRES (the analysis checks the lambda
  // on its own).
  bool WaitUnmarked() {
    fabric::MutexLock lock(mu_);
    return cv_.wait_for(lock.native(), std::chrono::milliseconds(1),
                        [this] { return n_ == 0; });
  }
#elif CASE == 5
  // Mutex::lock() without unlock(): still held at the end.
  void Leak() {
    mu_.lock();
    ++n_;
  }
#endif

 private:
  fabric::Mutex mu_;
  std::condition_variable cv_;
  int n_ GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.Add();
  c.AddAroundWork();
  c.WaitZero();
  return 0;
}
