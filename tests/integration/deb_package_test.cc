// The .deb end to end: cpack builds it from this build tree (twice, as
// releases 1 and 2), and the real dpkg installs, upgrades, removes and
// purges it with its real maintainer scripts.
//
// Where: an overlay of the whole root filesystem (lower: /, upper: a temp
// dir) mounted in a private mount namespace and entered with chroot. dpkg
// sees the machine's real package database, libraries and tools (so
// Depends are checked for real, systemd-sysusers and deb-systemd-helper
// really run), and every write lands in the upper dir, which the test
// removes: nothing reaches the real system, and a parallel apt/dpkg on the
// shared machine neither blocks nor is blocked (dpkg's lock is the
// overlay's). No systemd runs here (PID 1 is not systemd), so inside the
// overlay /run/systemd/system exists and `systemctl` is a wrapper that logs
// its arguments, answers is-active from a flag file and ignores the runtime
// actions (kStubSystemctl): the test checks what the scripts ask systemd to
// do (start on a first install, try-restart on upgrade, stop only on
// removal), not systemd.
// Docker's policy-rc.d (deny everything) is removed inside the overlay.
//
// Needs root (mount, chroot), unshare, cpack, dpkg: skips without them,
// fails under CI=true.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/ci.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string output;
};

// Runs `command` through /bin/sh, stdout and stderr together, stdin empty.
Result Shell(const std::string& command) {
  Result r;
  FILE* p = ::popen((command + " </dev/null 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
    r.output.append(buf.data(), n);
  }
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool HaveTool(const char* tool) {
  return Shell(std::string("command -v ") + tool).rc == 0;
}

// The systemctl inside the overlay: logs its arguments; is-active answers
// from a flag file; the runtime actions (there is no systemd to act on) do
// nothing; everything else (preset, enable, disable, is-enabled, which
// deb-systemd-helper and -invoke use) is the real systemctl, moved to
// systemctl.real, working offline on the overlay (--root=/: with
// /run/systemd/system present it would look for a bus).
constexpr const char* kStubSystemctl = R"(#!/bin/sh
echo "$*" >> /root/systemctl.log
for arg in "$@"; do
  case "$arg" in
    is-active) [ -e /root/fabricmon-active ]; exit $? ;;
    daemon-reload|start|stop|restart|try-restart|reload) exit 0 ;;
  esac
done
exec /usr/bin/systemctl.real --root=/ "$@"
)";

class DebPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root (mount, chroot)");
    for (const char* tool : {"unshare", "cpack", "dpkg", "dpkg-shlibdeps"}) {
      if (!HaveTool(tool)) MISSING_DEPENDENCY(std::string(tool) + " missing");
    }
    char tmpl[] = "/tmp/fabricmon-deb-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"upper/root", "work", "merged", "pkg"}) {
      fs::create_directories(dir_ / d);
    }
  }
  void TearDown() override {
    // The namespaces ended with their processes: no mount is left.
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Builds the package as Debian release `release`; returns its file name.
  std::string BuildPackage(int release) {
    const fs::path out = dir_ / "pkg" / std::to_string(release);
    const Result r =
        Shell("cd " + Quote(testing::BinaryDir()) + " && cpack -G DEB -B " +
              Quote(out.string()) +
              " -D CPACK_DEBIAN_PACKAGE_RELEASE=" + std::to_string(release));
    EXPECT_EQ(r.rc, 0) << r.output;
    for (const auto& e : fs::directory_iterator(out)) {
      if (e.path().extension() == ".deb") {
        fs::copy_file(e.path(), dir_ / "upper/root" / e.path().filename());
        return e.path().filename().string();
      }
    }
    ADD_FAILURE() << "no .deb in " << out << ": " << r.output;
    return "";
  }

  // Runs `script` with /bin/sh chrooted into the overlay.
  Result InOverlay(const std::string& script) {
    {
      std::ofstream f(dir_ / "upper/root/step.sh", std::ios::trunc);
      f << "set -e\n" << script << "\n";
    }
    const std::string m = (dir_ / "merged").string();
    const std::string inner =
        "mount -t overlay overlay -o lowerdir=/,upperdir=" +
        (dir_ / "upper").string() + ",workdir=" + (dir_ / "work").string() +
        " " + m + " && mount --rbind /dev " + m +
        "/dev && mount -t proc proc " + m + "/proc && exec chroot " + m +
        " /bin/sh /root/step.sh";
    return Shell("unshare -m -- sh -c " + Quote(inner));
  }

  bool ExistsInOverlay(const std::string& path) {
    return InOverlay("test -e " + Quote(path) + " || test -L " + Quote(path))
               .rc == 0;
  }

  std::string TakeSystemctlLog() {
    return InOverlay(
               "cat /root/systemctl.log 2>/dev/null || true; "
               ": > /root/systemctl.log")
        .output;
  }

  fs::path dir_;
};

