// MISSING_DEPENDENCY(why): a test that needs a tool scripts/setup.sh
// installs (prometheus, promtool, ip, ...) skips without it on a
// developer's machine, but fails under CI=true, where a missing dependency is
// a broken setup, not a reason to run less. Use at the top of a test body or
// SetUp().
//
// Thread-safety: reads the environment only.
#pragma once

#include <gtest/gtest.h>

#include "tests/support/in_ci.h"

#define MISSING_DEPENDENCY(why)                                   \
  do {                                                            \
    if (::fabric::testing::InCi()) FAIL() << why << " (CI=true)"; \
    GTEST_SKIP() << why;                                          \
  } while (0)
