// Outside systemd (no $NOTIFY_SOCKET) the notifier does nothing and never
// loads libsystemd; the path through a real notify socket is covered by
// DaemonTest.NotifiesSystemdReadyWatchdogStopping.
#include "daemon/systemd_notify.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace fabric {
namespace {

TEST(SystemdNotifyTest, OutsideSystemdNothingIsSentOrLoaded) {
  ::unsetenv("NOTIFY_SOCKET");  // before the first call, which decides
  ::setenv("WATCHDOG_USEC", "100000", 1);  // ignored without a socket
  EXPECT_FALSE(SystemdNotify("READY=1"));
  EXPECT_EQ(SystemdWatchdogUsec(), 0u);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libsystemd"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace fabric
