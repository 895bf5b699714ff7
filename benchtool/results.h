// Results of a run as people read them (nccl-tests' numbers) and as
// results.json stores them, plus the JSON reader the report and the push use.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "benchtool/coordinator.h"
#include "benchtool/run_info.h"

namespace fabric::bench {

struct IterationRow {
  double seconds = 0;
  std::map<std::string, std::uint64_t> counters;  // absent = not provided
};

struct SizeRow {
  std::uint64_t size_bytes = 0;
  double time_seconds = 0;  // per operation, median over iterations
  double p50_seconds = 0;
  // The slowest iterations, named for what the sample can show (TailName):
  // 20 iterations have no p99; they give a p90 (two values above it).
  std::string tail_name;
  double tail_seconds = 0;
  double algbw_bytes_per_second = 0;  // size_bytes / time_seconds
  double busbw_bytes_per_second = 0;  // algbw * BusBwFactor
  std::vector<IterationRow> iterations;
};

struct Results {
  std::string pattern;
  int hosts = 0;
  int tp = 0;  // tp-dp only
  std::string transport;
  std::string label;  // free text: which run this is ("IB", "before")
  int warmup = 0;
  int iterations = 0;  // measured, per size
  // Stopped by SIGINT/SIGTERM: `results` holds the sizes completed before.
  bool interrupted = false;
  RunInfo info;
  std::vector<SizeRow> results;
};

// Percentile by nearest rank (p in [0, 100]) of a non-empty sample.
double Percentile(std::vector<double> v, double p);

// The highest percentile a sample of `n` can honestly name. A nearest-rank
// pX with only one value above it is just the second-largest value, so pX
// needs at least two above: n >= 200/(100-X). n >= 200: 99; >= 40: 95;
// >= 20: 90; else 100 (the maximum). The default 20 iterations give p90.
double TailPercentile(std::size_t n);
// "p99", "p95", "p90" or "max", as TailPercentile.
std::string TailName(std::size_t n);

// `info` is the caller's (what it knows of hosts, devices and times).
Results Summarize(const RunOptions& options, const RunOutcome& outcome,
                  const std::string& label, RunInfo info = {});

std::string ToJson(const Results& r);
// Fails (nullopt, reason in `error`) on invalid JSON or missing keys. Files
// written before the metadata and tail names read with empty metadata, and
// their p99_seconds (nearest rank) named "max" below 100 iterations, which
// is what it is, and "p99" from 100 (kept as the file called it).
std::optional<Results> FromJson(const std::string& text, std::string* error);

}  // namespace fabric::bench
