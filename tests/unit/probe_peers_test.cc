// Peer-list parsing: host:port entries, plain files, Prometheus file_sd.
#include <gtest/gtest.h>

#include "probe/peers.h"

namespace fabric::probe {
namespace {

TEST(ProbePeersTest, HostPortForms) {
  std::string e;
  auto p = ParsePeer("node1:9000", &e);
  ASSERT_TRUE(p) << e;
  EXPECT_EQ(p->host, "node1");
  EXPECT_EQ(p->port, 9000);
  EXPECT_EQ(p->name, "node1:9000");
  p = ParsePeer(" 10.0.0.2 ", &e);
  ASSERT_TRUE(p) << e;
  EXPECT_EQ(p->host, "10.0.0.2");
  EXPECT_EQ(p->port, kDefaultProbePort);
  EXPECT_EQ(p->name, "10.0.0.2");
  p = ParsePeer("[::1]:10917", &e);
  ASSERT_TRUE(p) << e;
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->port, 10917);
  p = ParsePeer("[fe80::1%veth0]", &e);
  ASSERT_TRUE(p) << e;
  EXPECT_EQ(p->host, "fe80::1%veth0");
  EXPECT_EQ(p->port, kDefaultProbePort);
}

TEST(ProbePeersTest, BadEntriesSayWhy) {
  std::string e;
  EXPECT_FALSE(ParsePeer("::1:80", &e));
  EXPECT_NE(e.find("[addr]:port"), std::string::npos) << e;
  EXPECT_FALSE(ParsePeer("host:0", &e));
  EXPECT_NE(e.find("1..65535"), std::string::npos) << e;
  EXPECT_FALSE(ParsePeer("host:99999", &e));
  EXPECT_FALSE(ParsePeer("host:", &e));
  EXPECT_FALSE(ParsePeer("[::1", &e));
  EXPECT_FALSE(ParsePeer("[::1]x", &e));
  EXPECT_FALSE(ParsePeer("", &e));
  EXPECT_FALSE(ParsePeer("a b:1", &e));
}

TEST(ProbePeersTest, LinesWithCommentsAndDuplicates) {
  std::string e;
  auto peers = ParsePeerLines(
      "# cluster a\n\nnode1:10916\n  node2  # rack 3\r\n[::1]:7\nnode1:10916\n",
      &e);
  ASSERT_TRUE(peers) << e;
  ASSERT_EQ(peers->size(), 3u);
  EXPECT_EQ((*peers)[0].name, "node1:10916");
  EXPECT_EQ((*peers)[1].name, "node2");
  EXPECT_EQ((*peers)[2].host, "::1");
  EXPECT_FALSE(ParsePeerLines("ok:1\nbad:port\n", &e));
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  peers = ParsePeerLines("", &e);
  ASSERT_TRUE(peers);
  EXPECT_TRUE(peers->empty());
}

TEST(ProbePeersTest, FileSd) {
  std::string e;
  auto peers = ParseFileSd(R"([
    {"targets": ["a:1", "b:2"], "labels": {"rack": "r1"}},
    {"targets": ["[::1]:3", "a:1"]}
  ])",
                           &e);
  ASSERT_TRUE(peers) << e;
  ASSERT_EQ(peers->size(), 3u);
  EXPECT_EQ((*peers)[2].host, "::1");
  // A target's port is its scrape port: the probe port replaces it.
  EXPECT_EQ((*peers)[2].port, kDefaultProbePort);
  EXPECT_EQ((*peers)[2].name, "[::1]");
  EXPECT_FALSE(ParseFileSd(R"({"targets": []})", &e));
  EXPECT_FALSE(ParseFileSd(R"([{"labels": {}}])", &e));
  EXPECT_NE(e.find("targets"), std::string::npos) << e;
  EXPECT_FALSE(ParseFileSd(R"([{"targets": ["x:bad"]}])", &e));
  EXPECT_FALSE(ParseFileSd("[{\"targets\": [", &e));
}

TEST(ProbePeersTest, FileKindIsDetected) {
  std::string e;
  auto sd = ParsePeersFile(" [ {\"targets\": [\"h:5\"]} ]", &e);
  ASSERT_TRUE(sd) << e;
  EXPECT_EQ(sd->at(0).port, kDefaultProbePort);
  auto lines = ParsePeersFile("[::1]:5\nh:6\n", &e);
  ASSERT_TRUE(lines) << e;
  EXPECT_EQ(lines->size(), 2u);
  auto empty = ParsePeersFile("[]", &e);
  ASSERT_TRUE(empty) << e;
  EXPECT_TRUE(empty->empty());
}

// Issue 39: the file_sd targets Prometheus scrapes (the metrics port,
// 10915) read as a peers file probe the probe port, named by host as the
// same hosts in a plain list without ports are; plain entries keep theirs.
TEST(ProbePeersTest, FileSdTargetsGetTheProbePort) {
  std::string e;
  auto sd = ParsePeersFile(R"([
    {"targets": ["gpu001:10915", "gpu002:10915"], "labels": {"cluster": "a"}},
    {"targets": ["gpu001:9100", "[fd00::7]:10915", "sm1"]}
  ])",
                           &e, 20000);
  ASSERT_TRUE(sd) << e;
  ASSERT_EQ(sd->size(), 4u);  // gpu001 once
  for (const auto& p : *sd) EXPECT_EQ(p.port, 20000) << p.name;
  EXPECT_EQ(sd->at(0).name, "gpu001");
  EXPECT_EQ(sd->at(2).name, "[fd00::7]");
  EXPECT_EQ(sd->at(2).host, "fd00::7");
  EXPECT_EQ(sd->at(3).name, "sm1");
  auto lines = ParsePeersFile("gpu001\ngpu002:10999\n", &e, 20000);
  ASSERT_TRUE(lines) << e;
  EXPECT_EQ(lines->at(0).name, "gpu001");
  EXPECT_EQ(lines->at(0).port, 20000);
  EXPECT_EQ(lines->at(1).port, 10999);
}

}  // namespace
}  // namespace fabric::probe
