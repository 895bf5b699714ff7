// Tests for the socket-free parts of http/: request handling (paths,
// methods, auth, gzip), Accept-Encoding, gzip, the Basic header, bcrypt
// checks, the verified-credential cache across reloads, the per-source
// password-guessing throttle and listen addresses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/basic_auth.h"
#include "http/gzip.h"
#include "http/handler.h"
#include "http/listen_address.h"
#include "tests/support/http_client.h"

namespace fabric::http {
namespace {

using ::testing::HasSubstr;
namespace bhttp = boost::beast::http;

const RenderMetrics kRender = [] { return std::string("fabric_x 1\n"); };

TEST(HttpHandlerTest, PathsAndMethods) {
  BasicAuth open({});
  Reply r =
      HandleRequest({bhttp::verb::get, "/metrics", "", ""}, open, kRender);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "fabric_x 1\n");
  EXPECT_EQ(r.content_type, kMetricsContentType);
  EXPECT_TRUE(r.rejected.empty());
  // Prometheus' `params:` arrive as a query string.
  EXPECT_EQ(
      HandleRequest({bhttp::verb::get, "/metrics?x=1", "", ""}, open, kRender)
          .status,
      200u);
  r = HandleRequest({bhttp::verb::head, "/", "", ""}, open, kRender);
  EXPECT_EQ(r.status, 200u);
  EXPECT_THAT(r.body, HasSubstr("<a href=\"/metrics\">"));
  r = HandleRequest({bhttp::verb::get, "/metricsx", "", ""}, open, kRender);
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.rejected, "not_found");
  for (auto verb : {bhttp::verb::post, bhttp::verb::put, bhttp::verb::delete_,
                    bhttp::verb::options}) {
    r = HandleRequest({verb, "/metrics", "", ""}, open, kRender);
    EXPECT_EQ(r.status, 405u);
    EXPECT_EQ(r.rejected, "method_not_allowed");
    EXPECT_THAT(r.headers,
                ::testing::Contains(
                    std::pair<std::string, std::string>("Allow", "GET, HEAD")));
  }
}

TEST(HttpHandlerTest, GzipWhenAccepted) {
  BasicAuth open({});
  Reply r =
      HandleRequest({bhttp::verb::get, "/metrics", "", "gzip"}, open, kRender);
  EXPECT_TRUE(r.gzip);
  EXPECT_EQ(testing::Gunzip(r.body), "fabric_x 1\n");
  r = HandleRequest({bhttp::verb::get, "/metrics", "", "identity"}, open,
                    kRender);
  EXPECT_FALSE(r.gzip);
  EXPECT_EQ(r.body, "fabric_x 1\n");
}

TEST(HttpHandlerTest, AcceptsGzip) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5, br"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000, *"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzipped"));
}

TEST(HttpHandlerTest, GzipRoundTrips) {
  std::string big;
  for (int i = 0; i < 10000; ++i)
    big += "fabric_y{i=\"" + std::to_string(i) + "\"} 1\n";
  auto packed = Gzip(big);
  ASSERT_TRUE(packed);
  EXPECT_LT(packed->size(), big.size() / 4);
  EXPECT_EQ(testing::Gunzip(*packed), big);
  EXPECT_EQ(testing::Gunzip(Gzip("").value()), "");
}

TEST(HttpHandlerTest, ParseBasicAuthorization) {
  auto c = ParseBasicAuthorization("Basic YWxpY2U6czNjcjN0");  // alice:s3cr3t
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "s3cr3t");
  c = ParseBasicAuthorization("basic  YTo6Yg==");  // a::b
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "a");
  EXPECT_EQ(c->password, ":b");
  c = ParseBasicAuthorization("Basic YTo=");  // a:
  ASSERT_TRUE(c);
  EXPECT_EQ(c->password, "");
  EXPECT_FALSE(ParseBasicAuthorization(""));
  EXPECT_FALSE(ParseBasicAuthorization("Bearer YWxpY2U6czNjcjN0"));
  EXPECT_FALSE(ParseBasicAuthorization("Basic !!!!"));
  EXPECT_FALSE(ParseBasicAuthorization("Basic YWxpY2U"));   // bad length
  EXPECT_FALSE(ParseBasicAuthorization("Basic YWxpY2U="));  // no ':'
}

