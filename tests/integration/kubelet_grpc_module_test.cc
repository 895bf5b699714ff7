// The gRPC module boundary (collectors/grpc_module.h), with the real
// fabricmon binary: a daemon whose gnmi and pods collectors have no work
// (no switch configured, no kubelet socket) maps no gRPC, protobuf or
// Abseil library (its /proc/<pid>/maps); a kubelet socket that exists loads
// libfabricmon_grpc.so and List answers through it; a module that is missing
// or broken fails the pods and gnmi collectors with the loader's reason,
// and everything else runs on.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "podresources_v1.grpc.pb.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/kubelet_server.h"
#include "tests/integration/sim_support.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A kubelet with no pods: List answers, empty.
class EmptyKubelet final : public v1::PodResourcesLister::Service {
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse*) override {
    return grpc::Status::OK;
  }
};

const char kPods[] = "fabric_collector_success{collector=\"pods\"}";
const char kGnmi[] = "fabric_collector_success{collector=\"gnmi\"}";
const char kIbPort[] = "fabric_collector_success{collector=\"ib_port\"}";

class GrpcModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    socket_ = (dir_ / "kubelet.sock").string();
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  void StartKubelet() {
    server_ = ServeKubelet(socket_, &kubelet_);
    ASSERT_TRUE(server_);
  }

  // ib_port, pods on socket_ and gnmi with `switches`, nothing else (the
  // defaults of the rest need no gRPC either; fewer collectors, a faster
  // test).
  std::string Config(int port, const std::string& switches) {
    const std::string path = (dir_ / "fabricmon.yaml").string();
    std::ofstream(path) << "listen_address: \"127.0.0.1:" << port << "\"\n"
                        << "collectors:\n"
                           "  hw_counters: {enabled: false}\n"
                           "  congestion: {enabled: false}\n"
                           "  roce: {enabled: false}\n"
                           "  nic_identity: {enabled: false}\n"
                           "  pods: {interval: 1s, socket: "
                        << socket_ << "}\n"
                        << "  gnmi:\n    enabled: true\n    interval: 1s\n"
                           "    insecure: true\n    switches: "
                        << switches << "\n";
    return path;
  }

  // A daemon on the H100 tree with Config(), `env` in its environment
  // (VAR=value).
  std::unique_ptr<sim::Session> Daemon(const std::string& switches,
                                       const std::string& env = "") {
    port_ = FreeLoopbackPort();
    return std::make_unique<sim::Session>(
        (env.empty() ? "" : "env " + env + " ") + Binary("fabricmon") +
            " --config " + Config(port_, switches) + " --sysfs.root " +
            Fixture("real/sysfs-gpud-h100"),
        Log());
  }
  std::string Log() const { return (dir_ / "daemon.log").string(); }

  // Scrapes until every collector in `names` has reported once.
  std::optional<std::map<std::string, double>> Collected(
      std::initializer_list<const char*> names) {
    return ScrapeUntil(
        port_,
        [&](const auto& s) {
          for (const char* n : names)
            if (!s.count(n)) return false;
          return true;
        },
        60s);
  }

  // The daemon's mapped files.
  static std::string Maps(pid_t pid) {
    return ReadFile("/proc/" + std::to_string(pid) + "/maps");
  }

  TempDir tmp_{"fabricmon-grpc-module"};
  fs::path dir_;
  std::string socket_;
  int port_ = 0;
  EmptyKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

// Neither collector has work: no gRPC in the process, ever.
TEST_F(GrpcModuleTest, WithoutWorkTheDaemonMapsNoGrpc) {
  auto daemon = Daemon("[]");
  const auto samples = Collected({kPods, kGnmi, kIbPort});
  ASSERT_TRUE(samples) << ReadFile(Log());
  EXPECT_EQ(samples->at(kPods), 1);  // no socket: nothing to say, success
  EXPECT_EQ(samples->at(kGnmi), 1);
  // A later pods collection too, so that a lazy load would have happened.
  const char kLast[] =
      "fabric_collector_last_success_timestamp_seconds{collector=\"pods\"}";
  const double first = samples->at(kLast);
  ASSERT_TRUE(ScrapeUntil(
      port_,
      [&](const auto& s) { return s.count(kLast) && s.at(kLast) > first; },
      60s))
      << ReadFile(Log());
  const std::string maps = Maps(daemon->pid());
  ASSERT_NE(maps.find("libstdc++"), std::string::npos) << maps;  // read it
  for (const char* lib : {"libfabricmon_grpc", "libgrpc", "libprotobuf",
                          "libabsl_", "libgpr", "libupb"}) {
    EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " mapped:\n" << maps;
  }
}

// A kubelet socket that exists: the module is loaded and List answers
// through it (success 1 needs a gRPC answer).
TEST_F(GrpcModuleTest, AKubeletSocketLoadsTheModule) {
  StartKubelet();
  auto daemon = Daemon("[]");
  const auto samples = Collected({kPods, kIbPort});
  ASSERT_TRUE(samples) << ReadFile(Log());
  EXPECT_EQ(samples->at(kPods), 1) << ReadFile(Log());
  const std::string maps = Maps(daemon->pid());
  EXPECT_NE(maps.find("/libfabricmon_grpc.so"), std::string::npos) << maps;
  EXPECT_NE(maps.find("libgrpc"), std::string::npos) << maps;
}

// A module that is not one (a truncated file, as a failed copy leaves it):
// the pods collection and the switch fail with the loader's reason, the
// rest is collected, the daemon serves on.
TEST_F(GrpcModuleTest, ABrokenModuleFailsOnlyItsCollectors) {
  StartKubelet();
  const std::string module = (dir_ / "libfabricmon_grpc.so").string();
  std::ofstream(module) << "not an ELF file\n";
  auto daemon = Daemon("[{name: leaf01, address: \"127.0.0.1:1\"}]",
                       "FABRICMON_GRPC_MODULE=" + module);
  const char kSwitch[] = "fabric_gnmi_switch_up{switch=\"leaf01\"}";
  const auto samples = Collected({kPods, kIbPort, kSwitch});
  ASSERT_TRUE(samples) << ReadFile(Log());
  EXPECT_EQ(samples->at(kPods), 0);
  EXPECT_EQ(samples->at(kSwitch), 0);
  EXPECT_EQ(samples->at(kIbPort), 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = ReadFile(Log());
        return log.find("pods: " + module) != std::string::npos &&
               log.find("gnmi: switch leaf01 (127.0.0.1:1): " + module) !=
                   std::string::npos;
      },
      30s))
      << ReadFile(Log());
  EXPECT_EQ(Maps(daemon->pid()).find("libgrpc"), std::string::npos);
}

// No module where it is looked for: the reason names the paths.
TEST_F(GrpcModuleTest, AMissingModuleIsNamedInTheLog) {
  StartKubelet();
  const std::string module =
      (dir_ / "absent" / "libfabricmon_grpc.so").string();
  auto daemon = Daemon("[]", "FABRICMON_GRPC_MODULE=" + module);
  const auto samples = Collected({kPods, kIbPort});
  ASSERT_TRUE(samples) << ReadFile(Log());
  EXPECT_EQ(samples->at(kPods), 0);
  EXPECT_EQ(samples->at(kIbPort), 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(Log()).find(
                   "libfabricmon_grpc.so not found (looked for " + module +
                   ")") != std::string::npos;
      },
      30s))
      << ReadFile(Log());
}

}  // namespace
}  // namespace fabric::testing
