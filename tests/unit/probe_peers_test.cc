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
  EXPECT_EQ((*peers)[2].port, 3);
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
  EXPECT_EQ(sd->at(0).port, 5);
  auto lines = ParsePeersFile("[::1]:5\nh:6\n", &e);
  ASSERT_TRUE(lines) << e;
  EXPECT_EQ(lines->size(), 2u);
  auto empty = ParsePeersFile("[]", &e);
  ASSERT_TRUE(empty) << e;
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace fabric::probe