TEST(HttpHandlerTest, BasicAuthChecksBcrypt) {
  const std::string hash = testing::BcryptHash("s3cr3t");
  ASSERT_FALSE(hash.empty());
  EXPECT_TRUE(CheckBcrypt("s3cr3t", hash));
  EXPECT_FALSE(CheckBcrypt("s3cr3T", hash));
  EXPECT_FALSE(CheckBcrypt("s3cr3t", "$2y$10$tooshort"));

  BasicAuth auth({{"alice", hash}});
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.Allows("Basic YWxpY2U6czNjcjN0"));
  EXPECT_TRUE(auth.Allows("Basic YWxpY2U6czNjcjN0"));   // cached now
  EXPECT_FALSE(auth.Allows("Basic YWxpY2U6czNjcjNU"));  // alice:s3cr3T
  EXPECT_FALSE(auth.Allows("Basic Ym9iOnMzY3IzdA=="));  // bob:s3cr3t
  EXPECT_FALSE(auth.Allows(""));

  Reply r = HandleRequest({bhttp::verb::get, "/", "", ""}, auth, kRender);
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(r.rejected, "unauthorized");
  EXPECT_THAT(r.headers,
              ::testing::Contains(::testing::Key("WWW-Authenticate")));
  // Auth comes before path and method: nothing leaks unauthenticated.
  r = HandleRequest({bhttp::verb::post, "/nope", "", ""}, auth, kRender);
  EXPECT_EQ(r.status, 401u);
  r = HandleRequest(
      {bhttp::verb::get, "/metrics", "Basic YWxpY2U6czNjcjN0", ""}, auth,
      kRender);
  EXPECT_EQ(r.status, 200u);
}

TEST(HttpHandlerTest, RouteLeavesTheExpositionToTheServer) {
  Reply r = Route({bhttp::verb::get, "/metrics", "", "gzip"}, true);
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.metrics);
  EXPECT_TRUE(r.body.empty());
  EXPECT_FALSE(Route({bhttp::verb::get, "/", "", ""}, true).metrics);
  EXPECT_FALSE(Route({bhttp::verb::get, "/metrics", "", ""}, false).metrics);
}

// kAllow from Precheck: answered from the cache, no bcrypt.
bool Cached(const BasicAuth& auth, std::string_view header) {
  BasicAuth::Check check;
  return auth.Precheck(header, &check) == BasicAuth::Verdict::kAllow;
}

TEST(HttpHandlerTest, ReloadKeepsVerifiedCredentialsOfUnchangedUsers) {
  const std::string alice = testing::BcryptHash("s3cr3t");
  const std::string bob = testing::BcryptHash("s3cr3t");
  const std::string alice_v2 = testing::BcryptHash("n3w");
  constexpr std::string_view kAlice = "Basic YWxpY2U6czNjcjN0";  // alice:s3cr3t
  constexpr std::string_view kBob = "Basic Ym9iOnMzY3IzdA==";    // bob:s3cr3t
  BasicAuth before({{"alice", alice}, {"bob", bob}});
  ASSERT_TRUE(before.Allows(kAlice));
  ASSERT_TRUE(before.Allows(kBob));
  ASSERT_TRUE(Cached(before, kAlice));

  // Same users and hashes: both stay verified.
  BasicAuth same({{"alice", alice}, {"bob", bob}});
  EXPECT_FALSE(Cached(same, kAlice));
  same.KeepVerified(before);
  EXPECT_TRUE(Cached(same, kAlice));
  EXPECT_TRUE(Cached(same, kBob));

  // alice's hash changed, bob removed then added back with his hash:
  // only bob's entry is kept.
  BasicAuth changed({{"alice", alice_v2}});
  changed.KeepVerified(before);
  EXPECT_FALSE(Cached(changed, kAlice));
  EXPECT_FALSE(changed.Allows(kAlice));
  BasicAuth readded({{"alice", alice_v2}, {"bob", bob}});
  readded.KeepVerified(before);
  EXPECT_TRUE(Cached(readded, kBob));
  EXPECT_FALSE(Cached(readded, kAlice));
}

