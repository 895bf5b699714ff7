// fabricmon-sim's probe relay (simulator/probe_relay.h): every ordered host
// pair has its own port, datagrams reach the pair's responder and the
// answers come back, the probe-loss pair loses exactly its share while the
// event is on and no other pair loses any, and each host's peers file
// names its relay ports as the probe collector reads them; the relay does
// not wait behind the runner's lock.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "probe/peers.h"
#include "simulator/probe_relay.h"
#include "simulator/runner.h"
#include "tests/support/temp_dir.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

int UdpSocket(int* port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

bool Readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

class SimProbeRelay : public ::testing::Test {
 protected:
  SimProbeRelay()
      : dir_(tmp_.path()),
        runner_(
            [] {
              SimConfig c;
              c.hosts = 3;
              c.timeline = SingleScenario(Scenario::kProbeLoss);
              c.timeline.events[0].start = seconds(10);
              c.timeline.events[0].duration = seconds(10);
              return c;
            }(),
            dir_) {}
  void SetUp() override {
    std::vector<int> ports;
    for (int i = 0; i < 3; ++i) {
      responders_.push_back(UdpSocket(&ports.emplace_back()));
    }
    relay_ = std::make_unique<ProbeRelay>(runner_, "127.0.0.1", ports);
    std::string error;
    ASSERT_TRUE(relay_->Start(&error)) << error;
    prober_ = UdpSocket(&prober_port_);
  }
  void TearDown() override {
    relay_.reset();
    for (int fd : responders_) ::close(fd);
    ::close(prober_);
  }
  // Sends `n` probes from host `from` to host `to` through the relay, each
  // echoed by the responder; returns how many answers came back.
  int Probe(int from, int to, int n) {
    sockaddr_in front{};
    front.sin_family = AF_INET;
    front.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    front.sin_port = htons(relay_->FrontPort(from, to));
    int answered = 0;
    for (int i = 0; i < n; ++i) {
      const std::string probe = "probe " + std::to_string(i);
      ::sendto(prober_, probe.data(), probe.size(), 0,
               reinterpret_cast<sockaddr*>(&front), sizeof(front));
      const int responder = responders_[to];
      if (Readable(responder, 500)) {
        char buf[64];
        sockaddr_in src{};
        socklen_t len = sizeof(src);
        const ssize_t got = ::recvfrom(responder, buf, sizeof(buf), 0,
                                       reinterpret_cast<sockaddr*>(&src), &len);
        ::sendto(responder, buf, got, 0, reinterpret_cast<sockaddr*>(&src),
                 len);
      }
      if (Readable(prober_, 500)) {
        char buf[64];
        const ssize_t got = ::recv(prober_, buf, sizeof(buf), 0);
        if (std::string(buf, got) == probe) ++answered;
      }
    }
    return answered;
  }

  testing::TempDir tmp_{"fabricmon-sim-probe-relay"};
  fs::path dir_;
  LiveRunner runner_;
  std::vector<int> responders_;
  std::unique_ptr<ProbeRelay> relay_;
  int prober_ = -1, prober_port_ = 0;
};

TEST_F(SimProbeRelay, DropsTheLossyPairsShareWhileOn) {
  EXPECT_EQ(Probe(0, 1, 10), 10);
  EXPECT_EQ(Probe(2, 0, 5), 5);
  runner_.Warmup(seconds(12));    // probe-loss: host0 -> host1 from 10 s
  EXPECT_EQ(Probe(0, 1, 10), 8);  // 1 in 5
  EXPECT_EQ(Probe(1, 0, 10), 10);
  EXPECT_EQ(Probe(1, 2, 10), 10);
  EXPECT_EQ(relay_->dropped(), 2u);
  runner_.Warmup(seconds(10));  // t = 22 s: over
  EXPECT_EQ(Probe(0, 1, 10), 10);
}

TEST_F(SimProbeRelay, PeersFilesNameEachHostsRelayPorts) {
  std::vector<fs::path> roots = runner_.host_roots();
  for (const auto& r : roots) fs::create_directories(r);
  std::string error;
  ASSERT_TRUE(relay_->WritePeersFiles(roots, &error)) << error;
  std::ifstream in(roots[1] / "probe-peers");
  std::stringstream text;
  text << in.rdbuf();
  const auto peers = probe::ParsePeersFile(text.str(), &error);
  ASSERT_TRUE(peers) << error;
  ASSERT_EQ(peers->size(), 2u);
  EXPECT_EQ((*peers)[0].name,
            "127.0.0.1:" + std::to_string(relay_->FrontPort(1, 0)));
  EXPECT_EQ((*peers)[1].port, relay_->FrontPort(1, 2));
  EXPECT_NE(relay_->FrontPort(1, 2), relay_->FrontPort(2, 1));
  EXPECT_EQ(relay_->FrontPort(1, 1), 0);
}

// The relay forwards while the runner's lock is held (a machine that falls
// behind steps and renders back to back under it): probes that waited for
// it outlived the prober's timeout, and every pair lost probes at once.
TEST_F(SimProbeRelay, ForwardsWhileTheRunnerIsBusy) {
  std::atomic<bool> holding{false}, done{false};
  std::thread busy([&] {
    runner_.WithCluster([&](const Cluster&) {
      holding = true;
      const auto end = std::chrono::steady_clock::now() + seconds(30);
      while (!done && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  });
  while (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int answered = Probe(0, 1, 3);
  done = true;
  busy.join();
  EXPECT_EQ(answered, 3);
}

}  // namespace
}  // namespace fabric::sim
