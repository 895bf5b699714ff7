// Sysfs: the one door through which collectors read /sys. The real
// implementation reads below a configurable root (`--sysfs.root`, default
// /sys), so the same code runs on a recorded tree, the simulator's live tree
// or the host. Tests inject a fake to make files vanish or fail mid-poll.
//
// Paths passed in are relative to the root ("class/infiniband/mlx5_0/...").
//
// Thread-safety: implementations are immutable after construction and safe
// to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/fd_budget.h"
#include "core/result.h"

namespace fabric {

// A file's contents, or the errno of the failed open/read.
using ReadResult = Result<std::string>;

class SysfsReader;

class Sysfs {
 public:
  virtual ~Sysfs() = default;
  // Reads a whole attribute file with one bounded read (sysfs attributes are
  // at most one page).
  virtual ReadResult Read(const std::string& path) const = 0;
  // Lists directory entries (files, dirs, symlinks), sorted, without "."
  // and "..". Empty optional with `error` set when the directory cannot be
  // opened.
  virtual std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error = nullptr) const = 0;
  // Target of a symlink, or empty when `path` is not a readable symlink.
  virtual std::string ReadLink(const std::string& path) const = 0;
  virtual bool IsDirectory(const std::string& path) const = 0;
  // A reader for one collector's polls (see SysfsReader). This default goes
  // through Read/List above on every call, so test fakes keep seeing every
  // path; the real implementation caches. The reader refers to this object,
  // which must outlive it.
  virtual std::unique_ptr<SysfsReader> NewReader() const;
};

// The reads of one collector, collection after collection. A collection
// reads the same few hundred files every poll, and on this kind of VM each
// open/read/close costs ~4 us of syscalls, so the real reader keeps what it
// can prove still valid from one collection to the next (directory handles,
// listings, open file descriptors) and re-reads the data each time:
//
//  - on sysfs (statfs magic SYSFS_MAGIC): attribute files are never replaced
//    in place; a removed device's files fail with ENODEV, and a re-created
//    or renamed device directory is a new kernfs node with a new inode
//    number. Each directory is re-stat()ed once per collection and dropped
//    with everything in it when its identity changed; a read error from a
//    kept descriptor drops the directory and retries with a fresh open.
//  - on local disk/memory filesystems (ext4, tmpfs, xfs, btrfs: recorded
//    trees, the simulator, which replaces files by rename): every directory
//    used, and each of its ancestors up to the root, carries an inotify
//    watch; Begin() drains the events and drops whatever was created,
//    deleted, renamed or chmod-ed below the root, and re-stat()s the root
//    itself (nothing watched reports its replacement). Directories reached
//    through a symlink are not watched and so not kept across collections.
//  - anything else: handles live for one collection only.
//
// Every descriptor a real reader holds from one call to the next (directory
// handles, kept files) is taken from an FdBudget (core/fd_budget.h) shared
// by all readers; beyond it files are read with open/read/close and
// directories by path. Attribute files are opened non-blocking and read
// only when they are regular files (sysfs attributes are): a FIFO or device
// node in a tree fails with EINVAL instead of blocking the collection.
//
// Not thread-safe: one reader per collector, used by one Collect() at a
// time. Pointers returned by List() stay valid until the next Begin().
class SysfsReader {
 public:
  virtual ~SysfsReader() = default;
  // Starts a collection (applies pending invalidations, closes handles the
  // previous collection did not use). Call once at the top of Collect().
  virtual void Begin() = 0;
  // Starts a collection that may reuse the previous Begin()'s validation:
  // for fast polls of files a full collection found moments ago (the
  // congestion collector's 100 ms samples between its publishes). On sysfs
  // the directories are then not re-stat()ed; a removed device's kept
  // descriptors fail with ENODEV and are read again by path, so a
  // re-created device is read, not a stale one. Elsewhere it is Begin().
  virtual void BeginSample() { Begin(); }
  // Reads `dir`/`name` like Sysfs::Read("dir/name"); `name` may contain '/'.
  virtual ReadResult Read(std::string_view dir, std::string_view name) = 0;
  // The same for an attribute whose value the kernel fixes when it creates
  // the device (node_guid, fw_ver, hca_type, link_layer...): the real reader
  // may hand back the content it read earlier for as long as it keeps the
  // file (until the directory is re-created or, on local filesystems, the
  // file changes), instead of reading it again.
  virtual ReadResult ReadFixed(std::string_view dir, std::string_view name) {
    return Read(dir, name);
  }
  // Like Sysfs::List(dir): sorted entries, or nullptr with `error` set.
  // `stable` says the kernel creates the directory's entries together with
  // the directory (attribute groups such as counters/ or hw_counters/), so
  // on sysfs a listing holds as long as the directory is the same node;
  // pass false for directories whose entries come and go on their own
  // (class/infiniband, device/net).
  virtual const std::vector<std::string>* List(std::string_view dir,
                                               bool stable,
                                               std::error_code* error) = 0;
  // Like Sysfs::IsDirectory(path): true when `path` is a directory or a
  // symlink to one (class/net/<if> is a symlink on real sysfs).
  virtual bool IsDirectory(std::string_view path) = 0;

  // A file that a sample loop reads over and over (the congestion
  // collector: the same 27 counters every 100 ms). Keep() names `dir`/`name`
  // once (`name` without '/'; the same path gives the same handle);
  // ReadKept() then reads it like Read(), under
  // the same rules (validity, a failing descriptor dropped and the file
  // read again by path), but into the caller's buffer and, while the
  // descriptor the real reader keeps for it is still valid, with one
  // pread() and no path lookup or string. A content that does not fit
  // `buf` fails with EOVERFLOW. Handles stay valid for the reader's life.
  using KeptFile = std::uint32_t;
  virtual KeptFile Keep(std::string_view dir, std::string_view name);
  virtual Result<std::string_view> ReadKept(KeptFile file, std::span<char> buf);

 private:
  // The default Keep()/ReadKept(): Read() by name. One handle per path.
  std::vector<std::pair<std::string, std::string>> kept_names_;
  std::map<std::string, KeptFile, std::less<>> kept_index_;
};

// How a real reader keeps handles across collections (see SysfsReader).
// kAuto picks by the filesystem of the root; kPerCollection suits a single
// collection (`--once`: watches and kept descriptors would never pay off);
// tests force the others.
enum class SysfsCacheMode { kAuto, kPerCollection, kSysfs, kInotify };

// Reads the real filesystem below `root`; its readers use `mode` and keep
// descriptors from `budget` (null: ProcessFdBudget()).
std::unique_ptr<Sysfs> MakeRealSysfs(
    std::string root, SysfsCacheMode mode = SysfsCacheMode::kAuto,
    std::shared_ptr<FdBudget> budget = nullptr);

std::unique_ptr<SysfsReader> MakeRealSysfsReader(
    std::string root, SysfsCacheMode mode,
    std::shared_ptr<FdBudget> budget = nullptr);

// Opens the attribute file `path` (relative to `dirfd`, as openat(2)) for
// reading, non-blocking and only if it is a regular file: a FIFO or device
// node fails with EINVAL, a directory with EISDIR, instead of blocking or
// streaming. Returns the descriptor, or -1 with errno set.
int OpenAttribute(int dirfd, const char* path);

}  // namespace fabric
