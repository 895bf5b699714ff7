#include "core/fd_budget.h"

#include <sys/resource.h>

namespace fabric {

bool FdBudget::TryTake() {
  std::size_t used = used_.load();
  do {
    if (used >= size_.load()) return false;
  } while (!used_.compare_exchange_weak(used, used + 1));
  return true;
}

void FdBudget::Give() { used_.fetch_sub(1); }

std::size_t FdBudgetFor(std::size_t fd_limit) {
  return fd_limit > kFdReserve ? fd_limit - kFdReserve : 0;
}

std::shared_ptr<FdBudget> ProcessFdBudget() {
  static const std::shared_ptr<FdBudget> budget = [] {
    rlimit limit{};
    std::size_t soft = 1024;  // the usual default
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
        limit.rlim_cur != RLIM_INFINITY) {
      soft = static_cast<std::size_t>(limit.rlim_cur);
    }
    return std::make_shared<FdBudget>(FdBudgetFor(soft));
  }();
  return budget;
}

}  // namespace fabric
