// The shipped unit (systemd/fabricmon.service), udev rule and sysusers.d
// entry agree with each other, and `systemd-analyze security --offline`
// scores the unit at most 1.5 (issue 14; 1.1 at the time of writing) while
// it still grants what the daemon needs: the umad devices (device ACL, the
// bind-mounted /dev/infiniband, the group the udev rule names), the
// network families for scrapes, probes and netlink, the OpenSM socket's
// runtime directory and the watchdog. The unit running for real under a
// systemd PID 1: tests/integration/systemd_nspawn_test.cc.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/ci.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

std::string Read(const std::string& relative) {
  std::ifstream in(testing::SourceDir() + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(SystemdUnit, GrantsWhatTheDaemonNeedsAndNoMore) {
  const std::string unit = Read("systemd/fabricmon.service");
  ASSERT_FALSE(unit.empty());
  for (const char* line :
       {"Type=notify", "WatchdogSec=30", "NotifyAccess=main",
        "RuntimeDirectory=fabricmon", "User=fabricmon", "Group=fabricmon",
        "DynamicUser=yes", "PrivateDevices=yes", "BindPaths=-/dev/infiniband",
        "DeviceAllow=char-infiniband_mad rw",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
        "CapabilityBoundingSet=", "AmbientCapabilities=", "NoNewPrivileges=yes",
        "PrivateUsers=yes"}) {
    EXPECT_TRUE(HasLine(unit, line)) << "missing: " << line;
  }
  // Nothing that would cut the daemon off from its peers or scrapers.
  EXPECT_FALSE(HasLine(unit, "PrivateNetwork=yes"));
  EXPECT_EQ(unit.find("\nIPAddressDeny="), std::string::npos);
}

TEST(SystemdUnit, UdevRuleAndSysusersNameTheUnitsGroup) {
  const std::string rule = Read("systemd/70-fabricmon-umad.rules");
  EXPECT_TRUE(HasLine(rule,
                      "SUBSYSTEM==\"infiniband_mad\", KERNEL==\"umad*\", "
                      "GROUP=\"fabricmon\", MODE=\"0660\""))
      << rule;
  // issm* (IsSM) must stay root-only: the rule matches umad* only.
  EXPECT_EQ(rule.find("issm*\""), std::string::npos);
  const std::string sysusers = Read("systemd/fabricmon.sysusers");
  EXPECT_NE(sysusers.find("\nu fabricmon "), std::string::npos) << sysusers;
}

TEST(SystemdUnit, ExposureAtMostOnePointFive) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0) {
    MISSING_DEPENDENCY("systemd-analyze missing");
  }
  const std::string command = "systemd-analyze security --offline=yes " +
                              testing::SourceDir() +
                              "/systemd/fabricmon.service 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) {
    out.append(buf.data(), n);
  }
  ::pclose(p);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex(R"(Overall exposure level for \S+: ([0-9.]+))")))
      << out;
  EXPECT_LE(std::stod(m[1].str()), 1.5) << out;
}

}  // namespace
}  // namespace fabric
