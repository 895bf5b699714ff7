// locate/jobs.h and the jobs in the vote and the report: a pair's hosts
// from its prober's instance and its peer's address, the jobs on them
// from fabric_node_job_info samples, the hosts a ranked link collects from
// the bad pairs crossing it (not the good ones), and the table and JSON
// lines that list them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "locate/jobs.h"
#include "locate/report.h"
#include "locate/score.h"

namespace fabric::locate {
namespace {

PromSample JobSample(const std::string& instance, const std::string& host,
                     const std::string& id, const std::string& user,
                     const std::string& name) {
  PromSample s;
  s.labels = {{"instance", instance},
              {"host", host},
              {"job_id", id},
              {"user", user},
              {"job_name", name}};
  s.value = 1;
  return s;
}

TEST(LocateJobs, HostsOfAddressesAndProbers) {
  EXPECT_EQ(HostOf("10.0.0.1:10915"), "10.0.0.1");
  EXPECT_EQ(HostOf("gpu001"), "gpu001");
  EXPECT_EQ(HostOf("[fe80::1]:10916"), "fe80::1");
  EXPECT_EQ(HostOf("fe80::1"), "fe80::1");  // bare IPv6: no port to strip
  EXPECT_EQ(ProberHost("instance=gpu001:10915,job=fabricmon,rail=0"), "gpu001");
  EXPECT_EQ(ProberHost("job=fabricmon,instance=10.0.0.1:10915"), "10.0.0.1");
  EXPECT_EQ(ProberHost("job=fabricmon"), "");
  EXPECT_EQ(ProberHost(""), "");
}

TEST(LocateJobs, JobsOnTheHostsByInstanceOrHostLabelOnceEach) {
  const std::vector<PromSample> samples = {
      JobSample("10.0.0.1:10915", "gpu001", "4711", "alice", "llama-70b"),
      JobSample("10.0.0.2:10915", "gpu002", "4711", "alice", "llama-70b"),
      JobSample("10.0.0.2:10915", "gpu002", "900", "bob", ""),
      // 10.0.0.20 is not 10.0.0.2.
      JobSample("10.0.0.20:10915", "gpu020", "6000", "erin", ""),
      // Reached by its host label (a peer configured by name).
      JobSample("10.0.0.3:10915", "gpu003", "77", "carol", "ingest"),
      JobSample("10.0.0.4:10915", "gpu004", "", "nobody", ""),  // no ID
  };
  const std::vector<Job> jobs =
      JobsOnHosts(samples, {"10.0.0.1", "10.0.0.2", "gpu003", "10.0.0.4"});
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0], (Job{"77", "carol", "ingest"}));  // numeric order
  EXPECT_EQ(jobs[1], (Job{"900", "bob", ""}));
  EXPECT_EQ(jobs[2], (Job{"4711", "alice", "llama-70b"}));
  EXPECT_EQ(JobsText(jobs),
            "77 (carol: ingest), 900 (bob), 4711 (alice: llama-70b)");
  EXPECT_TRUE(JobsOnHosts(samples, {}).empty());
  EXPECT_EQ(JobsText({}), "");
}

TEST(LocateJobs, ALinkCollectsTheHostsOfTheBadPairsCrossingIt) {
  const Link shared = MakeLink({10, 20}, {20, 1});
  const Link other = MakeLink({11, 20}, {20, 2});
  const std::vector<PathObservation> paths = {
      {Verdict::kBad, {shared}, {"gpu001", "gpu002"}},
      {Verdict::kBad, {shared, other}, {"gpu003", "gpu002"}},
      {Verdict::kGood, {other}, {"gpu009"}},  // good: not a victim
  };
  const Scores s = ScoreLinks(paths);
  ASSERT_EQ(s.ranked.size(), 2u);
  EXPECT_EQ(s.ranked[0].link, shared);
  EXPECT_EQ(s.ranked[0].hosts,
            (std::set<std::string>{"gpu001", "gpu002", "gpu003"}));
  EXPECT_EQ(s.ranked[1].hosts, (std::set<std::string>{"gpu002", "gpu003"}));
}

TEST(LocateJobs, TheReportListsEachLinksJobs) {
  Report r;
  r.window = "30m";
  RankedLink l;
  l.score.link = MakeLink({10, 20}, {20, 1});
  l.score.votes = 1;
  l.score.bad_pairs = 1;
  l.jobs = {{"4711", "alice", "llama-70b"}, {"4712", "bob", ""}};
  r.ranked.push_back(l);
  RankedLink quiet = l;
  quiet.jobs.clear();
  r.ranked.push_back(quiet);
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("jobs: 4711 (alice: llama-70b), 4712 (bob)\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("jobs:"), table.rfind("jobs:")) << table;
  const auto j = nlohmann::json::parse(FormatJson(r));
  ASSERT_EQ(j["links"][0]["jobs"].size(), 2u);
  EXPECT_EQ(j["links"][0]["jobs"][0]["job_id"], "4711");
  EXPECT_EQ(j["links"][0]["jobs"][0]["user"], "alice");
  EXPECT_EQ(j["links"][0]["jobs"][0]["job_name"], "llama-70b");
  EXPECT_TRUE(j["links"][1]["jobs"].empty());
}

}  // namespace
}  // namespace fabric::locate
