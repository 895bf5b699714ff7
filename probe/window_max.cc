#include "probe/window_max.h"

#include <algorithm>

namespace fabric::probe {

std::int64_t WindowMax::SlotOf(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
             .count() /
         std::chrono::seconds(kSlot).count();
}

void WindowMax::Observe(double value,
                        std::chrono::steady_clock::time_point now) {
  const std::int64_t slot = SlotOf(now);
  const std::size_t i = static_cast<std::size_t>(slot % kSlots);
  if (slot_[i] != slot) {
    slot_[i] = slot;
    max_[i] = value;
  } else {
    max_[i] = std::max(max_[i], value);
  }
}

std::optional<double> WindowMax::Get(
    std::chrono::steady_clock::time_point now) const {
  const std::int64_t slot = SlotOf(now);
  std::optional<double> out;
  for (std::size_t i = 0; i < max_.size(); ++i) {
    if (slot_[i] < 0 || slot_[i] > slot || slot_[i] <= slot - kSlots) continue;
    out = std::max(out.value_or(max_[i]), max_[i]);
  }
  return out;
}

}  // namespace fabric::probe
