// MISSING_DEPENDENCY(why): a test that needs a tool scripts/setup.sh
// installs (prometheus, promtool, ip, ...) skips without it on a
// developer's machine, but fails under CI=true, where a missing dependency is
// a broken setup, not a reason to run less. Use at the top of a test body or
// SetUp().
//
// Thread-safety: reads the environment only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace fabric::testing {

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace fabric::testing

#define MISSING_DEPENDENCY(why)                                   \
  do {                                                            \
    if (::fabric::testing::InCi()) FAIL() << why << " (CI=true)"; \
    GTEST_SKIP() << why;                                          \
  } while (0)
