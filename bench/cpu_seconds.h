// The CPU time (user + system) this process has used so far, for the
// benchmarks that report CPU beside wall time.
//
// Thread-safety: reads getrusage(RUSAGE_SELF); callable from any thread.
#pragma once

#include <sys/resource.h>

namespace fabric::bench {

inline double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

}  // namespace fabric::bench
