// Small helpers the integration tests share: polling a condition until a
// deadline, and reading a whole file (a log, an exposition) as text.
//
// Thread-safety: plain functions; safe from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace fabric::testing {

// Polls `done` every `step` until it holds or `limit` passes; the last
// answer decides.
inline bool WaitFor(
    const std::function<bool()>& done,
    std::chrono::milliseconds limit = std::chrono::seconds(30),
    std::chrono::milliseconds step = std::chrono::milliseconds(50)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(step);
  }
  return done();
}

// The whole file, or "" when it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace fabric::testing
