// fabricmon.service under a real systemd: the .deb built from this tree
// (cpack) is installed with apt into a minimal Debian 12 booted with
// systemd-nspawn (nspawn_machine.h), and the unit is driven through
// systemctl, read through journalctl and scraped from the host:
// install (apt resolves the Depends), start (READY, /metrics, a clean
// journal), reload (applied; a bad file refused, the old config serving),
// the probe key delivered with LoadCredential=, the watchdog restarting a
// SIGSTOPped daemon, the sandbox (no SIGSYS), a clean stop, remove and
// purge. One scenario in one test: each step needs the state the one
// before it left, and a boot plus an install costs tens of seconds.
//
// The MAD broker's units too: the socket, one broker instance per
// connection in its own sandbox (its syscall filter made fatal as the
// daemon's is), and the daemon's unit without the umad devices.
// The kubelet relay's units too: fabricmon-kubelet.socket and its
// systemd-socket-proxyd between the daemon and a stand-in kubelet
// (tests/helpers/kubelet_stub.cc) on the kubelet's root-only socket.
// Not covered here: MADs to a fabric (the container has none; the broker
// against ibsim is mad_broker_ibsim_test).
//
// Needs root, debootstrap, systemd-nspawn, nsenter, cpack and the mirror:
// skips without them, fails under CI=true. The first run debootstraps the
// root into the build directory (a few minutes); later runs reuse it.
// No timing assertions: waits poll with a generous bound.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/nspawn_machine.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/in_ci.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::NspawnMachine;
using testing::ShellQuote;
using testing::ShellResult;

constexpr auto kPatience = std::chrono::seconds(90);
constexpr const char* kConfig = "/etc/fabricmon/fabricmon.yaml";
constexpr const char* kDropIns = "/etc/systemd/system/fabricmon.service.d";
constexpr const char* kBrokerDropIns =
    "/etc/systemd/system/fabricmon-mad-broker@.service.d";

// Polls `done` until it holds or kPatience passes.
bool WaitFor(const std::function<bool()>& done) {
  return fabric::testing::WaitFor(done, kPatience,
                                  std::chrono::milliseconds(250));
}

class SystemdNspawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) MISSING_DEPENDENCY("needs root (systemd-nspawn)");
    for (const char* tool : {"debootstrap", "systemd-nspawn", "nsenter",
                             "cpack", "dpkg-shlibdeps"}) {
      if (testing::Shell(std::string("command -v ") + tool).rc != 0) {
        MISSING_DEPENDENCY(std::string(tool) + " missing");
      }
    }
    char tmpl[] = "/tmp/fabricmon-nspawn-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::string error;
    const std::string root = NspawnMachine::CachedRoot(&error);
    ASSERT_FALSE(root.empty()) << error;
    const ShellResult deb =
        testing::Shell("cd " + ShellQuote(testing::BinaryDir()) +
                       " && cpack -G DEB -B " + ShellQuote(dir_ / "pkg"));
    ASSERT_EQ(deb.rc, 0) << deb.output;
    port_ = testing::FreeLoopbackPort();
    probe_port_ = testing::FreeLoopbackPort();
    machine_.emplace();
    ASSERT_TRUE(machine_->Boot(root, {(dir_ / "pkg").string() + ":/root/pkg"},
                               (dir_ / "console.log").string(), &error))
        << error
        << testing::Shell("cat " + ShellQuote(dir_ / "console.log")).output;
  }
  void TearDown() override {
    machine_.reset();  // powered off before its bind mount's source goes
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  ShellResult In(const std::string& script) { return machine_->Run(script); }

  // `systemctl show fabricmon.service` properties by name.
  std::map<std::string, std::string> Show() {
    std::map<std::string, std::string> props;
    std::istringstream in(
        In("systemctl show fabricmon.service -p ActiveState -p SubState "
           "-p StatusText -p MainPID -p NRestarts -p Result -p "
           "ExecMainStatus -p LoadState")
            .output);
    std::string line;
    while (std::getline(in, line)) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) {
        props[line.substr(0, eq)] = line.substr(eq + 1);
      }
    }
    return props;
  }

  // The unit's journal (message text), all of it or after `cursor`.
  std::string Journal(const std::string& cursor = "") {
    return In("journalctl -u fabricmon.service -o cat --no-pager" +
              (cursor.empty() ? "" : " --after-cursor=" + ShellQuote(cursor)))
        .output;
  }
  std::string Cursor() {
    const std::string out =
        In("journalctl -u fabricmon.service -n 0 --show-cursor --no-pager")
            .output;
    const auto at = out.find("-- cursor: ");
    if (at == std::string::npos) return "";
    std::string c = out.substr(at + 11);
    return c.substr(0, c.find('\n'));
  }

  std::string Scrape() {
    return testing::HttpGetOk(port_, "/metrics").value_or("");
  }

  std::string Config(const std::string& collectors) {
    return "listen_address: \"127.0.0.1:" + std::to_string(port_) +
           "\"\nlog_level: info\n" + collectors;
  }
  void WriteConfig(const std::string& text) {
    ASSERT_EQ(In("mkdir -p /etc/fabricmon && cat > " + std::string(kConfig) +
                 " <<'EOF'\n" + text + "EOF\n")
                  .rc,
              0);
  }

  void Install();
  void Start();
  void Reload();
  void Credentials();
  void Watchdog();
  void Sandbox();
  void Broker();
  void KubeletRelay();
  void Stop();
  void RemoveAndPurge();

  fs::path dir_;
  std::optional<NspawnMachine> machine_;
  int port_ = 0;
  int probe_port_ = 0;
  std::string installed_;  // `dpkg -L fabricmon`, files only
};

