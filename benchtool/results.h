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

namespace fabric::bench {

struct IterationRow {
  double seconds = 0;
  std::map<std::string, std::uint64_t> counters;  // absent = not provided
};

struct SizeRow {
  std::uint64_t size_bytes = 0;
  double time_seconds = 0;  // per operation, median over iterations
  double p50_seconds = 0, p99_seconds = 0;
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
  std::vector<SizeRow> results;
};

// Percentile by nearest rank (p in [0, 100]) of a non-empty sample.
double Percentile(std::vector<double> v, double p);

Results Summarize(const RunOptions& options, const RunOutcome& outcome,
                  const std::string& label);

std::string ToJson(const Results& r);
// Fails (nullopt, reason in `error`) on invalid JSON or missing keys.
std::optional<Results> FromJson(const std::string& text, std::string* error);

}  // namespace fabric::bench
