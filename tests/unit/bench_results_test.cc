// results.json beyond the numbers: the slowest iterations named for what
// their count can show (no p99 of 20 iterations), the run's metadata (hosts,
// HCA model, link layer, rate, MTU, firmware, transport, times, fabricmon
// version) written, read back and read from sysfs, an interrupted run
// marked, and files written before all this still read.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "benchtool/results.h"
#include "benchtool/run_info.h"
#include "tests/support/fake_sysfs.h"

namespace fabric::bench {
namespace {

using nlohmann::json;

TEST(BenchResults, TailIsNamedForWhatTheIterationsCanShow) {
  // At least two values above a percentile, else it is the maximum.
  EXPECT_EQ(TailName(1), "max");
  EXPECT_EQ(TailName(10), "max");
  EXPECT_EQ(TailName(19), "max");
  EXPECT_EQ(TailName(20), "p90");  // the default: not p99, not p95
  EXPECT_EQ(TailName(39), "p90");
  EXPECT_EQ(TailName(40), "p95");
  EXPECT_EQ(TailName(100), "p95");
  EXPECT_EQ(TailName(199), "p95");
  EXPECT_EQ(TailName(200), "p99");
  // The named percentile has at least two values above it (nearest rank).
  for (std::size_t n : {20u, 40u, 57u, 200u, 1000u}) {
    std::vector<double> v;
    for (std::size_t i = 1; i <= n; ++i) v.push_back(static_cast<double>(i));
    double tail = Percentile(v, TailPercentile(n));
    EXPECT_LE(tail, static_cast<double>(n) - 2) << n;
  }
}

RunOptions FourHosts(int iterations) {
  RunOptions o;
  o.pattern = Pattern::kAllreduceRing;
  o.hosts = {"a:1", "b:1", "c:1", "d:1"};
  o.iterations = iterations;
  o.warmup = 2;
  return o;
}

// One size whose iterations took 1..n ms.
RunOutcome Ramp(int n) {
  RunOutcome out;
  out.ok = true;
  SizeMeasurement m;
  m.size_bytes = 4096;
  for (int i = 1; i <= n; ++i) m.seconds.push_back(i * 1e-3);
  m.counters.resize(n);
  out.sizes.push_back(m);
  return out;
}

TEST(BenchResults, SummaryAndJsonNameTheTail) {
  Results r = Summarize(FourHosts(20), Ramp(20), "");
  EXPECT_EQ(r.iterations, 20);
  EXPECT_EQ(r.results[0].tail_name, "p90");
  EXPECT_DOUBLE_EQ(r.results[0].tail_seconds, 18e-3);  // 2 slower ones
  json j = json::parse(ToJson(r));
  EXPECT_EQ(j["iterations"], 20);
  EXPECT_EQ(j["results"][0]["tail_name"], "p90");
  EXPECT_DOUBLE_EQ(j["results"][0]["tail_seconds"].get<double>(), 18e-3);
  EXPECT_FALSE(j["results"][0].contains("p99_seconds"));

  r = Summarize(FourHosts(5), Ramp(5), "");
  EXPECT_EQ(r.results[0].tail_name, "max");
  EXPECT_DOUBLE_EQ(r.results[0].tail_seconds, 5e-3);
}

RunInfo SampleInfo() {
  RunInfo info;
  info.hosts = {"10.0.0.1:10916", "10.0.0.2:10916"};
  info.link = "network namespaces, veth shaped by tbf at 1gbit";
  info.devices_from = "this host (--local)";
  DeviceInfo d;
  d.name = "mlx5_0";
  d.hca_model = "MT4129";
  d.board_id = "MT_0000000838";
  d.firmware = "28.39.1002";
  d.ports.push_back(
      {"1", "Ethernet", "400 Gb/sec (4X NDR)", "4200", "4: ACTIVE"});
  info.devices.push_back(d);
  info.line_rate_bytes_per_second = 50e9;
  info.line_rate_source = "--line-rate 400gbit";
  info.start_time = "2026-12-05T07:40:03Z";
  info.end_time = "2026-12-05T07:41:01Z";
  info.fabricmon_version = "0.9.0";
  info.fabricmon_revision = "e5d4a61";
  return info;
}

TEST(BenchResults, MetadataIsWrittenAndReadBack) {
  RunOptions o = FourHosts(20);
  o.transport = "rdma";
  Results r = Summarize(o, Ramp(20), "IB", SampleInfo());
  json j = json::parse(ToJson(r));
  EXPECT_EQ(j["transport"], "rdma");
  EXPECT_EQ(j["interrupted"], false);
  const json& m = j.at("metadata");
  EXPECT_EQ(m["hosts"], json({"10.0.0.1:10916", "10.0.0.2:10916"}));
  EXPECT_EQ(m["link"], "network namespaces, veth shaped by tbf at 1gbit");
  EXPECT_EQ(m["devices"][0]["name"], "mlx5_0");
  EXPECT_EQ(m["devices"][0]["hca_model"], "MT4129");
  EXPECT_EQ(m["devices"][0]["firmware"], "28.39.1002");
  EXPECT_EQ(m["devices"][0]["ports"][0]["link_layer"], "Ethernet");
  EXPECT_EQ(m["devices"][0]["ports"][0]["rate"], "400 Gb/sec (4X NDR)");
  EXPECT_EQ(m["devices"][0]["ports"][0]["mtu"], "4200");
  EXPECT_EQ(m["line_rate_bytes_per_second"], 50e9);
  EXPECT_EQ(m["line_rate_source"], "--line-rate 400gbit");
  EXPECT_EQ(m["start_time"], "2026-12-05T07:40:03Z");
  EXPECT_EQ(m["end_time"], "2026-12-05T07:41:01Z");
  EXPECT_EQ(m["fabricmon_version"], "0.9.0");
  EXPECT_EQ(m["fabricmon_revision"], "e5d4a61");

  std::string err;
  auto back = FromJson(ToJson(r), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->info.hosts, SampleInfo().hosts);
  ASSERT_EQ(back->info.devices.size(), 1u);
  EXPECT_EQ(back->info.devices[0].hca_model, "MT4129");
  EXPECT_EQ(back->info.devices[0].ports[0].mtu, "4200");
  EXPECT_EQ(back->info.line_rate_bytes_per_second, 50e9);
  EXPECT_EQ(back->info.fabricmon_version, "0.9.0");
  EXPECT_EQ(back->iterations, 20);
  EXPECT_EQ(back->results[0].tail_name, "p90");
}

// Run inside a Slurm allocation, results.json records it (and outside one,
// says nothing about Slurm).
TEST(BenchResults, TheSlurmAllocationIsRecorded) {
  RunInfo info = SampleInfo();
  const std::map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "4711"},
      {"SLURM_JOB_NAME", "nccl-check"},
      {"SLURM_JOB_NODELIST", "gpu[001-002]"}};
  ReadSlurmAllocation(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &info);
  Results r = Summarize(FourHosts(20), Ramp(20), "IB", info);
  json j = json::parse(ToJson(r));
  EXPECT_EQ(j["metadata"]["slurm"], json({{"job_id", "4711"},
                                          {"job_name", "nccl-check"},
                                          {"nodelist", "gpu[001-002]"}}));
  std::string err;
  auto back = FromJson(ToJson(r), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->info.slurm_job_id, "4711");
  EXPECT_EQ(back->info.slurm_job_nodelist, "gpu[001-002]");