TEST(HttpHandlerTest, ThrottleLimitsPendingChecksAndBacksOff) {
  using std::chrono::seconds;
  AuthThrottle::Limits limits;
  limits.pending_per_source = 2;
  limits.free_failures = 3;
  limits.first_backoff = seconds(1);
  limits.max_backoff = seconds(8);
  AuthThrottle t(limits);
  const auto t0 = AuthThrottle::Clock::time_point{} + seconds(1000);

  // Two checks in flight per source; another source is not affected.
  EXPECT_TRUE(t.TryStart("10.0.0.1", t0));
  EXPECT_TRUE(t.TryStart("10.0.0.1", t0));
  EXPECT_FALSE(t.TryStart("10.0.0.1", t0));
  EXPECT_TRUE(t.TryStart("10.0.0.2", t0));
  t.Finish("10.0.0.2", true, t0);
  t.Finish("10.0.0.1", false, t0);
  t.Finish("10.0.0.1", false, t0);
  // Third failure in a row: refused for 1 s, then 2 s, 4 s, 8 s, 8 s.
  ASSERT_TRUE(t.TryStart("10.0.0.1", t0));
  t.Finish("10.0.0.1", false, t0);
  auto now = t0;
  for (int backoff : {1, 2, 4, 8, 8}) {
    EXPECT_FALSE(t.TryStart(
        "10.0.0.1", now + seconds(backoff) - std::chrono::milliseconds(1)))
        << backoff;
    EXPECT_TRUE(t.TryStart("10.0.0.2", now));
    t.Finish("10.0.0.2", true, now);
    now += seconds(backoff);
    ASSERT_TRUE(t.TryStart("10.0.0.1", now)) << backoff;
    t.Finish("10.0.0.1", false, now);
  }
  // A success clears the record.
  now += seconds(8);
  ASSERT_TRUE(t.TryStart("10.0.0.1", now));
  t.Finish("10.0.0.1", true, now);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(t.TryStart("10.0.0.1", now));
    t.Finish("10.0.0.1", false, now);
  }
  EXPECT_TRUE(t.TryStart("10.0.0.1", now));
}

TEST(HttpHandlerTest, ThrottleRemembersABoundedNumberOfSources) {
  AuthThrottle::Limits limits;
  limits.max_sources = 2;
  limits.free_failures = 1;
  AuthThrottle t(limits);
  const auto now = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  ASSERT_TRUE(t.TryStart("a", now));
  ASSERT_TRUE(t.TryStart("b", now));
  // Both in flight: a third source waits for room.
  EXPECT_FALSE(t.TryStart("c", now));
  t.Finish("a", false, now);  // blocked: still remembered
  EXPECT_FALSE(t.TryStart("c", now));
  t.Finish("b", false, now + std::chrono::hours(1));
  // b's block has not run out either; a's has by now.
  EXPECT_TRUE(t.TryStart("c", now + std::chrono::minutes(10)));
  EXPECT_FALSE(t.TryStart("b", now + std::chrono::minutes(10)));
}

