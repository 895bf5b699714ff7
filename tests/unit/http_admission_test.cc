// Tests for http/admission: the share rule for connection slots on the
// /metrics server, on fake connections (no sockets, no clock), and the
// per-source token bucket for TLS handshakes.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "http/admission.h"

namespace fabric::http {
namespace {

using Clock = AdmissionClock;
using std::chrono::seconds;

class FakeConnection : public Connection {
 public:
  void Close() override { closing = true; }
};

// Open connections by state, with distinct times (a later call is newer).
class Slots {
 public:
  // A connection from `source` being answered (not evictable by rule 4).
  FakeConnection* Answering(const std::string& source) {
    auto* c = Add(source);
    c->waiting = false;
    return c;
  }
  FakeConnection* Waiting(const std::string& source) {
    auto* c = Add(source);
    c->waiting = true;
    c->waiting_since = c->accepted;
    return c;
  }
  const std::list<Connection*>& list() const { return list_; }
  // Admits a newcomer from `source` as the server does: the victim closes,
  // the newcomer is added being answered. The Admission returned.
  Admission Arrive(const std::string& source, std::size_t max,
                   std::size_t per_source) {
    Admission a = Admit(list_, source, max, per_source);
    if (a.victim) a.victim->Close();
    if (a.admit) Answering(source);
    return a;
  }
  std::size_t Held(const std::string& source) const {
    std::size_t n = 0;
    for (const Connection* c : list_) n += !c->closing && c->source == source;
    return n;
  }

 private:
  FakeConnection* Add(const std::string& source) {
    auto c = std::make_unique<FakeConnection>();
    c->source = source;
    c->accepted = Clock::time_point{} + seconds(++tick_);
    list_.push_back(c.get());
    owned_.push_back(std::move(c));
    return owned_.back().get();
  }
  int tick_ = 0;
  std::vector<std::unique_ptr<FakeConnection>> owned_;
  std::list<Connection*> list_;
};

TEST(AdmissionTest, BelowTheBoundEveryoneIsAdmitted) {
  Slots s;
  for (int i = 0; i < 4; ++i) {
    Admission a = s.Arrive("a", 8, 16);
    EXPECT_TRUE(a.admit);
    EXPECT_EQ(a.victim, nullptr);
  }
}

TEST(AdmissionTest, ASourceAtItsShareDisplacesOnlyItself) {
  Slots s;
  FakeConnection* other = s.Waiting("b");
  FakeConnection* own = s.Waiting("a");
  s.Answering("a");
  Admission a = s.Arrive("a", 64, 2);
  EXPECT_TRUE(a.admit);
  EXPECT_EQ(a.victim, own);
  EXPECT_FALSE(other->closing);
  // All of its own being answered: refused, nobody else touched.
  a = s.Arrive("a", 64, 2);
  EXPECT_FALSE(a.admit);
  EXPECT_STREQ(a.refused, "source_limit");
}

// The finding: 64 clients re-scraping at full speed from four addresses
// hold all 64 slots, every one being answered; an honest scraper from a
// fifth address used to be refused (connection_limit). Now the source
// holding the most gives up its newest slot.
TEST(AdmissionTest, AFullServerMakesRoomForASourceHoldingFewer) {
  Slots s;
  for (int i = 0; i < 64; ++i) s.Answering("flood" + std::to_string(i % 4));
  Admission a = s.Arrive("honest", 64, 16);
  ASSERT_TRUE(a.admit);
  ASSERT_NE(a.victim, nullptr);
  EXPECT_EQ(a.victim->source.rfind("flood", 0), 0u);
  EXPECT_EQ(s.Held("honest"), 1u);
  // The flood reconnecting at full speed cannot take it back: its sources
  // hold 15 or 16 each, the honest one 1 (fewer than 2 apart is even).
  for (int round = 0; round < 1000; ++round) {
    s.Arrive("flood" + std::to_string(round % 4), 64, 16);
    ASSERT_EQ(s.Held("honest"), 1u) << round;
  }
}

// Max-min fairness: with S sources competing for M slots each ends up able
// to hold floor(M / S), however the others arrive.
TEST(AdmissionTest, EverySourceKeepsItsEvenShare) {
  constexpr std::size_t kMax = 12;
  Slots s;
  for (std::size_t i = 0; i < kMax; ++i) s.Answering("big");
  // Three more sources, each arriving again and again.
  for (int round = 0; round < 300; ++round) {
    s.Arrive(std::string(1, static_cast<char>('a' + round % 3)), kMax, 12);
  }
  for (const char* source : {"a", "b", "c", "big"}) {
    EXPECT_EQ(s.Held(source), kMax / 4) << source;
  }
}

// Sources already even: the longest waiting connection anywhere makes room
// (a slowloris or an idle keep-alive), else the newcomer is refused.
TEST(AdmissionTest, EvenSourcesEvictTheLongestWaitingElseRefuse) {
  Slots s;
  s.Answering("a");
  FakeConnection* idle = s.Waiting("b");
  Admission a = s.Arrive("c", 2, 16);
  EXPECT_TRUE(a.admit);
  EXPECT_EQ(a.victim, idle);
  a = s.Arrive("d", 2, 16);  // a and c, both being answered
  EXPECT_FALSE(a.admit);
  EXPECT_STREQ(a.refused, "connection_limit");
}

TEST(AdmissionTest, SourceRateBoundsHandshakesPerSource) {
  SourceRate rate(2, 4, 2);
  const auto t0 = Clock::time_point{} + seconds(100);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(rate.Take("a", t0)) << i;
  EXPECT_FALSE(rate.Take("a", t0));
  EXPECT_TRUE(rate.Take("b", t0));  // another source is not affected
  EXPECT_TRUE(rate.Take("b", t0));
  EXPECT_TRUE(rate.Take("a", t0 + std::chrono::milliseconds(500)));
  EXPECT_FALSE(rate.Take("a", t0 + std::chrono::milliseconds(500)));
  // Two sources remembered: a third waits until one's bucket is full again.
  EXPECT_FALSE(rate.Take("c", t0 + std::chrono::milliseconds(500)));
  EXPECT_TRUE(rate.Take("c", t0 + seconds(10)));
}

}  // namespace
}  // namespace fabric::http