  RunInfo outside = SampleInfo();
  ReadSlurmAllocation([](const char*) -> const char* { return nullptr; },
                      &outside);
  json none =
      json::parse(ToJson(Summarize(FourHosts(20), Ramp(20), "IB", outside)));
  EXPECT_FALSE(none["metadata"].contains("slurm"));
}

TEST(BenchResults, InterruptedRunKeepsItsSizesAndSaysSo) {
  RunOutcome out = Ramp(20);
  out.ok = false;
  out.interrupted = true;
  out.error = "interrupted";
  Results r = Summarize(FourHosts(20), out, "");
  json j = json::parse(ToJson(r));
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_EQ(j["results"].size(), 1u);
  std::string err;
  auto back = FromJson(ToJson(r), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_TRUE(back->interrupted);
}

TEST(BenchResults, FilesFromBeforeTheMetadataStillRead) {
  // 20 iterations' nearest-rank p99 is their maximum: named so.
  json old = json::parse(R"({"pattern": "alltoall", "hosts": 2, "results": [
      {"size_bytes": 8, "time_seconds": 1e-4,
       "algbw_bytes_per_second": 8e4, "busbw_bytes_per_second": 4e4,
       "p50_seconds": 1e-4, "p99_seconds": 3e-4, "iterations": []}]})");
  for (int i = 0; i < 20; ++i) {
    old["results"][0]["iterations"].push_back(
        {{"seconds", 1e-4}, {"counters", json::object()}});
  }
  std::string err;
  auto r = FromJson(old.dump(), &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->results[0].tail_name, "max");
  EXPECT_DOUBLE_EQ(r->results[0].tail_seconds, 3e-4);
  EXPECT_FALSE(r->interrupted);
  EXPECT_TRUE(r->info.hosts.empty());
  EXPECT_TRUE(r->info.devices.empty());
}