// Ranks: a source that passed before goes first until it keeps failing;
// among the others, fewer strikes (failures and refusals) first.
TEST(HttpHandlerTest, ThrottleRanksTrustedThenFewestStrikes) {
  AuthThrottle::Limits limits;
  limits.free_failures = 3;
  AuthThrottle t(limits);
  const auto now = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(t.RankOf("new"), (AuthThrottle::Rank{1, 0}));
  ASSERT_TRUE(t.TryStart("scraper", now));
  t.Finish("scraper", true, now);
  EXPECT_EQ(t.RankOf("scraper"), (AuthThrottle::Rank{0, 0}));
  // A rotation: the old password fails a couple of times, still trusted.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(t.TryStart("scraper", now));
    t.Finish("scraper", false, now);
  }
  EXPECT_EQ(t.RankOf("scraper").first, 0);
  ASSERT_TRUE(t.TryStart("scraper", now));
  t.Finish("scraper", false, now);  // the third in a row: no longer
  EXPECT_EQ(t.RankOf("scraper").first, 1);
  // A guesser: every failure, refusal and dropped check is a strike.
  ASSERT_TRUE(t.TryStart("guesser", now));
  t.Finish("guesser", false, now);
  ASSERT_TRUE(t.TryStart("guesser", now));
  t.Drop("guesser");
  ASSERT_TRUE(t.TryStart("guesser", now));
  ASSERT_TRUE(t.TryStart("guesser", now));
  EXPECT_FALSE(t.TryStart("guesser", now));  // 2 pending: refused
  EXPECT_EQ(t.RankOf("guesser"), (AuthThrottle::Rank{1, 3}));
  EXPECT_LT(t.RankOf("new"), t.RankOf("guesser"));
}

TEST(HttpHandlerTest, CheckQueueServesMostUrgentAndDisplacesTheLeast) {
  CheckQueue q(3);
  std::optional<std::uint64_t> displaced;
  EXPECT_TRUE(q.Push(1, {1, 5}, &displaced));
  EXPECT_TRUE(q.Push(2, {1, 5}, &displaced));
  EXPECT_TRUE(q.Push(3, {1, 9}, &displaced));
  EXPECT_FALSE(displaced);
  // Full: as urgent as the least urgent is not enough.
  EXPECT_FALSE(q.Push(4, {1, 9}, &displaced));
  EXPECT_FALSE(displaced);
  // Fewer strikes: takes the place of the most struck.
  EXPECT_TRUE(q.Push(5, {1, 0}, &displaced));
  EXPECT_EQ(displaced, 3u);
  // Trusted: ahead of all, displacing the latest of the equals.
  EXPECT_TRUE(q.Push(6, {0, 7}, &displaced));
  EXPECT_EQ(displaced, 2u);
  EXPECT_EQ(q.Pop(), 6u);
  EXPECT_EQ(q.Pop(), 5u);
  EXPECT_EQ(q.Pop(), 1u);
  EXPECT_FALSE(q.Pop());
}

