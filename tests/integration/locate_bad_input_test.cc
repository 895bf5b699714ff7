// fabricmon-locate facing a Prometheus that misbehaves (a fake HTTP server
// on 127.0.0.1:0, tests/support/fake_http_server.h): bytes that are not
// HTTP, a page that is not a query answer, hostile JSON, no answer at all
// (the query timeout fires), 401 for missing credentials, a 503 with
// Prometheus' error text, and an empty window. Every case exits non-zero
// with a message naming what went wrong, prints no table (no culprit), and
// returns: nothing hangs.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/fake_http_server.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

// The locator against `server`, stderr kept apart; `timeout` only guards
// the test against a hang (it is not what is being measured).
Outcome Locate(const FakeHttpServer& server, const std::string& extra) {
  const fs::path err = fs::temp_directory_path() /
                       ("locate_bad_input." + std::to_string(getpid()));
  const CommandResult r = RunCommand(
      "timeout 120 " + Binary("fabricmon-locate") +
      " --prometheus http://127.0.0.1:" + std::to_string(server.port()) +
      (extra.find("--query-timeout-ms") == std::string::npos
           ? " --query-timeout-ms 500 "
           : " ") +
      extra + " 2>" + err.string());
  Outcome o{r.exit_code, r.out, ReadFile(err)};
  fs::remove(err);
  return o;
}

std::string Vector(const std::string& result) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" +
         result + "]}}";
}

void ExpectFailure(const FakeHttpAnswer* answer, int want_exit,
                   const std::string& want_error,
                   const std::string& extra = "") {
  FakeHttpServer server([answer](const std::string&) {
    return answer ? std::optional(*answer) : std::nullopt;
  });
  ASSERT_GT(server.port(), 0);
  const Outcome o = Locate(server, extra);
  EXPECT_EQ(o.exit_code, want_exit) << o.out << o.err;
  EXPECT_NE(o.err.find("fabricmon-locate: "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(want_error), std::string::npos)
      << "want \"" << want_error << "\" in: " << o.err;
  EXPECT_EQ(o.out, "") << "printed a report from a bad answer";
  EXPECT_GT(server.requests(), 0);
}

TEST(LocateBadInput, NotHttp) {
  const FakeHttpAnswer a{.body = "SSH-2.0-OpenSSH_9.2\r\n\r\n", .raw = true};
  ExpectFailure(&a, 3, "Prometheus unreachable: ");
}

TEST(LocateBadInput, APageThatIsNotAQueryAnswer) {
  const FakeHttpAnswer a{.content_type = "text/html",
                         .body = "<html><body>Grafana</body></html>"};
  ExpectFailure(&a, 3, "the answer is not a JSON object");
}

TEST(LocateBadInput, HostileJson) {
  for (const std::string& body :
       {Vector(R"({"metric":{"peer":7},"value":[1,"2"]})"),
        Vector(R"({"metric":{},"value":[1,"twelve"]})"),
        std::string(R"({"status":"success","data":{"resultType":"matrix"}})"),
        std::string(R"({"status":"success","data":)")}) {
    const FakeHttpAnswer a{.body = body};
    ExpectFailure(&a, 3, "bad answer to ");
  }
}

TEST(LocateBadInput, NoAnswerTimesOut) {
  ExpectFailure(nullptr, 3, "Prometheus unreachable: ");
}

TEST(LocateBadInput, NeedsAuthItWasNotGiven) {
  const FakeHttpAnswer a{.status = 401,
                         .content_type = "text/plain",
                         .body = "Unauthorized\n",
                         .www_authenticate = "Basic realm=\"prometheus\""};
  ExpectFailure(&a, 3, "HTTP 401 (needs --basic-auth-user?)");
  // --link asks Prometheus before the fabric: the same error, no LFT read.
  ExpectFailure(&a, 3, "HTTP 401", "--link 0x0002c90300000001:1");
}

TEST(LocateBadInput, PrometheusErrorTextIsShown) {
  const FakeHttpAnswer a{.status = 503,
                         .body =
                             R"({"status":"error","errorType":"unavailable",)"
                             R"("error":"TSDB not ready"})"};
  ExpectFailure(&a, 3, "HTTP 503: status is not \"success\": TSDB not ready");
}

TEST(LocateBadInput, AnEmptyWindowIsNoProbeData) {
  const FakeHttpAnswer a{.body = Vector("")};
  ExpectFailure(&a, 4, "no probe data in the last 30m");
}

}  // namespace
}  // namespace fabric::testing

namespace fabric::testing {
namespace {

// Issue 40 item 6: a huge answer is refused at the stated bound, with a
// message that says which bound, instead of being read into gigabytes.
TEST(LocateBadInput, TooManySeriesAreRefusedAtTheBound) {
  std::string result;
  for (int i = 0; i < 300; ++i) {
    result += std::string(i ? "," : "") + R"({"metric":{"peer":"h)" +
              std::to_string(i) + R"("},"value":[1,"600"]})";
  }
  const FakeHttpAnswer a{.body = Vector(result)};
  ExpectFailure(&a, 3, "more than 100 series in one answer",
                "--max-series 100");
}

TEST(LocateBadInput, AnAnswerOverTheByteBoundIsRefused) {
  // 65 MiB: over the default bound of 64 MiB.
  const FakeHttpAnswer a{.body = Vector(R"({"metric":{"peer":")" +
                                        std::string(65 << 20, 'x') +
                                        R"("},"value":[1,"600"]})")};
  ExpectFailure(&a, 3, "is larger than 64 MiB, fabricmon-locate's bound",
                "--query-timeout-ms 60000");
  ExpectFailure(&a, 3, "is larger than 1 MiB",
                "--max-answer-mb 1 --query-timeout-ms 60000");
}

}  // namespace
}  // namespace fabric::testing
