// WindowMax: the largest value observed over the last minute, kept as the
// maxima of six 10 s slots (the oldest slot partly expired: 50-60 s). A
// scrape every 15-30 s then sees every spike once or twice, with no gap
// between scrapes, for the cost of one gauge per pair instead of a
// histogram's 47 series (docs/probes.md, "Per-pair series").
//
// Pure: the time is given by the caller. Thread-safety: none; the engine
// guards it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

namespace fabric::probe {

class WindowMax {
 public:
  static constexpr auto kSlot = std::chrono::seconds(10);
  static constexpr int kSlots = 6;

  void Observe(double value, std::chrono::steady_clock::time_point now);
  // The largest value observed in the window ending at `now`; none when no
  // value was.
  std::optional<double> Get(std::chrono::steady_clock::time_point now) const;

 private:
  static std::int64_t SlotOf(std::chrono::steady_clock::time_point t);

  std::array<double, kSlots> max_{};
  // Which slot (time / kSlot) each entry holds; -1: none.
  std::array<std::int64_t, kSlots> slot_ = {-1, -1, -1, -1, -1, -1};
};

}  // namespace fabric::probe
