// FdBudget: how many descriptors the sysfs readers may keep open across
// collections, shared by every reader of the process. Kept descriptors save
// syscalls (sources/sysfs.h), but they count against RLIMIT_NOFILE like the
// sockets that accept scrapes, so they are taken from a budget that leaves a
// reserve for those: a reader that finds the budget spent reads with
// open/read/close instead (and walks directories by path), which is slower
// but never runs the process out of descriptors.
//
// Thread-safety: every member is safe to call from any thread (collectors
// run on their own threads and share one budget).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace fabric {

class FdBudget {
 public:
  explicit FdBudget(std::size_t size) : size_(size) {}
  // Takes one descriptor from the budget; false when it is spent.
  bool TryTake();
  // Gives back one descriptor TryTake() gave.
  void Give();
  // A new size for later TryTake() calls; descriptors already taken stay.
  void Resize(std::size_t size) { size_.store(size); }
  std::size_t used() const { return used_.load(); }
  std::size_t size() const { return size_.load(); }

 private:
  std::atomic<std::size_t> size_;
  std::atomic<std::size_t> used_{0};
};

// Descriptors kept out of the budget under a limit of `fd_limit`: the
// /metrics server's 64 connections, each collector's few transient ones
// (the file being read, a netlink or ioctl socket), inotify instances,
// probe and OpenSM sockets, config reads, the daemon's own.
inline constexpr std::size_t kFdReserve = 256;

// The budget under RLIMIT_NOFILE `fd_limit`: all but kFdReserve (nothing
// under a limit that small).
std::size_t FdBudgetFor(std::size_t fd_limit);

// The process's budget, which real readers use unless given another. Sized
// from the soft RLIMIT_NOFILE when first used; the daemon resizes it after
// raising the limit.
std::shared_ptr<FdBudget> ProcessFdBudget();

}  // namespace fabric