// apt installs the .deb and whatever its Depends name from the mirror. The
// config is there before the package (as configuration management puts
// it): dpkg keeps it (--force-confold) and it counts as changed by the
// user; the postinst starts the service on it.
// So is a drop-in that turns a call SystemCallFilter= refuses from EPERM
// (the unit's SystemCallErrorNumber=, which a daemon could survive
// unnoticed) into SIGSYS for the whole run: every command of the unit,
// ExecStartPre and ExecReload included, in every step below.
void SystemdNspawnTest::Install() {
  ASSERT_NO_FATAL_FAILURE(WriteConfig(Config("")));
  ASSERT_EQ(In("mkdir -p " + std::string(kDropIns) +
               " && printf '[Service]\\nSystemCallErrorNumber=kill\\n' > " +
               kDropIns + "/sandbox.conf")
                .rc,
            0);
  // The same for the broker; and a umad node in the container's /dev, which
  // the daemon's unit must not even see (Broker() reads what it saw).
  ASSERT_EQ(In("mkdir -p " + std::string(kBrokerDropIns) +
               " && printf '[Service]\\nSystemCallErrorNumber=kill\\n' > " +
               kBrokerDropIns +
               "/sandbox.conf && "
               // A plain file does for what is checked: whether the
               // unit's /dev has the node at all (the container's device
               // policy would refuse opening a real one to everyone).
               "mkdir -p /dev/infiniband && touch /dev/infiniband/umad0 && "
               "printf '[Service]\\nExecStartPre=/bin/sh -c \"if test -e "
               "/dev/infiniband/umad0; then echo umad-visible; else echo "
               "umad-absent; fi\"\\n' > " +
               kDropIns + "/umad-check.conf")
                .rc,
            0);
  const ShellResult r =
      In("apt-get update -q -o Acquire::Languages=none && "
         "DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
         "-o Dpkg::Options::=--force-confold /root/pkg/fabricmon_*.deb");
  ASSERT_EQ(r.rc, 0) << r.output;
  // What apt pulled in for the Depends, for the log.
  const auto what = r.output.find("The following NEW packages");
  if (what != std::string::npos) std::cout << r.output.substr(what) << "\n";
  EXPECT_EQ(In("dpkg-query -W -f='${db:Status-Abbrev}' fabricmon").output,
            "ii ");
  const ShellResult check = In("apt-get check");
  EXPECT_EQ(check.rc, 0) << check.output;
  installed_ = In("dpkg -L fabricmon | while read -r f; do "
                  "[ -d \"$f\" ] || echo \"$f\"; done")
                   .output;
  EXPECT_THAT(installed_, HasSubstr("/usr/bin/fabricmon\n"));
}

