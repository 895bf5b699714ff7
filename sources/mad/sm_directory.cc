#include "sources/mad/sm_directory.h"

#include "core/thread_annotations.h"

namespace fabric::mad {
namespace {

struct Directory {
  Mutex mu;
  std::optional<std::vector<std::uint16_t>> lids GUARDED_BY(mu);
};

Directory& TheDirectory() {
  static Directory d;
  return d;
}

}  // namespace

void PublishSmLids(std::vector<std::uint16_t> lids) {
  Directory& d = TheDirectory();
  MutexLock hold(d.mu);
  d.lids = std::move(lids);
}

std::optional<std::vector<std::uint16_t>> DiscoveredSmLids() {
  Directory& d = TheDirectory();
  MutexLock hold(d.mu);
  return d.lids;
}

void ClearSmLids() {
  Directory& d = TheDirectory();
  MutexLock hold(d.mu);
  d.lids.reset();
}

}  // namespace fabric::mad
