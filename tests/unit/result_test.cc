// core/result.h: a Result holds either its value or an error, never both,
// and says which; a source can return either directly.
#include "core/result.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace fabric {
namespace {

Result<std::string> ReadLike(int error) {
  if (error != 0) return ErrnoError(error);
  return std::string("4\n");
}

TEST(Result, HoldsTheValueOrTheError) {
  const Result<std::string> ok = ReadLike(0);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "4\n");
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_FALSE(ok.error());

  const Result<std::string> failed = ReadLike(ENODEV);
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), std::errc::no_such_device);
  // What skip reasons print: strerror's text.
  EXPECT_EQ(failed.error().message(), std::generic_category().message(ENODEV));
}

TEST(Result, TakesAnErrcAndMovesTheValueOut) {
  Result<std::vector<int>> r = std::errc::bad_message;
  EXPECT_EQ(r.error(), std::errc::bad_message);
  r = std::vector<int>{1, 2, 3};
  ASSERT_TRUE(r.ok());
  std::vector<int> taken = std::move(r).value();
  EXPECT_EQ(taken.size(), 3u);
}

// Reading the value of a failure is a bug; it throws (the daemon's runner
// turns that into a failed collection) instead of reading garbage.
TEST(Result, ValueOfAFailureThrows) {
  const Result<int> r = std::errc::timed_out;
  EXPECT_THROW((void)r.value(), std::bad_variant_access);
}

}  // namespace
}  // namespace fabric