// The postinst started it: READY reached (Type=notify: active/running only
// after READY=1), /metrics served, the start line logged, nothing worse
// than info.
void SystemdNspawnTest::Start() {
  ASSERT_TRUE(WaitFor([&] { return Show()["SubState"] == "running"; }))
      << In("systemctl status fabricmon.service --no-pager").output;
  auto props = Show();
  EXPECT_EQ(props["ActiveState"], "active");
  EXPECT_EQ(props["StatusText"], "serving /metrics");
  EXPECT_THAT(In("systemctl show -p DropInPaths fabricmon.service").output,
              HasSubstr("sandbox.conf"));
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    text = Scrape();
    return text.find("fabric_collector_success{collector=\"ib_port\"}") !=
           std::string::npos;
  })) << Journal();
  EXPECT_THAT(text, HasSubstr("fabric_build_info{"));
  const std::string journal = Journal();
  EXPECT_THAT(journal, HasSubstr("config /etc/fabricmon/fabricmon.yaml"));
  EXPECT_THAT(journal,
              HasSubstr("listening on 127.0.0.1:" + std::to_string(port_)));
  for (const char* level : {" warning ", " error ", " critical "}) {
    EXPECT_THAT(journal, Not(HasSubstr(level)));
  }
  // systemd's own messages about the unit at warning or worse.
  EXPECT_EQ(In("journalctl -u fabricmon.service -p warning -o cat -q "
               "--no-pager")
                .output,
            "")
      << journal;
}

// A collector switched off disappears; a bad file fails `systemctl reload`
// (ExecReload's --signal-reload waits for the daemon's verdict) with its
// key and line in the journal, and the running config keeps serving.
void SystemdNspawnTest::Reload() {
  const std::string pid = Show()["MainPID"];
  ASSERT_NO_FATAL_FAILURE(
      WriteConfig(Config("collectors:\n  ib_port:\n    enabled: false\n")));
  ShellResult r = In("systemctl reload fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output << Journal();
  ASSERT_TRUE(WaitFor([&] {
    const std::string text = Scrape();
    return text.find("fabric_build_info{") != std::string::npos &&
           text.find("collector=\"ib_port\"") == std::string::npos;
  })) << Journal();
  EXPECT_THAT(Journal(), HasSubstr("reload done"));

  const std::string cursor = Cursor();
  ASSERT_NO_FATAL_FAILURE(WriteConfig(Config(
      "collectors:\n  ib_port:\n    enabled: false\n    interval: fast\n")));
  r = In("systemctl reload fabricmon.service");
  EXPECT_NE(r.rc, 0) << r.output;
  ASSERT_TRUE(WaitFor([&] {
    return Journal(cursor).find("collectors.ib_port.interval (line 6)") !=
           std::string::npos;
  })) << Journal(cursor);
  const std::string text = Scrape();
  EXPECT_THAT(text, HasSubstr("fabric_build_info{"));
  EXPECT_THAT(text, Not(HasSubstr("collector=\"ib_port\"")));
  auto props = Show();
  EXPECT_EQ(props["ActiveState"], "active");
  EXPECT_EQ(props["MainPID"], pid);
}

// docs/deploy.md: the key as a credential (a drop-in's LoadCredential=),
// key_file `credential:probe.key`, resolved against $CREDENTIALS_DIRECTORY
// by ExecStartPre's --check-config and the daemon, at start and on reload
// (systemd 252 mounts no credentials for ExecReload: the daemon judges).
// The daemon probes itself: answers verified with that key and a probe
// collector reporting success prove it was read.
void SystemdNspawnTest::Credentials() {
  ASSERT_EQ(In("umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' "
               "> /etc/fabricmon/probe.key && mkdir -p " +
               std::string(kDropIns) +
               " && printf '[Service]\\n"
               "LoadCredential=probe.key:/etc/fabricmon/probe.key\\n' > " +
               kDropIns + "/credentials.conf")
                .rc,
            0);
  const std::string probe = "127.0.0.1:" + std::to_string(probe_port_);
  ASSERT_NO_FATAL_FAILURE(WriteConfig(
      Config("collectors:\n  probe:\n    enabled: true\n    interval: 100ms\n"
             "    listen_address: \"" +
             probe + "\"\n    peers: [\"" + probe +
             "\"]\n"
             "    key_file: credential:probe.key\n")));
  const ShellResult r =
      In("systemctl daemon-reload && systemctl restart fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output << Journal();
  std::string text;
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape();
    return text.find("fabric_collector_success{collector=\"probe\"} 1") !=
               std::string::npos &&
           text.find("fabric_probe_answered_total ") != std::string::npos &&
           text.find("fabric_probe_answered_total 0\n") == std::string::npos;
  })) << text
      << Journal();
  EXPECT_THAT(text,
              HasSubstr("fabric_probe_rejected_total{reason=\"bad_mac\"} 0"));
  // A reload: the daemon resolves the credential again, and --signal-reload
  // (in the sandbox, reading /proc) accepts $MAINPID and gets its verdict.
  std::string cursor = Cursor();
  ShellResult reload = In("systemctl reload fabricmon.service");
  EXPECT_EQ(reload.rc, 0) << reload.output << Journal(cursor);
  EXPECT_TRUE(WaitFor([&] {
    return Journal(cursor).find("reload done") != std::string::npos;
  })) << Journal(cursor);
  // A credential the unit does not load: the reload fails, naming the key
  // and its line, and the daemon keeps running on the old config.
  cursor = Cursor();
  ASSERT_NO_FATAL_FAILURE(
      WriteConfig(Config("collectors:\n  probe:\n    enabled: true\n"
                         "    listen_address: \"" +
                         probe + "\"\n    key_file: credential:other.key\n")));
  reload = In("systemctl reload fabricmon.service");
  EXPECT_NE(reload.rc, 0) << reload.output;
  EXPECT_TRUE(WaitFor([&] {
    return Journal(cursor).find("no credential other.key") != std::string::npos;
  })) << Journal(cursor);
  EXPECT_EQ(Show()["ActiveState"], "active");
}

