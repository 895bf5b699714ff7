// The fabricmon-bench control codec: frames round-trip, and every kind of bad
// input (truncation, wrong magic/version/type, oversized lengths, a wrong
// key, a frame from another connection, a replay) is refused by name.
#include <gtest/gtest.h>

#include "auth/key_file.h"
#include "benchtool/wire.h"

namespace fabric::bench {
namespace {

Key TestKey(char digit) {
  std::string err;
  return *ParseKeyHex(std::string(64, digit), &err);
}

struct Pair {
  Nonces coordinator{Bytes(16, 1), Bytes(16, 2)};
  Nonces agent{Bytes(16, 2), Bytes(16, 1)};
};

TEST(BenchWire, FrameRoundTripsAndBindsBothNonces) {
  Hmac hmac(TestKey('a'));
  Pair p;
  RunMsg run{1 << 20, 2, 10};
  Bytes frame =
      SealFrame(hmac, p.coordinator, MsgType::kRun, 1, EncodeRun(run));
  std::uint64_t last = 0;
  FrameHeader h;
  Bytes payload;
  ASSERT_EQ(OpenFrame(hmac, p.agent, frame, &last, &h, &payload),
            Refusal::kNone);
  EXPECT_EQ(h.type, MsgType::kRun);
  EXPECT_EQ(last, 1u);
  auto got = DecodeRun(payload);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size_bytes, 1u << 20);
  EXPECT_EQ(got->warmup, 2u);
  EXPECT_EQ(got->iterations, 10u);

  // The same frame again on this connection is a replay.
  EXPECT_EQ(OpenFrame(hmac, p.agent, frame, &last, &h, &payload),
            Refusal::kReplay);
  // On another connection (other nonces) it does not verify.
  Nonces other{Bytes(16, 9), Bytes(16, 1)};
  std::uint64_t last2 = 0;
  EXPECT_EQ(OpenFrame(hmac, other, frame, &last2, &h, &payload),
            Refusal::kBadMac);
}

TEST(BenchWire, WrongKeyIsBadMac) {
  Pair p;
  Bytes frame =
      SealFrame(Hmac(TestKey('b')), p.coordinator, MsgType::kStop, 1, {});
  std::uint64_t last = 0;
  FrameHeader h;
  Bytes payload;
  EXPECT_EQ(OpenFrame(Hmac(TestKey('a')), p.agent, frame, &last, &h, &payload),
            Refusal::kBadMac);
  Bytes hello = SealFrame(Hmac(TestKey('b')), {}, MsgType::kHello, 0,
                          EncodeHello({Bytes(16, 7)}));
  EXPECT_EQ(OpenFrame(Hmac(TestKey('a')), {}, hello, &last, &h, &payload),
            Refusal::kBadMac);
}

TEST(BenchWire, HeaderRefusals) {
  Hmac hmac(TestKey('a'));
  Pair p;
  Bytes good = SealFrame(hmac, p.coordinator, MsgType::kStop, 1, {});
  FrameHeader h;
  EXPECT_EQ(DecodeHeader(good, &h), Refusal::kNone);
  EXPECT_EQ(DecodeHeader(std::span(good).first(kHeaderBytes - 1), &h),
            Refusal::kMalformed);
  Bytes bad = good;
  bad[0] = 'X';
  EXPECT_EQ(DecodeHeader(bad, &h), Refusal::kMalformed);
  bad = good;
  bad[4] = 2;  // version
  EXPECT_EQ(DecodeHeader(bad, &h), Refusal::kVersion);
  bad = good;
  bad[5] = 0x77;  // type
  EXPECT_EQ(DecodeHeader(bad, &h), Refusal::kMalformed);
  bad = good;
  bad[6] = 1;  // reserved
  EXPECT_EQ(DecodeHeader(bad, &h), Refusal::kMalformed);
  bad = good;
  bad[16] = 0xff;  // payload length 4 GiB
  EXPECT_EQ(DecodeHeader(bad, &h), Refusal::kMalformed);
  // A frame whose length disagrees with its header.
  bad = good;
  bad.push_back(0);
  std::uint64_t last = 0;
  Bytes payload;
  EXPECT_EQ(OpenFrame(hmac, p.agent, bad, &last, &h, &payload),
            Refusal::kMalformed);
  // Before the hellos only a Hello is accepted.
  EXPECT_EQ(OpenFrame(hmac, {}, good, &last, &h, &payload),
            Refusal::kMalformed);
}

TEST(BenchWire, MessagesRoundTrip) {
  PrepareMsg m;
  m.session_id = 42;
  m.token = Bytes(16, 3);
  m.rank = 1;
  m.peers = {"10.0.0.1:10916", "10.0.0.2:10916"};
  m.transport = "tcp";
  m.pattern = "tp-dp";
  m.tp = 2;
  m.max_size_bytes = 1 << 30;
  m.io_timeout_ms = 5000;
  auto got = DecodePrepare(EncodePrepare(m));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->peers, m.peers);
  EXPECT_EQ(got->pattern, "tp-dp");
  EXPECT_EQ(got->max_size_bytes, 1u << 30);

  RunResultMsg r;
  r.iterations.push_back({1234, {{"xmit_wait", 7}}});
  r.iterations.push_back({5678, {}});
  auto rr = DecodeRunResult(EncodeRunResult(r));
  ASSERT_TRUE(rr);
  ASSERT_EQ(rr->iterations.size(), 2u);
  EXPECT_EQ(rr->iterations[0].counters[0].first, "xmit_wait");
  EXPECT_EQ(rr->iterations[0].counters[0].second, 7u);

  auto e = DecodeError(EncodeError({3, "peer died"}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->peer_rank, 3);
  auto c = DecodeConnect(EncodeConnect({{Bytes{1, 2}, Bytes{3, 4}}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->endpoints[1], (Bytes{3, 4}));
}

TEST(BenchWire, DecodersRefuseEveryTruncationAndTrailingByte) {
  PrepareMsg m;
  m.token = Bytes(16, 3);
  m.peers = {"a:1", "b:2"};
  m.transport = "tcp";
  m.pattern = "alltoall";
  Bytes full = EncodePrepare(m);
  ASSERT_TRUE(DecodePrepare(full));
  for (std::size_t n = 0; n < full.size(); ++n) {
    EXPECT_FALSE(DecodePrepare(std::span(full).first(n))) << n;
  }
  full.push_back(0);
  EXPECT_FALSE(DecodePrepare(full));
}

TEST(BenchWire, DecodersRefuseOutOfRangeFields) {
  PrepareMsg m;
  m.token = Bytes(16, 3);
  m.peers = {"a:1", "b:2"};
  m.rank = 2;  // no such rank
  EXPECT_FALSE(DecodePrepare(EncodePrepare(m)));
  m.rank = 0;
  m.peers = {"only:1"};
  EXPECT_FALSE(DecodePrepare(EncodePrepare(m)));
  EXPECT_FALSE(DecodeRun(EncodeRun({8, 0, 0})));  // no iterations
  EXPECT_FALSE(DecodeRun(EncodeRun({8, 0, kMaxIterations + 1})));
  // A count claiming more items than bytes left.
  Bytes huge = {0xff, 0xff, 0xff, 0xff};
  EXPECT_FALSE(DecodeRunResult(huge));
  EXPECT_FALSE(DecodeConnect(huge));
  EXPECT_FALSE(DecodeHello(EncodeHello({Bytes(15, 1)})));
}

}  // namespace
}  // namespace fabric::bench