TEST(BenchRunInfo, DevicesReadFromSysfs) {
  testing::FakeSysfs fs;
  const std::string d = "class/infiniband/mlx5_0/";
  fs.File(d + "hca_type", "MT4129\n");
  fs.File(d + "board_id", "MT_0000000838\n");
  fs.File(d + "fw_ver", "28.39.1002\n");
  fs.File(d + "ports/1/link_layer", "Ethernet\n");
  fs.File(d + "ports/1/rate", "400 Gb/sec (4X NDR)\n");
  fs.File(d + "ports/1/state", "4: ACTIVE\n");
  fs.File(d + "ports/1/gid_attrs/ndevs/0", "eth2\n");
  fs.File("class/net/eth2/mtu", "4200\n");
  // An IB device without board_id: unknown, not an error; its MTU is not
  // in sysfs.
  const std::string e = "class/infiniband/mlx5_1/";
  fs.File(e + "hca_type", "MT4123\n");
  fs.File(e + "fw_ver", "20.31.1014\n");
  fs.File(e + "ports/1/link_layer", "InfiniBand\n\n");
  fs.File(e + "ports/1/rate", "200 Gb/sec (4X HDR)\n");
  fs.File(e + "ports/1/state", "4: ACTIVE\n");

  auto devices = ReadDevices(fs);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "mlx5_0");
  EXPECT_EQ(devices[0].hca_model, "MT4129");
  EXPECT_EQ(devices[0].board_id, "MT_0000000838");
  EXPECT_EQ(devices[0].firmware, "28.39.1002");
  ASSERT_EQ(devices[0].ports.size(), 1u);
  EXPECT_EQ(devices[0].ports[0].port, "1");
  EXPECT_EQ(devices[0].ports[0].link_layer, "Ethernet");
  EXPECT_EQ(devices[0].ports[0].rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(devices[0].ports[0].state, "4: ACTIVE");
  EXPECT_EQ(devices[0].ports[0].mtu, "4200");
  EXPECT_EQ(devices[1].board_id, "unknown");
  EXPECT_EQ(devices[1].ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(devices[1].ports[0].mtu, "unknown");

  testing::FakeSysfs empty;
  EXPECT_TRUE(ReadDevices(empty).empty());
}

TEST(BenchRunInfo, RatesAndTimes) {
  EXPECT_DOUBLE_EQ(ParseTcRate("1gbit"), 125e6);
  EXPECT_DOUBLE_EQ(ParseTcRate("500mbit"), 62.5e6);
  EXPECT_DOUBLE_EQ(ParseTcRate("400Gbit"), 50e9);
  EXPECT_DOUBLE_EQ(ParseTcRate("10gbps"), 10e9);
  EXPECT_DOUBLE_EQ(ParseTcRate("8000"), 1000);
  EXPECT_EQ(ParseTcRate(""), 0);
  EXPECT_EQ(ParseTcRate("fast"), 0);
  EXPECT_EQ(ParseTcRate("1 furlong"), 0);
  EXPECT_DOUBLE_EQ(ParseSysfsRate("400 Gb/sec (4X NDR)"), 50e9);
  EXPECT_DOUBLE_EQ(ParseSysfsRate("2.5 Gb/sec (1X SDR)"), 2.5e9 / 8);
  EXPECT_EQ(ParseSysfsRate("unknown"), 0);
  EXPECT_EQ(IsoTime(std::chrono::system_clock::from_time_t(1714566896)),
            "2024-05-01T12:34:56Z");
}

}  // namespace
}  // namespace fabric::bench