// A wedged daemon, and one whose /metrics no longer answers, stops feeding
// the watchdog and is restarted. WatchdogSec lowered in a drop-in to keep
// the wait short.
void SystemdNspawnTest::Watchdog() {
  // The credentials step left a config the daemon refused (the running one
  // was kept): a restart's ExecStartPre would refuse it too.
  ASSERT_NO_FATAL_FAILURE(WriteConfig(Config("")));
  ASSERT_EQ(In("printf '[Service]\\nWatchdogSec=3s\\nRestartSec=1s\\n' > " +
               std::string(kDropIns) +
               "/watchdog.conf && systemctl daemon-reload && "
               "systemctl restart fabricmon.service")
                .rc,
            0);
  ASSERT_TRUE(WaitFor([&] { return Show()["SubState"] == "running"; }));
  auto before = Show();
  ASSERT_EQ(In("systemctl kill --kill-who=main --signal=SIGSTOP "
               "fabricmon.service")
                .rc,
            0);
  ASSERT_TRUE(WaitFor([&] {
    auto now = Show();
    return now["NRestarts"] != before["NRestarts"] &&
           now["SubState"] == "running" && now["MainPID"] != before["MainPID"];
  })) << Journal();
  EXPECT_EQ(std::stoi(Show()["NRestarts"]), std::stoi(before["NRestarts"]) + 1);
  EXPECT_THAT(Journal(), HasSubstr("Watchdog timeout"));
  EXPECT_TRUE(WaitFor([&] {
    return Scrape().find("fabric_build_info{") != std::string::npos;
  }));

  // A daemon whose /metrics is dead while its event loop and collections
  // run: its listening socket destroyed from the host (the container
  // shares the host's network namespace), as a descriptor shortage or a
  // broken stack could leave it. The self-check stops WATCHDOG=1 and
  // systemd restarts it.
  before = Show();
  const std::string kill =
      "ss -K -t state listening sport = :" + std::to_string(port_) +
      " >/dev/null 2>&1";
  ASSERT_EQ(std::system(kill.c_str()), 0);
  ASSERT_TRUE(WaitFor([&] {
    auto now = Show();
    return now["NRestarts"] != before["NRestarts"] &&
           now["SubState"] == "running" && now["MainPID"] != before["MainPID"];
  })) << "ss -K did not destroy the listener, or no restart followed\n"
      << Journal();
  EXPECT_THAT(Journal(), HasSubstr("the /metrics self-check got no answer"));
  EXPECT_TRUE(WaitFor([&] {
    return Scrape().find("fabric_build_info{") != std::string::npos;
  }));
}

