// fabricmon-bench end to end: the binary with --local agents (loopback, and
// network namespaces with tbf-shaped veths when root), results.json as the
// issue specifies it (with the run's metadata), a progress line per size, a
// host killed mid-run (the error names it and the others stop sending), a
// coordinator with the wrong key refused, Ctrl-C and SIGTERM keeping the
// sizes measured so far (results.json and report), the HTML report in
// headless Chromium, and a push to a real Pushgateway.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "benchtool/coordinator.h"
#include "benchtool/local.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/temp_dir.h"

namespace fabric::bench {
namespace {

const std::string kBench =
    std::string(FABRICMON_BINARY_DIR) + "/fabricmon-bench";

using testing::TempDir;

bool CanUseNetns() {
  return geteuid() == 0 && access("/usr/sbin/ip", X_OK) == 0 &&
         system("ip netns list >/dev/null 2>&1") == 0;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Checks results.json against the contract.
void CheckResults(const std::string& path, const std::string& pattern,
                  int hosts, double factor, std::size_t rows) {
  auto j = nlohmann::json::parse(Slurp(path));
  EXPECT_EQ(j.at("pattern"), pattern);
  EXPECT_EQ(j.at("hosts"), hosts);
  EXPECT_EQ(j.at("transport"), "tcp");
  const auto& m = j.at("metadata");
  EXPECT_EQ(m.at("hosts").size(), static_cast<std::size_t>(hosts));
  EXPECT_FALSE(m.at("link").get<std::string>().empty());
  EXPECT_EQ(m.at("devices_from"), "this host (--local)");
  EXPECT_TRUE(m.at("devices").is_array());
  EXPECT_EQ(m.at("start_time").get<std::string>().size(), 20u);
  EXPECT_LE(m.at("start_time").get<std::string>(),
            m.at("end_time").get<std::string>());
  EXPECT_FALSE(m.at("fabricmon_version").get<std::string>().empty());
  std::string tail = j.at("iterations").get<int>() >= 20 ? "p90" : "max";
  ASSERT_EQ(j.at("results").size(), rows);
  for (const auto& r : j.at("results")) {
    double size = r.at("size_bytes"), t = r.at("time_seconds");
    double algbw = r.at("algbw_bytes_per_second");
    double busbw = r.at("busbw_bytes_per_second");
    EXPECT_GT(t, 0);
    EXPECT_DOUBLE_EQ(algbw, size / t);
    EXPECT_DOUBLE_EQ(busbw, algbw * factor);
    EXPECT_LE(r.at("p50_seconds").get<double>(),
              r.at("tail_seconds").get<double>());
    EXPECT_EQ(r.at("tail_name"), tail);
    EXPECT_FALSE(r.at("iterations").empty());
  }
}

TEST(BenchLocal, LoopbackAllReduceWritesResults) {
  TempDir dir;
  auto run = testing::RunCommand(
      kBench +
      " run --pattern allreduce-ring --local 3 --local-loopback"
      " --sizes 1K:64K:x4 --iterations 3 --warmup 1 --out " +
      dir.path() + "/r.json 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  CheckResults(dir.path() + "/r.json", "allreduce-ring", 3, 2.0 * 2 / 3, 4);
  // A progress line per size; the last ends the run.
  EXPECT_NE(run.out.find("[1/4] 1 KiB: 3 iterations in "), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(", ETA "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[4/4] 64 KiB: 3 iterations in "), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(", done\n"), std::string::npos) << run.out;
  // And the report beside results.json.
  EXPECT_NE(Slurp(dir.path() + "/r.html").find("<svg"), std::string::npos);
}

// The reported failure: 4 hosts and sizes 4 hosts do not divide (8 and 12
// failed with "sent 4 bytes, expected 0", blaming a host) run.
TEST(BenchLocal, LoopbackAllToAllAtSizesTheHostsDoNotDivide) {
  TempDir dir;
  auto run = testing::RunCommand(
      kBench +
      " run --pattern alltoall --local 4 --local-loopback"
      " --sizes 1,8,12,16,1021 --iterations 2 --warmup 1 --out " +
      dir.path() + "/r.json 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  CheckResults(dir.path() + "/r.json", "alltoall", 4, 3.0 / 4, 5);
}

TEST(BenchLocal, EveryPatternInNamespacesOverShapedVeth) {
  if (!CanUseNetns()) MISSING_DEPENDENCY("root and ip netns");
  TempDir dir;
  struct P {
    const char* name;
    double factor;
  } patterns[] = {{"allgather-ring", 3.0 / 4},
                  {"reducescatter-ring", 3.0 / 4},
                  {"alltoall", 3.0 / 4},
                  {"sendrecv-pairs", 1.0},
                  {"tp-dp", 1.0 + 1.0}};
  for (const auto& p : patterns) {
    std::string out = dir.path() + "/" + p.name + ".json";
    auto run = testing::RunCommand(
        kBench + " run --pattern " + p.name +
        " --local 4 --tp 2 --sizes 4K,256K --iterations 2 --warmup 1 --out " +
        out + " 2>&1");
    ASSERT_EQ(run.exit_code, 0) << p.name << "\n" << run.out;
    EXPECT_NE(run.out.find("network namespaces"), std::string::npos);
    CheckResults(out, p.name, 4, p.factor, 2);
    // The tbf rate is the line rate the report draws.
    auto j = nlohmann::json::parse(Slurp(out));
    EXPECT_EQ(j["metadata"]["line_rate_bytes_per_second"], 125e6);
    EXPECT_EQ(j["metadata"]["line_rate_source"], "tbf 1gbit");
  }
}

// Bytes the bridge namespace's veth ends have received (what agents sent).
std::uint64_t BridgeRxBytes() {
  std::ifstream in("/proc/thread-self/net/dev");
  std::string line;
  std::uint64_t sum = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name.empty() || name[0] != 'b' || name == "br0") continue;
    std::istringstream rest(line.substr(colon + 1));
    std::uint64_t rx = 0;
    rest >> rx;
    sum += rx;
  }
  return sum;
}

TEST(BenchLocal, HostDyingMidRunIsNamedAndTheOthersStop) {
  if (!CanUseNetns()) MISSING_DEPENDENCY("root and ip netns");
  LocalOptions lo;
  lo.agents = 4;
  lo.rate = "40mbit";  // one 8 MiB all-reduce takes about 2.5 s
  lo.self_exe = kBench;
  std::string error;
  auto cluster = LocalCluster::Start(lo, &error);
  ASSERT_TRUE(cluster) << error;
  RunOptions o;
  o.pattern = Pattern::kAllreduceRing;
  o.hosts = cluster->hosts();
  o.key = cluster->key();
  o.sizes = {8 << 20};
  o.iterations = 50;
  o.warmup = 0;
  o.io_timeout = std::chrono::milliseconds(5000);
  std::atomic<bool> started{false};
  o.progress = [&](const SizeProgress&) { started = true; };
  RunOutcome out;
  std::thread runner([&] { out = RunBenchmark(o); });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Let the bulk traffic flow, then kill rank 1.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  cluster->Kill(1);
  runner.join();
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.failed_host, cluster->hosts()[1]) << out.error;
  EXPECT_NE(out.error.find(cluster->hosts()[1]), std::string::npos)
      << out.error;
  // The survivors were told to stop and reset their links: nothing more
  // crosses the bridge (a few KiB of stray ACKs/keepalives at most).
  std::uint64_t before = BridgeRxBytes();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_LT(BridgeRxBytes() - before, 64u * 1024);
}

TEST(BenchLocal, WrongKeyIsRefusedWithAClearError) {
  LocalOptions lo;
  lo.agents = 2;
  lo.netns = false;
  lo.self_exe = kBench;
  std::string error;
  auto cluster = LocalCluster::Start(lo, &error);
  ASSERT_TRUE(cluster) << error;
  RunOptions o;
  o.hosts = cluster->hosts();
  o.key = Key(32, 0x11);
  o.sizes = {1024};
  auto out = RunBenchmark(o);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.failed_host, cluster->hosts()[0]);
  EXPECT_NE(out.error.find("key"), std::string::npos) << out.error;
}

// The namespaces --local made for the process `pid` (fmb<pid>-...).
std::vector<std::string> NamespacesOf(pid_t pid) {
  std::vector<std::string> out;
  std::string prefix = "fmb" + std::to_string(pid) + "-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) {
    std::string name = e.path().filename();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

TEST(BenchLocal, SigtermMidRunRemovesTheLocalCluster) {
  if (!CanUseNetns()) MISSING_DEPENDENCY("root and ip netns");
  TempDir dir;
  std::string log = dir.path() + "/stderr";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    dup2(fd, 1);
    execl(kBench.c_str(), kBench.c_str(), "run", "--pattern", "allreduce-ring",
          "--local", "2", "--local-rate", "40mbit", "--sizes", "64K,8M",
          "--iterations", "50", "--out", (dir.path() + "/r.json").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupt once the first size is done and the 8 MiB one under way.
  const std::string first = "[1/2] 64 KiB: 50 iterations in ";
  for (int i = 0; i < 600 && Slurp(log).find(first) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(Slurp(log).find(first), std::string::npos) << Slurp(log);
  EXPECT_EQ(NamespacesOf(pid).size(), 3u);  // two agents and the bridge
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "fabricmon-bench did not exit within 10 s of SIGTERM";
  }
  ASSERT_TRUE(WIFEXITED(status)) << Slurp(log);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_NE(Slurp(log).find("interrupted after 1 of 2 sizes"),
            std::string::npos)
      << Slurp(log);
  EXPECT_TRUE(NamespacesOf(pid).empty());
  // What was measured is kept: the 64 KiB size.
  auto j = nlohmann::json::parse(Slurp(dir.path() + "/r.json"));
  EXPECT_EQ(j["interrupted"], true);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["size_bytes"], 65536);
  EXPECT_NE(Slurp(dir.path() + "/r.html").find("[interrupted]"),
            std::string::npos);
}

// Ctrl-C during `run`: the sizes done so far are written (results.json and
// the report, both saying "interrupted"), and the exit status says SIGINT.
// Loopback, so no root is needed; 1000 iterations of 64 MiB take minutes.
TEST(BenchLocal, CtrlCKeepsTheSizesMeasuredSoFar) {
  TempDir dir;
  std::string log = dir.path() + "/stderr";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    dup2(fd, 1);
    execl(kBench.c_str(), kBench.c_str(), "run", "--pattern", "allreduce-ring",
          "--local", "2", "--local-loopback", "--sizes", "1K,4K,64M",
          "--iterations", "1000", "--warmup", "0", "--out",
          (dir.path() + "/r.json").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string second = "[2/3] 4 KiB: 1000 iterations in ";
  for (int i = 0; i < 600 && Slurp(log).find(second) == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(Slurp(log).find(second), std::string::npos) << Slurp(log);
  EXPECT_NE(Slurp(log).find("[1/3] 1 KiB: 1000 iterations in "),
            std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "fabricmon-bench did not exit within 10 s of SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status)) << Slurp(log);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << Slurp(log);
  EXPECT_NE(Slurp(log).find("interrupted after 2 of 3 sizes"),
            std::string::npos)
      << Slurp(log);
  auto j = nlohmann::json::parse(Slurp(dir.path() + "/r.json"));
  EXPECT_EQ(j["interrupted"], true);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["size_bytes"], 1024);
  EXPECT_EQ(j["results"][1]["size_bytes"], 4096);
  EXPECT_EQ(j["results"][1]["iterations"].size(), 1000u);
  EXPECT_EQ(j["results"][1]["tail_name"], "p99");
  EXPECT_EQ(j["metadata"]["hosts"].size(), 2u);
  EXPECT_FALSE(j["metadata"]["end_time"].get<std::string>().empty());
  std::string html = Slurp(dir.path() + "/r.html");
  EXPECT_NE(html.find("was interrupted: it holds 2 completed size(s)"),
            std::string::npos);
}

TEST(BenchReport, SelfContainedHtmlRendersInHeadlessChromium) {
  TempDir dir;
  for (const char* label : {"before", "after"}) {
    auto run = testing::RunCommand(
        kBench +
        " run --pattern allreduce-ring --local 2 --local-loopback"
        " --sizes 1K:1M:x4 --iterations 2 --warmup 0 --label " +
        label + " --out " + dir.path() + "/" + label + ".json 2>&1");
    ASSERT_EQ(run.exit_code, 0) << run.out;
  }
  auto rep = testing::RunCommand(
      kBench + " report " + dir.path() + "/before.json " + dir.path() +
      "/after.json --out " + dir.path() + "/report.html 2>&1");
  ASSERT_EQ(rep.exit_code, 0) << rep.out;
  std::string html = Slurp(dir.path() + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // Two curves (one per run) and a table row per run and size.
  std::size_t lines = 0;
  for (auto p = html.find("<polyline"); p != std::string::npos;
       p = html.find("<polyline", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u * 3);  // per run: busbw, median and tail time
  EXPECT_NE(html.find("before (tcp, 2 hosts)"), std::string::npos);

  if (access("/usr/bin/chromium", X_OK) != 0) {
    MISSING_DEPENDENCY("chromium (scripts/setup.sh installs it)");
  }
  std::string png = dir.path() + "/shot.png";
  auto shot = testing::RunCommand(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu "
      "--disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=" +
      dir.path() + "/profile --window-size=900,1000 --screenshot=" + png +
      " file://" + dir.path() + "/report.html 2>&1");
  ASSERT_EQ(shot.exit_code, 0) << shot.out;
  std::string bytes = Slurp(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

TEST(BenchPush, ResultsReachARealPushgateway) {
  const char* gw = "/usr/bin/prometheus-pushgateway";
  if (access(gw, X_OK) != 0) {
    MISSING_DEPENDENCY("prometheus-pushgateway (scripts/setup.sh)");
  }
  TempDir dir;
  auto run =
      testing::RunCommand(kBench +
                          " run --pattern alltoall --local 2 --local-loopback"
                          " --sizes 4K --iterations 2 --warmup 0 --out " +
                          dir.path() + "/r.json 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  int port = testing::FreeLoopbackPort();
  testing::sim::Session gateway(
      std::string(gw) + " --web.listen-address=127.0.0.1:" +
          std::to_string(port) + " --persistence.file=",
      dir.path() + "/gw.log");
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = testing::HttpGetOk(port, "/-/ready").has_value();
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << Slurp(dir.path() + "/gw.log");
  auto push = testing::RunCommand(
      kBench + " push --gateway http://127.0.0.1:" + std::to_string(port) +
      " --run ci " + dir.path() + "/r.json 2>&1");
  ASSERT_EQ(push.exit_code, 0) << push.out;
  auto metrics = testing::HttpGetOk(port, "/metrics");
  ASSERT_TRUE(metrics);
  // class: the agents (loopback, this host's /sys) report no rails.
  EXPECT_NE(
      metrics->find("fabric_bench_busbw_bytes_per_second{"
                    "class=\"unknown\",instance=\"\",job=\"fabricmon_bench\","
                    "pattern=\"alltoall\",run=\"ci\",size=\"4096\","
                    "transport=\"tcp\"}"),
      std::string::npos)
      << *metrics;
  // A gateway that is not there is an error, not a hang or a crash.
  auto bad =
      testing::RunCommand(kBench + " push --gateway http://127.0.0.1:1 " +
                          dir.path() + "/r.json 2>&1");
  EXPECT_NE(bad.exit_code, 0);
}

}  // namespace
}  // namespace fabric::bench
