// Tests for daemon/reload_verdict.h: the verdict line, and --signal-reload
// waiting for a verdict that covers its own SIGHUP (a fake `send` plays the
// daemon by writing the file; no process is signalled).
#include "daemon/reload_verdict.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using std::chrono::milliseconds;

TEST(ReloadVerdictTest, LineRoundTripsAndRefusesGarbage) {
  const ReloadVerdict rejected{7, 6, false, "config error: x (line 3)\nmore"};
  const auto back = ParseReloadVerdict(FormatReloadVerdict(rejected));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->received, 7u);
  EXPECT_EQ(back->covered, 6u);
  EXPECT_FALSE(back->ok);
  EXPECT_EQ(back->why, "config error: x (line 3) more");
  const auto ok = ParseReloadVerdict("3 3 ok\n");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->ok);
  for (const char* bad :
       {"", "3 ok", "x 1 ok", "1 1 maybe", "1 1", "-1 0 ok"}) {
    EXPECT_FALSE(ParseReloadVerdict(bad)) << bad;
  }
}

TEST(ReloadVerdictTest, PathIsTheFirstRuntimeDirectory) {
  EXPECT_EQ(ReloadVerdictPath(nullptr), "");
  EXPECT_EQ(ReloadVerdictPath(""), "");
  EXPECT_EQ(ReloadVerdictPath("/run/fabricmon:/run/other"),
            "/run/fabricmon/reload-verdict");
}

class AwaitVerdictTest : public ::testing::Test {
 protected:
  void Write(const ReloadVerdict& v) {
    std::string error;
    ASSERT_TRUE(WriteReloadVerdict(path_, v, &error)) << error;
  }
  testing::TempDir dir_;
  const std::string path_ = dir_.path() + "/reload-verdict";
};

TEST_F(AwaitVerdictTest, WithoutAFileItOnlySends) {
  int sent = 0;
  EXPECT_EQ(SignalAndAwaitVerdict(
                path_, [&] { return ++sent > 0; }, milliseconds(10)),
            0);
  EXPECT_EQ(sent, 1);
  EXPECT_EQ(SignalAndAwaitVerdict(
                "", [] { return false; }, milliseconds(10)),
            1);
}

TEST_F(AwaitVerdictTest, TheVerdictCoveringOurSignalDecides) {
  Write({4, 4, true, ""});
  // The daemon receives ours as the 5th, then rejects the reload.
  EXPECT_EQ(SignalAndAwaitVerdict(
                path_,
                [&] {
                  Write({5, 5, false, "config error: y"});
                  return true;
                },
                milliseconds(5000)),
            1);
  EXPECT_EQ(SignalAndAwaitVerdict(
                path_,
                [&] {
                  Write({6, 6, true, ""});
                  return true;
                },
                milliseconds(5000)),
            0);
}

TEST_F(AwaitVerdictTest, AnOlderReloadsVerdictIsNotOurs) {
  Write({4, 3, true, ""});
  // Received but still reading (covered 4 < ours 5): no verdict in time.
  EXPECT_EQ(SignalAndAwaitVerdict(
                path_,
                [&] {
                  Write({5, 4, true, ""});
                  return true;
                },
                milliseconds(200)),
            1);
}

}  // namespace
}  // namespace fabric
