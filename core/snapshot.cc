#include "core/snapshot.h"

namespace fabric {

void SnapshotStore::Publish(std::shared_ptr<const Snapshot> snapshot) {
  Slot* slot;
  {
    MutexLock lock(mu_);
    auto& entry = slots_[snapshot->collector];
    if (!entry) entry = std::make_unique<Slot>();
    slot = entry.get();
  }
  slot->store(std::move(snapshot));
}

std::shared_ptr<const Snapshot> SnapshotStore::Latest(
    const std::string& collector) const {
  MutexLock lock(mu_);
  auto it = slots_.find(collector);
  if (it == slots_.end()) return nullptr;
  return it->second->load();
}

std::vector<std::shared_ptr<const Snapshot>> SnapshotStore::All() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<const Snapshot>> out;
  out.reserve(slots_.size());
  for (const auto& [name, slot] : slots_) {
    if (auto s = slot->load()) out.push_back(std::move(s));
  }
  return out;
}

void SnapshotStore::Remove(const std::string& collector) {
  MutexLock lock(mu_);
  slots_.erase(collector);
}

}  // namespace fabric
