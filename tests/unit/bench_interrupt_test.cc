// A run stopped by its interrupt descriptor (what SIGINT/SIGTERM write to in
// `fabricmon-bench run`) keeps the sizes it completed, so results.json can
// hold them; and the progress callback sees each size start and complete,
// with an ETA once two sizes are done. Two real agents on loopback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "benchtool/agent.h"
#include "benchtool/coordinator.h"
#include "benchtool/results.h"

namespace fabric::bench {
namespace {

class BenchInterruptTest : public ::testing::Test {
 public:
  void SetUp() override {
    ASSERT_EQ(pipe(interrupt_), 0);
    for (int i = 0; i < 2; ++i) {
      AgentOptions ao;
      ao.listen_address = "127.0.0.1:0";
      ao.key = key_;
      agents_.push_back(std::make_unique<BenchAgent>(io_, ao));
      std::string error;
      // Before io_ runs: nothing else is on its thread yet.
      ASSERT_TRUE(agents_.back()->Start(&error)) << error;
      hosts_.push_back("127.0.0.1:" + std::to_string(agents_.back()->port()));
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
    for (auto& a : agents_) a->Stop();
    close(interrupt_[0]);
    close(interrupt_[1]);
  }

  Key key_ = Key(32, 0x5a);
  int interrupt_[2] = {-1, -1};
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      work_ = boost::asio::make_work_guard(io_);
  std::thread thread_;
  std::vector<std::unique_ptr<BenchAgent>> agents_;
  std::vector<std::string> hosts_;
};

TEST_F(BenchInterruptTest, KeepsTheSizesCompletedBeforeIt) {
  RunOptions o;
  o.pattern = Pattern::kAllreduceRing;
  o.hosts = hosts_;
  o.key = key_;
  o.sizes = {1024, 2048, 4096, 8192};
  o.iterations = 3;
  o.warmup = 0;
  o.interrupt_fd = interrupt_[0];
  std::vector<SizeProgress> seen;
  o.progress = [&](const SizeProgress& p) {
    seen.push_back(p);
    // Ctrl-C as the second size completes.
    if (p.done && p.index == 1) {
      char c = 1;
      ASSERT_EQ(write(interrupt_[1], &c, 1), 1);
    }
  };
  RunOutcome out = RunBenchmark(o);
  EXPECT_FALSE(out.ok);
  EXPECT_TRUE(out.interrupted);
  EXPECT_EQ(out.error, "interrupted");
  ASSERT_EQ(out.sizes.size(), 2u);
  EXPECT_EQ(out.sizes[0].size_bytes, 1024u);
  EXPECT_EQ(out.sizes[1].size_bytes, 2048u);
  EXPECT_EQ(out.sizes[1].seconds.size(), 3u);

  // Start and completion of sizes 0 and 1, then the start of size 2.
  ASSERT_EQ(seen.size(), 5u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].index, i / 2);
    EXPECT_EQ(seen[i].count, 4u);
    EXPECT_EQ(seen[i].done, i % 2 == 1);
  }
  EXPECT_EQ(seen[1].iterations_done, 3);
  EXPECT_GT(seen[1].size_seconds, 0);
  EXPECT_EQ(seen[1].remaining_seconds, -1);  // one size: no estimate yet
  // Whether size 1 gives an estimate depends on how long these loopback
  // sizes took (no ETA until sizes grow in time: bench_progress_test).
  EXPECT_GE(seen[3].elapsed_seconds, seen[1].elapsed_seconds);

  // What `run` writes on Ctrl-C: those two sizes, marked interrupted.
  auto j = nlohmann::json::parse(ToJson(Summarize(o, out, "")));
  EXPECT_EQ(j["interrupted"], true);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["size_bytes"], 2048);
}

TEST_F(BenchInterruptTest, UninterruptedRunIsNotMarked) {
  RunOptions o;
  o.pattern = Pattern::kAllreduceRing;
  o.hosts = hosts_;
  o.key = key_;
  o.sizes = {1024, 2048};
  o.iterations = 2;
  o.warmup = 0;
  o.interrupt_fd = interrupt_[0];
  RunOutcome out = RunBenchmark(o);
  EXPECT_TRUE(out.ok) << out.error;
  EXPECT_FALSE(out.interrupted);
  EXPECT_EQ(out.sizes.size(), 2u);
}

}  // namespace
}  // namespace fabric::bench
