// Several requests or replies per datagram between the daemon and the MAD
// broker (broker_protocol.h, version 2): each request of a message is
// decoded and checked on its own, a malformed one ends the message, and
// the daemon's Transport sends what the engine posted between two polls as
// one message and hands out every reply of a message. The broker's side of
// a batch (refusals counted per request) is in mad_broker_test.cc.
#include <gtest/gtest.h>
#include <infiniband/mad.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "sources/mad/broker_client.h"
#include "sources/mad/codec.h"
#include "tests/support/temp_dir.h"

namespace fabric::mad::broker {
namespace {

using std::chrono::milliseconds;

Request MadRequestOf(const Mad& mad, std::uint32_t tid) {
  Mad m = mad;
  mad_set_field64(m.data(), 0, IB_MAD_TRID_F, tid);
  Request r = MakeRequest(Kind::kMad, tid);
  r.mad = CallFromMad(5, m, milliseconds(500));
  return r;
}

TEST(BrokerBatch, EveryRequestOfAMessageIsDecodedOnItsOwn) {
  std::vector<std::uint8_t> message;
  AppendRequest(MadRequestOf(SmpGet(kAttrNodeInfo, 0), 1), &message);
  Mad set = SmpGet(kAttrPortInfo, 1);
  mad_set_field(set.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  AppendRequest(MadRequestOf(set, 2), &message);
  AppendRequest(MakeRequest(Kind::kPorts, 3), &message);
  Request open = MakeRequest(Kind::kOpen, 4);
  open.ca = "mlx5_0";
  AppendRequest(open, &message);
  const auto decoded = DecodeRequests(message);
  ASSERT_EQ(decoded.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(decoded[i].request) << i;
    EXPECT_EQ(decoded[i].tid, i + 1);
  }
  // Decoded, not yet allowed: the Set is still the broker's to refuse.
  EXPECT_EQ(Check(decoded[0].request->mad), Refusal::kNone);
  EXPECT_EQ(Check(decoded[1].request->mad), Refusal::kMethod);
  EXPECT_EQ(decoded[3].request->ca, "mlx5_0");
  // A message of one request is the same bytes as EncodeRequest's.
  EXPECT_EQ(DecodeRequests(EncodeRequest(open)).size(), 1u);
}

TEST(BrokerBatch, AMessageThatDoesNotParseWholeIsRefusedWhole) {
  const auto good = EncodeRequest(MadRequestOf(SmpGet(kAttrNodeInfo, 0), 7));
  auto refused_whole = [](const std::vector<std::uint8_t>& message) {
    const auto decoded = DecodeRequests(message);
    return decoded.size() == 1 && !decoded[0].request &&
           decoded[0].refusal == Refusal::kMalformed;
  };
  // A good request, then raw MAD bytes (a SubnSet): not even the good one
  // is kept.
  std::vector<std::uint8_t> message = good;
  Mad raw = SmpGet(kAttrPortInfo, 1);
  mad_set_field(raw.data(), 0, IB_MAD_METHOD_F, IB_MAD_METHOD_SET);
  message.insert(message.end(), raw.begin(), raw.end());
  EXPECT_TRUE(refused_whole(message));
  EXPECT_EQ(DecodeRequests(message)[0].tid, 7u);  // the refusal names it
  // A request cut short at the end of the message.
  message = good;
  message.insert(message.end(), good.begin(), good.end() - 1);
  EXPECT_TRUE(refused_whole(message));
  // An empty message is one malformed request, not none.
  EXPECT_TRUE(refused_whole({}));
  // No more than kMaxRequestsPerMessage in one message.
  message.clear();
  for (std::size_t i = 0; i < kMaxRequestsPerMessage; ++i) {
    AppendRequest(MakeRequest(Kind::kStats, 1), &message);
  }
  EXPECT_EQ(DecodeRequests(message).size(), kMaxRequestsPerMessage);
  AppendRequest(MakeRequest(Kind::kStats, 1), &message);
  EXPECT_TRUE(refused_whole(message));
}

TEST(BrokerBatch, RepliesOfAMessageRoundTripAllOrNothing) {
  std::vector<std::uint8_t> message;
  Reply ok = MakeReply(Kind::kMad, 1);
  ok.mad = SmpGet(kAttrNodeInfo, 0);
  AppendReply(ok, &message);
  AppendReply(MakeReply(Kind::kMad, 2, Status::kTimedOut, "timed out"),
              &message);
  auto replies = DecodeReplies(message);
  ASSERT_TRUE(replies);
  ASSERT_EQ(replies->size(), 2u);
  EXPECT_EQ((*replies)[0].mad, ok.mad);
  EXPECT_EQ((*replies)[1].status, Status::kTimedOut);
  message.pop_back();
  EXPECT_FALSE(DecodeReplies(message));
  EXPECT_FALSE(DecodeReplies({}));
}

// A stand-in broker on a listening socket: the test reads the daemon's
// datagrams itself.
class FakeBroker {
 public:
  FakeBroker() {
    endpoint_.socket_path = dir_.path() + "/broker.sock";
    listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, endpoint_.socket_path.c_str());
    EXPECT_EQ(
        ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
  }
  ~FakeBroker() {
    if (fd_ >= 0) ::close(fd_);
    ::close(listener_);
  }
  // Transport::Open against this broker, which answers its OPEN.
  std::unique_ptr<Transport> Open() {
    std::thread accept([this] {
      fd_ = ::accept(listener_, nullptr, nullptr);
      const auto open = Requests();
      if (open.size() == 1 && open[0].request) {
        Send({MakeReply(Kind::kOpen, open[0].tid)});
      }
    });
    std::string error;
    auto t = Transport::Open(endpoint_, "", 0, &error);
    accept.join();
    EXPECT_TRUE(t) << error;
    return t;
  }
  // The requests of the next datagram.
  std::vector<DecodedRequest> Requests() {
    std::vector<std::uint8_t> buf(kMaxMessage);
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n <= 0) return {};
    return DecodeRequests({buf.data(), static_cast<std::size_t>(n)});
  }
  void Send(const std::vector<Reply>& replies) {
    std::vector<std::uint8_t> message;
    for (const Reply& r : replies) AppendReply(r, &message);
    ASSERT_EQ(::send(fd_, message.data(), message.size(), 0),
              static_cast<ssize_t>(message.size()));
  }
  void Hangup() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  testing::TempDir dir_{"fabricmon-batch"};
  Endpoint endpoint_;
  int listener_ = -1;
  int fd_ = -1;
};

TEST(BrokerBatch, TransportSendsWhatWasPostedBetweenPollsAsOneMessage) {
  FakeBroker broker;
  auto t = broker.Open();
  ASSERT_TRUE(t);
  std::vector<Reply> replies;
  for (std::uint32_t tid = 100; tid < 110; ++tid) {
    Mad m = SmpGet(kAttrNodeInfo, 0);
    mad_set_field64(m.data(), 0, IB_MAD_TRID_F, tid);
    ASSERT_TRUE(t->Post(5, m, milliseconds(500)));
    Reply r = MakeReply(Kind::kMad, tid);
    r.mad = m;
    replies.push_back(r);
  }
  std::vector<MadTransport::Answer> answers;
  t->Poll(std::chrono::microseconds(0), &answers);  // sends, none yet
  EXPECT_TRUE(answers.empty());
  const auto got = broker.Requests();
  ASSERT_EQ(got.size(), 10u);  // ten requests, one datagram
  for (std::uint32_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(got[i].request);
    EXPECT_EQ(got[i].request->mad.tid, 100 + i);
  }
  // Ten replies in one datagram come out as ten answers of one Poll.
  broker.Send(replies);
  t->Poll(std::chrono::seconds(10), &answers);
  ASSERT_EQ(answers.size(), 10u);
  EXPECT_EQ(answers[9].tid, 109u);
  EXPECT_EQ(answers[9].error, std::errc{});
}

TEST(BrokerBatch, ABrokerThatGoesAwayFailsEveryUnansweredRequestAtOnce) {
  FakeBroker broker;
  auto t = broker.Open();
  ASSERT_TRUE(t);
  for (std::uint32_t tid = 1; tid <= 3; ++tid) {
    Mad m = SmpGet(kAttrNodeInfo, 0);
    mad_set_field64(m.data(), 0, IB_MAD_TRID_F, tid);
    ASSERT_TRUE(t->Post(5, m, milliseconds(500)));
  }
  std::vector<MadTransport::Answer> answers;
  t->Poll(std::chrono::microseconds(0), &answers);
  EXPECT_EQ(broker.Requests().size(), 3u);
  broker.Send({MakeReply(Kind::kMad, 2, Status::kTimedOut, "timed out")});
  broker.Hangup();
  // The answer that came, then EOF: the other two fail, not time out.
  for (int i = 0; i < 3 && answers.size() < 3; ++i) {
    t->Poll(std::chrono::seconds(10), &answers);
  }
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(answers[0].timed_out);
  EXPECT_EQ(answers[1].error, std::errc::io_error);
  EXPECT_EQ(answers[2].error, std::errc::io_error);
  EXPECT_TRUE(t->broken());
  EXPECT_FALSE(t->Post(5, SmpGet(kAttrNodeInfo, 0), milliseconds(500)));
}

}  // namespace
}  // namespace fabric::mad::broker