// 2,000 sources flooding wrong passwords in-process, round after round: the
// right password, from a source trusted before (a rotation) or from a new
// source (a cold start), always gets the next check.
TEST(HttpHandlerTest, DistributedFloodCannotKeepTheRightPasswordOut) {
  AuthThrottle t;
  CheckQueue q(8);
  const auto t0 = AuthThrottle::Clock::time_point{} + std::chrono::hours(1);
  ASSERT_TRUE(t.TryStart("prometheus", t0));
  t.Finish("prometheus", true, t0);
  // id -> source of each queued check.
  std::map<std::uint64_t, std::string> queued;
  std::uint64_t next = 0;
  auto offer = [&](const std::string& source,
                   AuthThrottle::Clock::time_point now) {
    if (!t.TryStart(source, now)) return std::optional<std::uint64_t>();
    std::optional<std::uint64_t> displaced;
    const std::uint64_t id = next++;
    if (!q.Push(id, t.RankOf(source), &displaced)) {
      t.Drop(source);
      return std::optional<std::uint64_t>();
    }
    queued[id] = source;
    if (displaced) {
      t.Drop(queued[*displaced]);
      queued.erase(*displaced);
    }
    return std::optional<std::uint64_t>(id);
  };
  auto now = t0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 2000; ++i) offer("10.1." + std::to_string(i), now);
    // One check runs (a wrong one), then Prometheus (new password) asks.
    auto first = q.Pop();
    ASSERT_TRUE(first);
    t.Finish(queued[*first], false, now);
    queued.erase(*first);
    for (int i = 0; i < 2000; ++i) offer("10.1." + std::to_string(i), now);
    auto mine = offer("prometheus", now);
    ASSERT_TRUE(mine) << round;
    EXPECT_EQ(q.Pop(), mine) << round;
    t.Finish("prometheus", true, now);
    queued.erase(*mine);
    // A scraper never seen before gets a place too, behind at most the
    // queue's length of guesses (new sources' first ones, when round 0).
    for (int i = 0; i < 2000; ++i) offer("10.1." + std::to_string(i), now);
    const std::string scraper = "10.2." + std::to_string(round);
    auto fresh = offer(scraper, now);
    ASSERT_TRUE(fresh) << round;
    int ahead = 0;
    for (auto id = q.Pop(); id != fresh; id = q.Pop(), ++ahead) {
      ASSERT_TRUE(id) << round;
      t.Finish(queued[*id], false, now);
      queued.erase(*id);
    }
    EXPECT_LT(ahead, 8);
    if (round > 0) {
      EXPECT_EQ(ahead, 0);  // every guesser has strikes now
    }
    t.Finish(scraper, true, now);
    queued.erase(*fresh);
    // Drain the guesses: each one fails.
    while (auto id = q.Pop()) {
      t.Finish(queued[*id], false, now);
      queued.erase(*id);
    }
    now += std::chrono::seconds(15);
  }
}

// RFC 9112 section 6: only a lone `chunked` is a framing this server reads;
// anything else, or Transfer-Encoding with Content-Length, is refused.
TEST(HttpHandlerTest, FramingErrorRefusesTransferEncodingsNotImplemented) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(FramingError({}, false), "");
  EXPECT_EQ(FramingError({}, true), "");
  EXPECT_EQ(FramingError(V{"chunked"}, false), "");
  EXPECT_EQ(FramingError(V{" Chunked\t"}, false), "");
  for (std::string_view te :
       {"xchunked", "chunkedx", "gzip", "gzip, chunked", "chunked, gzip",
        "chunked, chunked", "", "identity", "chunked;q=1"}) {
    EXPECT_EQ(FramingError(V{te}, false),
              "a Transfer-Encoding other than chunked")
        << te;
  }
  EXPECT_EQ(FramingError(V{"chunked", "chunked"}, false),
            "more than one Transfer-Encoding");
  EXPECT_EQ(FramingError(V{"chunked"}, true),
            "both Transfer-Encoding and Content-Length");
}

TEST(HttpHandlerTest, ListenAddresses) {
  std::string error;
  auto e = ResolveListenAddress(":10915", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(FormatEndpoint(*e), "0.0.0.0:10915");
  e = ResolveListenAddress("[::]:10915", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(FormatEndpoint(*e), "[::]:10915");
  e = ResolveListenAddress("[::1]:0", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(FormatEndpoint(*e), "[::1]:0");
  e = ResolveListenAddress("127.0.0.1:80", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(FormatEndpoint(*e), "127.0.0.1:80");
  e = ResolveListenAddress("localhost:81", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_TRUE(e->address().is_loopback());
  for (const char* bad :
       {"10915", ":", ":65536", ":x", "[::1:80", "[zz]:80", "[]:80"}) {
    EXPECT_FALSE(ResolveListenAddress(bad, &error)) << bad;
    EXPECT_THAT(error, HasSubstr(std::string("cannot listen on ") + bad));
  }
}

}  // namespace
}  // namespace fabric::http
