// `fabricmon-bench push`: results to a Prometheus Pushgateway (prometheus-cpp's
// push client), as gauges per size:
//   fabric_bench_busbw_bytes_per_second{pattern,size,transport,run}
//   fabric_bench_algbw_bytes_per_second{...}, fabric_bench_time_seconds{...}
// under job "fabricmon_bench" grouped by {run, pattern}, so each run and
// pattern replaces only its own series.
//
// Thread-safety: pure functions plus one blocking HTTP request.
#pragma once

#include <string>

#include "benchtool/results.h"

namespace fabric::bench {

// `run`: the run label (results' label when empty, else "default").
// Returns the HTTP status (200 on success) or -1 with `error` set.
int PushResults(const std::string& gateway_url, const Results& results,
                std::string run, std::string* error);

}  // namespace fabric::bench