TEST_F(DebPackage, InstallsUpgradesRemovesAndPurgesWithItsMaintainerScripts) {
  const std::string deb1 = BuildPackage(1);
  const std::string deb2 = BuildPackage(2);
  ASSERT_FALSE(deb1.empty());
  ASSERT_FALSE(deb2.empty());

  // A systemd that is "running" (stub), no policy-rc.d, and no package or
  // user left from anything else.
  Result r = InOverlay(std::string("rm -f /usr/sbin/policy-rc.d\n"
                                   "mkdir -p /run/systemd/system\n"
                                   "mv /usr/bin/systemctl "
                                   "/usr/bin/systemctl.real\n"
                                   "cat > /usr/bin/systemctl <<'EOF'\n") +
                       kStubSystemctl +
                       "EOF\n"
                       "chmod 755 /usr/bin/systemctl\n"
                       "! dpkg -s fabricmon >/dev/null 2>&1\n");
  ASSERT_EQ(r.rc, 0) << "fabricmon is already installed on this machine? "
                     << r.output;

  // First install: user and group, enabled, started, conffile, Depends.
  r = InOverlay("dpkg -i /root/" + deb1);
  ASSERT_EQ(r.rc, 0) << r.output;
  std::string calls = TakeSystemctlLog();
  EXPECT_NE(calls.find("daemon-reload"), std::string::npos) << calls;
  EXPECT_NE(calls.find("--system start fabricmon.service"), std::string::npos)
      << calls;
  EXPECT_NE(calls.find("start fabricmon-mad-broker.socket"), std::string::npos)
      << calls;
  r = InOverlay(
      "getent passwd fabricmon && getent group fabricmon\n"
      "/usr/bin/fabricmon --version\n"
      "/usr/bin/fabricmon --check-config\n"
      "/usr/bin/fabricmon-sim --help >/dev/null\n"
      "grep -x 'ExecStart=/usr/bin/fabricmon "
      "--mad.broker=/run/fabricmon-mad/broker.sock $FABRICMON_ARGS' "
      "/usr/lib/systemd/system/fabricmon.service\n"
      "grep -x 'ExecStartPre=/usr/bin/fabricmon --check-config "
      "$FABRICMON_ARGS' /usr/lib/systemd/system/fabricmon.service\n"
      ". /etc/default/fabricmon && test -z \"$FABRICMON_ARGS\"\n"
      "/usr/bin/fabricmon-mad --help >/dev/null\n"
      "grep -x 'Group=fabricmon' /usr/lib/systemd/system/fabricmon.service\n"
      "test -L /etc/systemd/system/multi-user.target.wants/fabricmon.service\n"
      "grep -q 'GROUP=\"fabricmon-mad\"' "
      "/usr/lib/udev/rules.d/70-fabricmon-umad.rules\n"
      "getent passwd fabricmon-mad\n"
      "/usr/bin/fabricmon-mad-broker --help >/dev/null\n"
      "test -f /usr/lib/systemd/system/fabricmon-mad-broker.socket\n"
      "test -f '/usr/lib/systemd/system/fabricmon-mad-broker@.service'\n"
      "test -L /etc/systemd/system/sockets.target.wants/"
      "fabricmon-mad-broker.socket\n"
      "test -f /usr/lib/sysusers.d/fabricmon.conf\n"
      "test -f /usr/share/fabricmon/dashboards/fabric-overview.json\n"
      "test -f /usr/share/fabricmon/rules/alerting_rules.yml\n"
      "test -f /usr/share/fabricmon/runbooks/README.md\n"
      "for f in vmagent-fabricmon@.service vmalert-fabricmon.service "
      "scrape.yml prometheus-remote-write.yml targets.example.json "
      "fabricmon-vm.default victoria-metrics.default metricsql-rules.sh; do "
      "test -f \"/usr/share/fabricmon/victoriametrics/$f\"; done\n"
      "test ! -e /usr/lib/systemd/system/vmalert-fabricmon.service\n"
      "/usr/bin/fabricmon --check-config --config "
      "/usr/share/doc/fabricmon/examples/fleet.yaml\n"
      "dpkg-query -W -f='${Conffiles}\\n' fabricmon | "
      "grep -q ' /etc/fabricmon/fabricmon.yaml '\n"
      "dpkg-query -W -f='${Conffiles}\\n' fabricmon | "
      "grep -q ' /etc/default/fabricmon '\n"
      "dpkg-query -W -f='${Depends}\\n' fabricmon\n");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("libc6"), std::string::npos)
      << "Depends without shlibdeps: " << r.output;
  // shlibdeps saw the gRPC module's libraries too.
  if (fs::exists(testing::BinaryDir() + "/libfabricmon_grpc.so")) {
    EXPECT_NE(r.output.find("libgrpc++"), std::string::npos) << r.output;
  }
  if (fs::exists(testing::BinaryDir() + "/lib/libfabricmon_osm.so")) {
    r = InOverlay(
        "test -f /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null"
        " || gcc -print-multiarch)/libfabricmon_osm.so");
    EXPECT_EQ(r.rc, 0) << "OpenSM plugin not in the multiarch dir";
  }
  // The gRPC module (collectors/grpc_module.h): under the multiarch libdir,
  // not linked by the daemon, and found by the installed daemon once the
  // pods collector has a socket. The socket listens and never answers: only
  // a loaded module can call List and report its deadline.
  if (fs::exists(testing::BinaryDir() + "/libfabricmon_grpc.so")) {
    r = InOverlay(
        "m=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null"
        " || gcc -print-multiarch)/fabricmon/libfabricmon_grpc.so\n"
        "test -f \"$m\"\n"
        "! readelf -d /usr/bin/fabricmon | grep -q 'NEEDED.*libgrpc'\n"
        "python3 -c 'import socket, time; s = socket.socket(socket.AF_UNIX); "
        "s.bind(\"/tmp/k.sock\"); s.listen(); time.sleep(60)' &\n"
        "for i in $(seq 100); do test -S /tmp/k.sock && break; sleep 0.1; "
        "done\n"
        "printf 'collectors:\\n  pods: {socket: /tmp/k.sock, deadline: "
        "500ms}\\n' > /tmp/pods.yaml\n"
        "/usr/bin/fabricmon --once --config /tmp/pods.yaml 2>&1 >/dev/null"
        " | grep 'pods: List on /tmp/k.sock'\n"
        "kill $!\n");
    EXPECT_EQ(r.rc, 0) << "gRPC module not installed or not found: "
                       << r.output;
  }

  // The admin edits the config and disables the service; it is running.
  r = InOverlay(
      "echo '# local edit' >> /etc/fabricmon/fabricmon.yaml\n"
      "systemctl disable fabricmon.service\n"
      "touch /root/fabricmon-active\n"
      ": > /root/systemctl.log\n");
  ASSERT_EQ(r.rc, 0) << r.output;

  // Upgrade: kept edit (no prompt: stdin is empty, a prompt would fail),
  // still disabled, not stopped, try-restarted (running -> new binary).
  r = InOverlay("dpkg -i /root/" + deb2);
  ASSERT_EQ(r.rc, 0) << r.output;
  calls = TakeSystemctlLog();
  EXPECT_NE(calls.find("try-restart fabricmon.service"), std::string::npos)
      << calls;
  EXPECT_EQ(calls.find("stop"), std::string::npos) << calls;
  EXPECT_EQ(calls.find(" start "), std::string::npos) << calls;
  r = InOverlay(
      "dpkg-query -W -f='${Version}\\n' fabricmon\n"
      "grep -qx '# local edit' /etc/fabricmon/fabricmon.yaml\n"
      "! test -e "
      "/etc/systemd/system/multi-user.target.wants/fabricmon.service\n");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("0.1.0-2"), std::string::npos) << r.output;

  // Remove: stopped, binaries gone, the edited conffile stays.
  r = InOverlay("dpkg -r fabricmon");
  ASSERT_EQ(r.rc, 0) << r.output;
  calls = TakeSystemctlLog();
  EXPECT_NE(calls.find("stop fabricmon.service"), std::string::npos) << calls;
  EXPECT_FALSE(ExistsInOverlay("/usr/bin/fabricmon"));
  EXPECT_FALSE(ExistsInOverlay("/usr/lib/systemd/system/fabricmon.service"));
  EXPECT_TRUE(ExistsInOverlay("/etc/fabricmon/fabricmon.yaml"));

  // Purge: the conffile and the unit's enablement state go too.
  r = InOverlay("dpkg -P fabricmon");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_FALSE(ExistsInOverlay("/etc/fabricmon/fabricmon.yaml"));
  EXPECT_FALSE(ExistsInOverlay("/etc/systemd/system/fabricmon.service"));
  EXPECT_NE(InOverlay("dpkg -s fabricmon").rc, 0);
}

}  // namespace
}  // namespace fabric
