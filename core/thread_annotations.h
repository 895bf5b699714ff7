// Clang thread-safety annotations and the mutex they check: a member marked
// GUARDED_BY(mu_) may be touched only while mu_ is held, and clang's
// -Wthread-safety (scripts/thread_safety.sh, run by scripts/test.sh) fails the
// build when it is not. GCC ignores the attributes.
//
// std::mutex carries no annotations in libstdc++, so guarded state uses
// fabric::Mutex and fabric::MutexLock; a condition variable waits on
// MutexLock::native() (std::condition_variable_any is not needed).
//
// Thread-safety: Mutex is a mutex; MutexLock belongs to the thread that made
// it.
#pragma once

#include <mutex>

#if defined(__clang__)
#define FABRIC_TSA(x) __attribute__((x))
#else
#define FABRIC_TSA(x)
#endif

#define CAPABILITY(x) FABRIC_TSA(capability(x))
#define SCOPED_CAPABILITY FABRIC_TSA(scoped_lockable)
#define GUARDED_BY(x) FABRIC_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) FABRIC_TSA(pt_guarded_by(x))
#define REQUIRES(...) FABRIC_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) FABRIC_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) FABRIC_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FABRIC_TSA(release_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS FABRIC_TSA(no_thread_safety_analysis)

namespace fabric {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock() and Lock() let go of it and take it
// again within the scope. native() is the std::unique_lock a
// std::condition_variable waits on (the wait releases and re-takes the same
// mutex, so the analysis' view that it is held stays true). A wait's
// predicate is a lambda, which the analysis checks on its own: mark it
// REQUIRES(mu) (`[&]() REQUIRES(mu_) { return done_; }`).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.native()) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace fabric
