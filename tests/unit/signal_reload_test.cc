// Tests for daemon/signal_reload.h: --signal-reload signals only a
// fabricmon, never PID 1 or itself, and under systemd only the unit's main
// process; checked on a fake /proc, so no process is ever signalled here.
#include "daemon/signal_reload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SignalReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    env_.proc = dir_.path();
    env_.self_pid = 500;
    Process("self", "fabricmon", "/usr/bin/fabricmon",
            "0::/system.slice/"
            "fabricmon.service\n");
    Process("1", "systemd", "/usr/lib/systemd/systemd", "0::/init.scope\n");
    Process("4242", "fabricmon", "/usr/bin/fabricmon (deleted)",
            "0::/system.slice/fabricmon.service\n");
    Process("77", "sshd", "/usr/sbin/sshd", "0::/system.slice/ssh.service\n");
    Process("78", "fabricmon", "/usr/bin/fabricmon",
            "0::/system.slice/fabricmon-lab.service\n");
    // comm truncated or renamed, the executable still fabricmon.
    Process("79", "fm:main", "/opt/fabricmon/bin/fabricmon",
            "0::/system.slice/fabricmon.service\n");
  }

  void Process(const std::string& pid, const std::string& comm,
               const std::string& exe, const std::string& cgroup) {
    const fs::path d = fs::path(dir_.path()) / pid;
    fs::create_directories(d);
    std::ofstream(d / "comm") << comm << "\n";
    std::ofstream(d / "cgroup") << cgroup;
    fs::create_symlink(exe, d / "exe");
  }

  testing::TempDir dir_;
  ReloadTargetEnv env_;
};

TEST_F(SignalReloadTest, AcceptsAFabricmon) {
  EXPECT_EQ(CheckReloadTarget(4242, env_), "");
  EXPECT_EQ(CheckReloadTarget(79, env_), "");
}

TEST_F(SignalReloadTest, RefusesInitItselfAndOtherPrograms) {
  EXPECT_THAT(CheckReloadTarget(1, env_), HasSubstr("PID 1 is the init"));
  EXPECT_THAT(CheckReloadTarget(500, env_), HasSubstr("this fabricmon"));
  EXPECT_THAT(CheckReloadTarget(77, env_),
              HasSubstr("PID 77 is \"sshd\", not a fabricmon"));
  EXPECT_THAT(CheckReloadTarget(9999, env_), HasSubstr("is not running"));
  EXPECT_THAT(CheckReloadTarget(0, env_), HasSubstr("not a process ID"));
}

// PID 1 is refused even when it calls itself fabricmon (a container whose
// init is the daemon is signalled with `kill`, never through this).
TEST_F(SignalReloadTest, RefusesPid1WhateverItsName) {
  fs::remove_all(fs::path(dir_.path()) / "1");
  Process("1", "fabricmon", "/usr/bin/fabricmon", "0::/\n");
  EXPECT_THAT(CheckReloadTarget(1, env_), HasSubstr("init process"));
}

TEST_F(SignalReloadTest, UnderSystemdOnlyTheUnitsMainProcess) {
  env_.under_systemd = true;
  env_.main_pid = 4242;
  EXPECT_EQ(CheckReloadTarget(4242, env_), "");
  EXPECT_THAT(CheckReloadTarget(79, env_),
              HasSubstr("not the unit's main process ($MAINPID is 4242)"));
  env_.main_pid.reset();
  EXPECT_EQ(CheckReloadTarget(79, env_), "");
  EXPECT_THAT(CheckReloadTarget(78, env_), HasSubstr("another unit"));
  env_.under_systemd = false;
  EXPECT_EQ(CheckReloadTarget(78, env_), "");
}

TEST_F(SignalReloadTest, SignalReloadRefusesWithExitOne) {
  // Refused before kill(2): nothing is sent to the real PID 1.
  EXPECT_EQ(SignalReload(1, env_), 1);
  EXPECT_EQ(SignalReload(77, env_), 1);
}

}  // namespace
}  // namespace fabric