// Nothing the unit's processes did in all of the above tripped
// SystemCallFilter= (killed with SIGSYS, status 31, by the drop-in of
// Install()). The exposure is printed.
void SystemdNspawnTest::Sandbox() {
  const std::string journal = Journal();
  EXPECT_THAT(journal, Not(HasSubstr("SIGSYS")));
  EXPECT_THAT(journal, Not(HasSubstr("status=31")));
  const ShellResult r =
      In("systemd-analyze security fabricmon.service --no-pager | tail -1");
  EXPECT_THAT(r.output, HasSubstr("Overall exposure level"));
  std::cout << "systemd-analyze security (systemd in the container): "
            << r.output;
}

// The broker's socket listens; the daemon's collections connected, which
// started fabricmon-mad-broker@ instances in their own sandbox; the sm
// collector succeeds through them (no IB ports here: a quiet success)
// and none of them died of a refused syscall. The daemon's unit could not
// see the umad node the container has (PrivateDevices, no DeviceAllow).
void SystemdNspawnTest::Broker() {
  EXPECT_EQ(In("systemctl is-active fabricmon-mad-broker.socket").output,
            "active\n");
  ASSERT_TRUE(WaitFor([&] {
    return In("systemctl list-units --no-legend --state=running "
              "'fabricmon-mad-broker@*'")
               .output.find("fabricmon-mad-broker@") != std::string::npos;
  })) << In("systemctl status 'fabricmon-mad-broker@*' --no-pager").output;
  const std::string metrics = Scrape();
  EXPECT_THAT(metrics,
              HasSubstr("fabric_collector_success{collector=\"sm\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("fabric_mad_broker_connect_failures_total 0"));
  EXPECT_THAT(
      metrics,
      HasSubstr("fabric_mad_broker_refused_total{reason=\"method\"} 0"));
  const std::string broker_journal =
      In("journalctl -u 'fabricmon-mad-broker@*' -o cat --no-pager").output;
  EXPECT_THAT(broker_journal, Not(HasSubstr("SIGSYS")));
  EXPECT_THAT(broker_journal, Not(HasSubstr("status=31")));
  const std::string journal = Journal();
  EXPECT_THAT(journal, HasSubstr("umad-absent"));
  EXPECT_THAT(journal, Not(HasSubstr("umad-visible")));
  const ShellResult r =
      In("systemd-analyze security 'fabricmon-mad-broker@1.service' --no-pager "
         "| tail -1");
  std::cout << "systemd-analyze security, broker: " << r.output;
}

// docs/jobs.md "Kubernetes pods": the packaged daemon (DynamicUser, no
// capabilities) reads the kubelet's pod-resources API only through the
// relay units. A stand-in kubelet (tests/helpers/kubelet_stub.cc: Debian's
// gRPC serving v1.PodResourcesLister/List from the same proto, one pod
// holding an RDMA shared-device slot) listens as root on the kubelet's
// socket path in its 0750 root directory, as the kubelet does. Pointed at
// that socket the pods collector fails with "Permission denied"
// (fabric_collector_success 0, what FabricCollectorFailing reads); with
// fabricmon-kubelet.socket enabled and collectors.pods.socket at
// /run/fabricmon-kubelet/kubelet.sock the pod's series comes through the
// socket-activated systemd-socket-proxyd, itself in its sandbox with
// refused syscalls made fatal. Undone at the end (the relay disabled,
// the config as before) for the steps after it.
void SystemdNspawnTest::KubeletRelay() {
  const fs::path stub = testing::Binary("kubelet_stub");
  if (!fs::exists(stub)) {
    // Built without gRPC (proto/CMakeLists.txt), which CI=true refuses.
    ASSERT_FALSE(testing::InCi()) << stub << " not built (CI=true)";
    std::cout << "kubelet relay not checked: " << stub << " not built\n";
    return;
  }
  // The bind mount of dir_/pkg shows the copy at /root/pkg in the container.
  fs::copy_file(stub, dir_ / "pkg" / "kubelet_stub",
                fs::copy_options::overwrite_existing);
  // Its shared libraries (gRPC, protobuf) are those the .deb's Depends
  // pulled in: nothing missing.
  const ShellResult ldd = In("ldd /root/pkg/kubelet_stub");
  ASSERT_EQ(ldd.rc, 0) << ldd.output;
  ASSERT_THAT(ldd.output, Not(HasSubstr("not found")));
  const std::string kubelet_sock =
      "/var/lib/kubelet/pod-resources/kubelet.sock";
  ShellResult r =
      In("mkdir -p /var/lib/kubelet/pod-resources && "
         "chmod 0750 /var/lib/kubelet /var/lib/kubelet/pod-resources && "
         "systemd-run --unit=kubelet-stub --quiet /root/pkg/kubelet_stub " +
         kubelet_sock + " ml/trainer-0/worker/rdma/hca_shared_devices_a=0,1");
  ASSERT_EQ(r.rc, 0) << r.output;
  ASSERT_TRUE(WaitFor([&] { return In("test -S " + kubelet_sock).rc == 0; }))
      << In("journalctl -u kubelet-stub --no-pager").output;
  // The relay's refused syscalls made fatal, as the daemon's are.
  ASSERT_EQ(In("mkdir -p /etc/systemd/system/fabricmon-kubelet.service.d && "
               "printf '[Service]\\nSystemCallErrorNumber=kill\\n' > "
               "/etc/systemd/system/fabricmon-kubelet.service.d/sandbox.conf"
               " && systemctl daemon-reload")
                .rc,
            0);
  const std::string pods =
      "collectors:\n  pods:\n    interval: 1s\n    shared:\n"
      "      \"rdma/hca_shared_devices_a\": [mlx5_0]\n";
  const std::string series =
      "fabric_pod_device_info{container=\"worker\",device=\"mlx5_0\","
      "namespace=\"ml\",pod=\"trainer-0\"} 1";

  // Without the relay: the daemon's user cannot reach the kubelet's socket.
  std::string cursor = Cursor();
  ASSERT_NO_FATAL_FAILURE(
      WriteConfig(Config(pods + "    socket: " + kubelet_sock + "\n")));
  r = In("systemctl reload fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output << Journal(cursor);
  std::string text;
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape();
    return text.find("fabric_collector_success{collector=\"pods\"} 0") !=
           std::string::npos;
  })) << text
      << Journal(cursor);
  EXPECT_THAT(text, Not(HasSubstr("fabric_pod_device_info")));
  EXPECT_TRUE(WaitFor([&] {
    return Journal(cursor).find("pods: " + kubelet_sock +
                                ": Permission denied") != std::string::npos;
  })) << Journal(cursor);
  // The daemon runs as its dynamic user, not root.
  const std::string uid =
      In("awk '/^Uid:/ { print $2 }' /proc/" + Show()["MainPID"] + "/status")
          .output;
  EXPECT_NE(uid, "0\n");
  EXPECT_NE(uid, "");
  EXPECT_EQ(
      In("systemctl show -p DynamicUser --value fabricmon.service").output,
      "yes\n");

  // Through the relay.
  r = In("systemctl enable --now fabricmon-kubelet.socket");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(In("stat -c '%U:%G %a' /run/fabricmon-kubelet/kubelet.sock").output,
            "root:fabricmon 660\n");
  cursor = Cursor();
  ASSERT_NO_FATAL_FAILURE(WriteConfig(
      Config(pods + "    socket: /run/fabricmon-kubelet/kubelet.sock\n")));
  r = In("systemctl reload fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output << Journal(cursor);
  EXPECT_TRUE(WaitFor([&] {
    text = Scrape();
    return text.find(series) != std::string::npos &&
           text.find("fabric_collector_success{collector=\"pods\"} 1") !=
               std::string::npos;
  })) << text
      << Journal(cursor)
      << In("journalctl -u fabricmon-kubelet.service -u kubelet-stub "
            "--no-pager")
             .output;
  EXPECT_EQ(In("systemctl is-active fabricmon-kubelet.service").output,
            "active\n");
  const std::string relay_journal =
      In("journalctl -u fabricmon-kubelet.service -o cat --no-pager").output;
  EXPECT_THAT(relay_journal, Not(HasSubstr("SIGSYS")));
  EXPECT_THAT(relay_journal, Not(HasSubstr("status=31")));
  std::cout << "systemd-analyze security, kubelet relay: "
            << In("systemd-analyze security fabricmon-kubelet.service "
                  "--no-pager | tail -1")
                   .output;

  // Undone for the steps after this one.
  EXPECT_EQ(In("systemctl disable --now fabricmon-kubelet.socket "
               "fabricmon-kubelet.service && systemctl stop kubelet-stub && "
               "rm -r /var/lib/kubelet")
                .rc,
            0);
  ASSERT_NO_FATAL_FAILURE(WriteConfig(Config("")));
  r = In("systemctl reload fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output;
}

// SIGTERM ends it within TimeoutStopSec (Result=timeout otherwise) with
// status 0, and no process of it is left.
void SystemdNspawnTest::Stop() {
  const ShellResult r = In("systemctl stop fabricmon.service");
  ASSERT_EQ(r.rc, 0) << r.output;
  auto props = Show();
  EXPECT_EQ(props["ActiveState"], "inactive");
  EXPECT_EQ(props["Result"], "success");
  EXPECT_EQ(props["ExecMainStatus"], "0");
  // The brokers exit when the daemon's connections close: soon after.
  EXPECT_TRUE(WaitFor([&] {
    return In("for p in /proc/[0-9]*; do readlink $p/exe; done | "
              "grep fabricmon")
        .output.empty();
  }));
  EXPECT_NE(In("test -e /run/fabricmon").rc, 0);
}

// Remove leaves only the conffiles; purge removes them too. What the admin
// made (probe.key, drop-ins) is not the package's and stays.
void SystemdNspawnTest::RemoveAndPurge() {
  const std::string left_over =
      "echo " + ShellQuote(installed_) +
      " | while read -r f; do [ -z \"$f\" ] || ! [ -e \"$f\" ] || echo "
      "\"$f\"; done";
  ShellResult r = In("apt-get remove -y -q fabricmon");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(In(left_over).output,
            "/etc/default/fabricmon\n/etc/fabricmon/fabricmon.yaml\n");
  EXPECT_THAT(In("cat " + std::string(kConfig)).output,
              HasSubstr("127.0.0.1:" + std::to_string(port_)));
  r = In("apt-get purge -y -q fabricmon");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(In(left_over).output, "");
  EXPECT_NE(In("test -e /usr/share/fabricmon").rc, 0);
  EXPECT_EQ(In("ls /etc/fabricmon").output, "probe.key\n");
  EXPECT_EQ(
      In("find /etc/systemd -name 'fabricmon*' ! -path '*.service.d*'").output,
      "");
  EXPECT_EQ(Show()["LoadState"], "not-found");
}

TEST_F(SystemdNspawnTest, DebInstallsAndTheUnitRunsUnderSystemd) {
  ASSERT_NO_FATAL_FAILURE(Install());
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(Reload());
  ASSERT_NO_FATAL_FAILURE(Credentials());
  ASSERT_NO_FATAL_FAILURE(Watchdog());
  ASSERT_NO_FATAL_FAILURE(Sandbox());
  ASSERT_NO_FATAL_FAILURE(Broker());
  ASSERT_NO_FATAL_FAILURE(KubeletRelay());
  ASSERT_NO_FATAL_FAILURE(Stop());
  ASSERT_NO_FATAL_FAILURE(RemoveAndPurge());
}

}  // namespace
}  // namespace fabric
