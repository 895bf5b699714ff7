#include "benchtool/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fabric::bench {

double EstimateRemaining(const std::vector<SizeTime>& done,
                         const std::vector<std::uint64_t>& remaining) {
  if (done.size() < 2) return -1;
  const SizeTime& a = done[done.size() - 2];
  const SizeTime& b = done.back();
  double fastest = b.seconds;
  for (const auto& d : done) fastest = std::min(fastest, d.seconds);
  if (a.seconds < 2 * fastest || b.seconds < 2 * fastest) return -1;
  double per_byte = 0;
  if (b.size_bytes != a.size_bytes) {
    per_byte = std::max(
        0.0, (b.seconds - a.seconds) / (static_cast<double>(b.size_bytes) -
                                        static_cast<double>(a.size_bytes)));
  }
  double total = 0;
  for (std::uint64_t s : remaining) {
    double extra = static_cast<double>(s) - static_cast<double>(b.size_bytes);
    total += std::max(b.seconds, b.seconds + per_byte * extra);
  }
  return total;
}

std::string FormatDuration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  char b[32];
  if (seconds < 1) {
    std::snprintf(b, sizeof b, "%.0fms", seconds * 1e3);
    return b;
  }
  if (seconds < 10) {
    std::snprintf(b, sizeof b, "%.1fs", seconds);
    return b;
  }
  auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) {
    std::snprintf(b, sizeof b, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(b, sizeof b, "%lldm%02llds", s / 60, s % 60);
  } else {
    // Minutes rounded, not truncated: 1h59m40s is "2h00m".
    long long m = (s + 30) / 60;
    std::snprintf(b, sizeof b, "%lldh%02lldm", m / 60, m % 60);
  }
  return b;
}

std::string SizeText(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char b[32];
  std::snprintf(b, sizeof b, bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s",
                bytes, units[u]);
  return b;
}

std::string ProgressLine(const SizeProgress& p) {
  std::string line = "[" + std::to_string(p.index + 1) + "/" +
                     std::to_string(p.count) + "] " + SizeText(p.size_bytes) +
                     ": " + std::to_string(p.iterations_done) + " iteration" +
                     (p.iterations_done == 1 ? "" : "s") + " in " +
                     FormatDuration(p.size_seconds) + "; elapsed " +
                     FormatDuration(p.elapsed_seconds);
  if (p.index + 1 < p.count) {
    line += ", ETA " + FormatDuration(p.remaining_seconds);
  } else {
    line += ", done";
  }
  return line;
}

std::vector<std::uint64_t> LocalSizes(double link_bytes_per_second,
                                      double bytes_per_byte, int rounds) {
  std::uint64_t top = 64ull << 20;
  if (link_bytes_per_second > 0) {
    double fits = kLocalTopSizeSeconds * link_bytes_per_second /
                  (std::max(bytes_per_byte, 0.01) * std::max(rounds, 1));
    top = 64ull << 10;
    while (top < (1ull << 30) && 2.0 * top <= fits) top *= 2;
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 8; s <= top; s *= 2) sizes.push_back(s);
  return sizes;
}

}  // namespace fabric::bench
