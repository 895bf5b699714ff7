// InCi(): whether the tests run under CI (CI=true), where a missing tool is
// a broken setup and fails the test instead of skipping it. Without gtest,
// so benches can share it (tests/support/ci.h and ibsim_fabric.h use it).
//
// Thread-safety: reads the environment only.
#pragma once

#include <cstdlib>
#include <string>

namespace fabric::testing {

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace fabric::testing
