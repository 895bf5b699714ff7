// Shell commands and network namespaces for the integration tests that
// build their own networks (ip, nft, ethtool): one copy for every test.
//
//   Sh(cmd)            runs `cmd` with /bin/sh, output discarded; true on
//                      exit status 0 (a probe for a tool may fail: quiet);
//   ShOrFail(cmd)      the same, and a failed command is a test failure
//                      naming it;
//   InNetns(ns, fn)    runs fn on a thread that entered /run/netns/<ns>
//                      (setns(2) changes only the calling thread's
//                      namespace, so the test's own thread stays home) and
//                      returns fn's result; a value-initialised result, and
//                      *entered false, when the namespace cannot be entered.
//
// Thread-safety: Sh may run on any thread; InNetns joins its thread before
// returning.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>

namespace fabric::testing {

inline bool Sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

inline bool ShOrFail(const std::string& cmd) {
  const bool ok = Sh(cmd);
  if (!ok) ADD_FAILURE() << "failed: " << cmd;
  return ok;
}

// Moves the calling thread into netns `ns`; false when it cannot.
inline bool EnterNetns(const std::string& ns) {
  const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

template <typename Fn>
auto InNetns(const std::string& ns, Fn fn, bool* entered = nullptr)
    -> decltype(fn()) {
  using R = decltype(fn());
  bool in = false;
  if constexpr (std::is_void_v<R>) {
    std::thread t([&] {
      if ((in = EnterNetns(ns))) fn();
    });
    t.join();
    if (entered) *entered = in;
  } else {
    R result{};
    std::thread t([&] {
      if ((in = EnterNetns(ns))) result = fn();
    });
    t.join();
    if (entered) *entered = in;
    return result;
  }
}

}  // namespace fabric::testing
