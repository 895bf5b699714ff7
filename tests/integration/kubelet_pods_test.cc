// The pods collector against a kubelet pod-resources server started in the
// test: Debian's gRPC C++ serving v1.PodResourcesLister/List (stubs from
// the same proto/podresources/ the daemon's client uses) on a Unix socket in
// a temporary directory, and the real `fabricmon` reading it. The sysfs tree
// is the recorded H100 node (tests/fixtures/real/sysfs-gpud-h100) with PCI
// functions added: mlx5_0 at 0000:3b:00.0 with a VF 0000:3b:00.2, mlx5_1 at
// 0000:86:00.0, and a GPU at 0000:17:00.0. Also: no socket, a socket that
// never answers, and one that answers bytes that are not gRPC.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "collectors/registry.h"
#include "podresources_v1.grpc.pb.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/kubelet_server.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The kubelet's side of List: whatever the test set last.
class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    std::lock_guard lock(mu_);
    *out = pods_;
    return grpc::Status::OK;
  }
  // Adds container `container` of pod `ns`/`pod` holding `ids` of
  // `resource`.
  void Add(const std::string& ns, const std::string& pod,
           const std::string& container, const std::string& resource,
           const std::vector<std::string>& ids) {
    std::lock_guard lock(mu_);
    auto* p = pods_.add_pod_resources();
    p->set_namespace_(ns);
    p->set_name(pod);
    auto* c = p->add_containers();
    c->set_name(container);
    auto* d = c->add_devices();
    d->set_resource_name(resource);
    for (const auto& id : ids) d->add_device_ids(id);
  }
  void Remove(const std::string& pod) {
    std::lock_guard lock(mu_);
    auto* list = pods_.mutable_pod_resources();
    for (int i = list->size() - 1; i >= 0; --i) {
      if (list->Get(i).name() == pod) list->DeleteSubrange(i, 1);
    }
  }

 private:
  std::mutex mu_;
  v1::ListPodResourcesResponse pods_;
};

