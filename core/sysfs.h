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

#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace fabric {

struct ReadResult {
  std::string data;       // contents when ok()
  std::error_code error;  // errno of the failed open/read, else empty
  bool ok() const { return !error; }
};

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
};

// Reads the real filesystem below `root`.
std::unique_ptr<Sysfs> MakeRealSysfs(std::string root);

}  // namespace fabric
