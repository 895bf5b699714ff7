// FakeSysfs: the in-memory Sysfs (sources/sysfs.h) every unit test builds its
// tree in. Files hold contents; directories are implied by the paths below
// them or made explicitly (an empty one); symlinks are followed the way the
// kernel follows them; a path can be made to fail with an errno (an unused
// GID entry's EINVAL, an unreadable counter's EACCES); a hook can run after a
// listing (to remove a device between listing and reading it). Every call is
// logged, so tests can count reads or check the exact paths asked for.
//
// Where a path is not set up otherwise it answers like the real one: a
// missing path is ENOENT, reading a directory EISDIR, listing a file
// ENOTDIR, a symlink loop ELOOP (tests/unit/fake_sysfs_test.cc compares the
// two on the same tree).
//
// Thread-safety: none; one test thread builds, reads and inspects it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sources/sysfs.h"

namespace fabric::testing {

class FakeSysfs final : public Sysfs {
 public:
  // Building the tree. Paths are relative to the root, like Sysfs's.
  void File(const std::string& path, std::string contents);
  // A file whose contents `show` computes at each read, as the kernel's
  // attributes do (a test keeps a model behind it instead of rewriting it).
  void ComputedFile(const std::string& path, std::function<std::string()> show);
  void Dir(const std::string& path);
  // `target` is relative to the link's directory, as sysfs links are (an
  // absolute one is taken from the fake's root).
  void Link(const std::string& path, std::string target);
  // Read and List of `path` fail with `err`; the path still shows up in
  // its parent's listing.
  void Fail(const std::string& path, int err);
  // Removes `path` and everything below it (a device vanishing).
  void Remove(const std::string& path);
  // Runs `hook` after each successful List of `path`.
  void OnList(const std::string& path, std::function<void()> hook);

  // What was asked: "read P", "list P", "readlink P", "isdir P", in order.
  const std::vector<std::string>& calls() const { return calls_; }
  // How many times `path` was read; with no path, all reads.
  int Reads(const std::string& path) const;
  int Reads() const;

  ReadResult Read(const std::string& path) const override;
  std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error) const override;
  std::string ReadLink(const std::string& path) const override;
  bool IsDirectory(const std::string& path) const override;

 private:
  enum class Kind { kNone, kFile, kDir };
  // Where an entry for `path` is kept: its parent with links followed (the
  // real filesystem creates and removes through links the same way).
  std::string Place(const std::string& path) const;
  // `path` with every symlink in it followed; false on a loop.
  bool Resolve(const std::string& path, std::string* out) const;
  Kind KindOf(const std::string& resolved) const;
  // The errno of opening resolved path `p` as a `want` that is not there.
  int MissingErrno(const std::string& p, Kind want) const;

  struct Contents {
    std::string data;
    std::function<std::string()> show;  // when set, instead of `data`
  };
  std::map<std::string, Contents> files_;
  std::set<std::string> dirs_;
  std::map<std::string, std::string> links_;
  std::map<std::string, int> errors_;
  std::map<std::string, std::function<void()>> hooks_;
  mutable std::vector<std::string> calls_;
};

}  // namespace fabric::testing