// A Unix socket that listens and, when `garbage`, accepts each connection,
// writes bytes that are not HTTP/2 and closes it; else never accepts.
class RawSocket {
 public:
  RawSocket(const std::string& path, bool garbage) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    if (!garbage) return;
    thread_ = std::thread([this] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // shutdown() below
        accepted_++;
        const char junk[] = "\x17\x03\x01 not HTTP/2 at all \xff\xfe\x00";
        (void)!::write(c, junk, sizeof(junk));
        ::close(c);
      }
    });
  }
  ~RawSocket() {
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

class KubeletPodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    socket_ = (dir_ / "pod-resources" / "kubelet.sock").string();
    fs::create_directories(dir_ / "pod-resources");
    const fs::path sys = dir_ / "sys";
    fs::copy(Fixture("real/sysfs-gpud-h100"), sys, fs::copy_options::recursive);
    const fs::path pci = sys / "bus/pci/devices";
    fs::create_directories(pci / "0000:3b:00.0/infiniband/mlx5_0");
    fs::create_directories(pci / "0000:3b:00.2/infiniband/mlx5_4");
    fs::create_symlink("../0000:3b:00.0", pci / "0000:3b:00.2/physfn");
    fs::create_directories(pci / "0000:86:00.0/infiniband/mlx5_1");
    fs::create_directories(pci / "0000:17:00.0");
  }

  void StartKubelet() {
    server_ = ServeKubelet(socket_, &kubelet_);
    ASSERT_TRUE(server_);
  }

  // A config with only ib_port and pods (and `pods_yaml` under pods).
  std::string Config(const std::string& pods_yaml, int port = 0) {
    std::string config = "listen_address: \"127.0.0.1:" + std::to_string(port) +
                         "\"\ncollectors:\n";
    for (const auto& name : CollectorNames()) {
      if (name != "pods" && name != "ib_port") {
        config += "  " + name + ": {enabled: false}\n";
      }
    }
    config += "  pods:\n    socket: " + socket_ + "\n" + pods_yaml;
    const std::string path = (dir_ / "fabricmon.yaml").string();
    std::ofstream(path) << config;
    return path;
  }

  // `fabricmon --once`; its log in log_.
  std::map<std::string, double> Once(const std::string& pods_yaml = "") {
    const std::string log = (dir_ / "once.log").string();
    const auto run = RunCommand(Binary("fabricmon") + " --once --config " +
                                Config(pods_yaml) + " --sysfs.root " +
                                (dir_ / "sys").string() + " 2>" + log);
    log_ = ReadFile(log);
    return ParseSamples(run.out);
  }

  static std::map<std::string, double> Pods(
      const std::map<std::string, double>& samples) {
    std::map<std::string, double> out;
    for (const auto& [series, value] : samples) {
      if (series.starts_with("fabric_pod_")) out[series] = value;
    }
    return out;
  }

  static std::string Series(const std::string& ns, const std::string& pod,
                            const std::string& container,
                            const std::string& device) {
    return "fabric_pod_device_info{container=\"" + container + "\",device=\"" +
           device + "\",namespace=\"" + ns + "\",pod=\"" + pod + "\"}";
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  TempDir tmp_{"fabricmon-kubelet"};
  fs::path dir_;
  std::string socket_, log_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

const char kSuccess[] = "fabric_collector_success{collector=\"pods\"}";

// The daemon exports the pods holding mlx5_0 (through a VF) and mlx5_1 (the
// PF), with the device labels its port series carry; a pod removed from
// the kubelet's list is gone at a later collection, the other stays.
TEST_F(KubeletPodsTest, PodsHoldingOurDevicesAndARemovedOneIsGone) {
  kubelet_.Add("ml", "trainer-0", "worker", "nvidia.com/sriov_rdma_vf",
               {"0000:3b:00.2"});
  kubelet_.Add("ml", "trainer-1", "worker", "nvidia.com/sriov_rdma_pf",
               {"0000:86:00.0"});
  // A GPU by PCI address and by UUID: not fabric devices.
  kubelet_.Add("ml", "trainer-1", "worker", "amd.com/gpu", {"0000:17:00.0"});
  kubelet_.Add("ml", "trainer-0", "worker", "nvidia.com/gpu",
               {"GPU-6f1a2b3c-0000-1111-2222-333344445555"});
  StartKubelet();
  const int port = FreeLoopbackPort();
  sim::Session daemon(Binary("fabricmon") + " --config " +
                          Config("    interval: 200ms\n", port) +
                          " --sysfs.root " + (dir_ / "sys").string(),
                      (dir_ / "daemon.log").string());
  const std::string a = Series("ml", "trainer-0", "worker", "mlx5_0");
  const std::string b = Series("ml", "trainer-1", "worker", "mlx5_1");
  const std::map<std::string, double> both = {{a, 1}, {b, 1}};
  std::map<std::string, double> seen;
  auto samples = ScrapeUntil(
      port, [&](const auto& s) { return (seen = Pods(s)) == both; }, 60s);
  ASSERT_TRUE(samples) << ::testing::PrintToString(seen) << "\n"
                       << ReadFile((dir_ / "daemon.log").string());
  // The same `device` labels as the port series of this host.
  EXPECT_TRUE(
      samples->count("fabric_port_state{device=\"mlx5_0\",port=\"1\"}"));
  EXPECT_TRUE(
      samples->count("fabric_port_state{device=\"mlx5_1\",port=\"1\"}"));

  kubelet_.Remove("trainer-1");
  EXPECT_TRUE(ScrapeUntil(
      port,
      [&](const auto& s) {
        return (seen = Pods(s)) == std::map<std::string, double>{{a, 1}};
      },
      60s))
      << ::testing::PrintToString(seen);
}

// Past max_series the first series are kept and the rest counted.
TEST_F(KubeletPodsTest, TheCapKeepsTheFirstAndCountsTheRest) {
  kubelet_.Add("ml", "trainer-0", "worker", "nvidia.com/sriov_rdma_vf",
               {"0000:3b:00.2"});
  kubelet_.Add("ml", "trainer-1", "worker", "nvidia.com/sriov_rdma_pf",
               {"0000:86:00.0"});
  StartKubelet();
  const auto samples = Once("    max_series: 1\n");
  EXPECT_EQ(Pods(samples),
            (std::map<std::string, double>{
                {Series("ml", "trainer-0", "worker", "mlx5_0"), 1},
                {"fabric_pod_devices_over_cap", 1}}))
      << log_;
}

// The RDMA shared device plugin's slot numbers name no device: the
// resource's devices come from collectors.pods.shared.
TEST_F(KubeletPodsTest, ASharedResourceMapsToItsConfiguredDevices) {
  kubelet_.Add("ml", "trainer-2", "worker", "rdma/hca_shared_devices_a", {"3"});
  kubelet_.Add("ml", "trainer-3", "worker", "rdma/hca_shared_devices_b",
               {"0"});  // not configured: nothing
  StartKubelet();
  EXPECT_EQ(Pods(Once("    shared:\n      \"rdma/hca_shared_devices_a\": "
                      "[mlx5_0, mlx5_1]\n")),
            (std::map<std::string, double>{
                {Series("ml", "trainer-2", "worker", "mlx5_0"), 1},
                {Series("ml", "trainer-2", "worker", "mlx5_1"), 1}}))
      << log_;
}

// No kubelet socket (no Kubernetes here): nothing exported, nothing logged,
// and the collection succeeds.
TEST_F(KubeletPodsTest, NoSocketExportsAndLogsNothing) {
  const auto samples = Once();
  EXPECT_TRUE(Pods(samples).empty());
  EXPECT_EQ(samples.at(kSuccess), 1);
  EXPECT_EQ(log_.find("pods"), std::string::npos) << log_;
}

// A socket that accepts connections at the kernel and never answers: the
// List gives up at `deadline`, the collection ends (and fails) on its own,
// before the collection timeout.
TEST_F(KubeletPodsTest, ASocketThatNeverAnswersHitsTheDeadline) {
  RawSocket silent(socket_, /*garbage=*/false);
  const auto samples = Once("    deadline: 300ms\n    timeout: 10s\n");
  EXPECT_TRUE(Pods(samples).empty());
  EXPECT_EQ(samples.at(kSuccess), 0);
  EXPECT_NE(log_.find("pods: List on " + socket_), std::string::npos) << log_;
  EXPECT_NE(log_.find("gRPC code 4)"), std::string::npos) << log_;
  EXPECT_EQ(log_.find("overran"), std::string::npos) << log_;
}

// A socket that answers bytes that are not gRPC: the collection fails with
// one log line for the streak, the daemon keeps running and retrying.
TEST_F(KubeletPodsTest, AGarbageAnswerIsOneErrorNotACrash) {
  RawSocket garbage(socket_, /*garbage=*/true);
  const auto samples = Once();
  EXPECT_TRUE(Pods(samples).empty());
  EXPECT_EQ(samples.at(kSuccess), 0);
  EXPECT_NE(log_.find("pods: List on " + socket_), std::string::npos) << log_;

  const int port = FreeLoopbackPort();
  const std::string log = (dir_ / "daemon.log").string();
  sim::Session daemon(Binary("fabricmon") + " --config " +
                          Config("    interval: 100ms\n", port) +
                          " --sysfs.root " + (dir_ / "sys").string(),
                      log);
  const int before = garbage.accepted();
  // Two more connections: at least two failed collections.
  EXPECT_TRUE(ScrapeUntil(
      port,
      [&](const auto& s) {
        return garbage.accepted() >= before + 2 && s.count(kSuccess) &&
               s.at(kSuccess) == 0;
      },
      60s));
  // The collector's own line, once (the runner's "collection failed" is
  // the daemon's, per failure streak too).
  const std::string text = ReadFile(log);
  const std::string line = "pods: List on ";
  std::size_t lines = 0;
  for (auto at = text.find(line); at != std::string::npos;
       at = text.find(line, at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << text;
}

// Through the packaged relay (systemd/fabricmon-kubelet.service's
// systemd-socket-proxyd, socket-activated here by systemd-socket-activate as
// fabricmon-kubelet.socket does): the daemon's gRPC reaches the kubelet.
TEST_F(KubeletPodsTest, ThroughTheRelayUnitsProxy) {
  const char* proxyd = "/lib/systemd/systemd-socket-proxyd";
  if (::access(proxyd, X_OK) != 0 ||
      std::system("command -v systemd-socket-activate >/dev/null") != 0) {
    MISSING_DEPENDENCY("systemd-socket-proxyd / systemd-socket-activate");
  }
  kubelet_.Add("ml", "trainer-0", "worker", "nvidia.com/sriov_rdma_vf",
               {"0000:3b:00.2"});
  StartKubelet();
  const std::string relay = (dir_ / "relay.sock").string();
  sim::Session activate(
      "systemd-socket-activate -l " + relay + " " + proxyd + " " + socket_,
      (dir_ / "relay.log").string());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(relay); }, 30s, 50ms));
  socket_ = relay;
  EXPECT_EQ(Pods(Once()),
            (std::map<std::string, double>{
                {Series("ml", "trainer-0", "worker", "mlx5_0"), 1}}))
      << log_ << ReadFile((dir_ / "relay.log").string());
}

}  // namespace
}  // namespace fabric::testing
