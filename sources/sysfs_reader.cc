// SysfsReader implementations: the forwarding one behind Sysfs::NewReader()
// and the caching one for real trees. See sources/sysfs.h for the rules that
// make the caching correct; the comments here say how each is enforced.
#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "sources/fd_read.h"
#include "sources/sysfs.h"

namespace fabric {
namespace {

// statfs f_type values (linux/magic.h).
constexpr long kSysfsMagic = 0x62656572;
constexpr long kExtMagic = 0xEF53;  // ext2/3/4
constexpr long kTmpfsMagic = 0x01021994;
constexpr long kXfsMagic = 0x58465342;
constexpr long kBtrfsMagic = 0x9123683E;

// What invalidates a watched directory's handles: entries appearing,
// vanishing or being renamed, permission changes (a kept descriptor would
// otherwise go on reading a file chmod-ed unreadable), and the directory
// itself going away. In-place writes (IN_MODIFY) would not matter to a kept
// descriptor, which reads the new bytes of the same inode, but they drop the
// entry and with it the content ReadFixed() remembered.
constexpr std::uint32_t kWatchMask =
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
    IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

std::string Join(std::string_view dir, std::string_view name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out.append(dir);
  if (!dir.empty()) out.push_back('/');
  out.append(name);
  return out;
}

bool IsAbsence(int e) { return e == ENOENT || e == ENOTDIR; }

// Goes through the owning Sysfs's path-based calls every time, so fakes
// and wrappers (tests) see each path exactly as before.
class ForwardingReader final : public SysfsReader {
 public:
  explicit ForwardingReader(const Sysfs& sysfs) : sysfs_(sysfs) {}

  void Begin() override { lists_.clear(); }

  ReadResult Read(std::string_view dir, std::string_view name) override {
    return sysfs_.Read(Join(dir, name));
  }

  const std::vector<std::string>* List(std::string_view dir, bool /*stable*/,
                                       std::error_code* error) override {
    auto names = sysfs_.List(std::string(dir), error);
    if (!names) return nullptr;
    // A deque keeps earlier results in place while a collector iterates
    // one listing and asks for another.
    lists_.push_back(std::move(*names));
    return &lists_.back();
  }

  bool IsDirectory(std::string_view path) override {
    return sysfs_.IsDirectory(std::string(path));
  }

 private:
  const Sysfs& sysfs_;
  std::deque<std::vector<std::string>> lists_;
};

class CachingReader final : public SysfsReader {
 public:
  // Kept descriptors count against RLIMIT_NOFILE, which also has to cover
  // sockets and the other collectors: each one is taken from `budget`,
  // shared with the other readers (core/fd_budget.h).
  CachingReader(std::string root, SysfsCacheMode mode,
                std::shared_ptr<FdBudget> budget)
      : root_(std::move(root)), budget_(std::move(budget)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    requested_ = mode;
  }

  ~CachingReader() override {
    for (auto& [path, dir] : dirs_) Close(dir);
    if (inotify_ >= 0) ::close(inotify_);
  }

  void Begin() override {
    ++gen_;
    if (!decided_) Decide();
    switch (mode_) {
      case SysfsCacheMode::kAuto:
      case SysfsCacheMode::kPerCollection:
        DropAll();
        break;
      case SysfsCacheMode::kSysfs:
        // Directories the last collection did not touch (a device that
        // went away, a filtered one) give their descriptors back.
        for (auto it = dirs_.begin(); it != dirs_.end();) {
          if (it->second.used + 1 < gen_) {
            Close(it->second);
            it = Erase(it);
          } else {
            ++it;
          }
        }
        break;
      case SysfsCacheMode::kInotify:
        Drain();
        CheckRoot();
        // Directories without a watch (behind a symlink, or out of watches)
        // only live for one collection. (Most trees have none: skip the walk
        // then, it ran on every 100 ms congestion sample.)
        if (!any_uncacheable_) break;
        any_uncacheable_ = false;
        for (auto it = dirs_.begin(); it != dirs_.end();) {
          if (!it->second.cacheable) {
            Close(it->second);
            it = Erase(it);
          } else {
            ++it;
          }
        }
        break;
    }
  }

  void BeginSample() override {
    // sysfs: one stat() per directory per collection is as many syscalls
    // again as a sample's reads; the kept descriptors' ENODEV covers a
    // removed device (ReadIn). inotify mode must drain its events (the
    // simulator replaces files by rename) and does little more.
    if (decided_ && mode_ == SysfsCacheMode::kSysfs && gen_ > 0) return;
    Begin();
  }

  ReadResult Read(std::string_view dir, std::string_view name) override {
    return Split(dir, name, /*fixed=*/false);
  }

  ReadResult ReadFixed(std::string_view dir, std::string_view name) override {
    return Split(dir, name, /*fixed=*/true);
  }

  const std::vector<std::string>* List(std::string_view path, bool stable,
                                       std::error_code* error) override {
    Dir& dir = Use(path);
    if (!Present(dir)) {
      if (error) *error = ErrnoError(dir.error);
      return nullptr;
    }
    const bool keep = (mode_ == SysfsCacheMode::kInotify && dir.cacheable) ||
                      (mode_ == SysfsCacheMode::kSysfs && stable);
    if (dir.listed && (dir.listed_gen == gen_ || keep)) return &dir.names;
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    int fd = dir.fd >= 0 ? ::openat(dir.fd, ".", flags)
                         : ::open(Full(path).c_str(), flags);
    if (fd < 0) {
      if (error) *error = ErrnoError(errno);
      return nullptr;
    }
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      if (error) *error = ErrnoError(errno);
      ::close(fd);
      return nullptr;
    }
    dir.names.clear();
    while (dirent* entry = ::readdir(d)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      dir.names.emplace_back(name);
    }
    ::closedir(d);
    std::sort(dir.names.begin(), dir.names.end());
    dir.listed = true;
    dir.listed_gen = gen_;
    return &dir.names;
  }

  KeptFile Keep(std::string_view dir, std::string_view name) override {
    // One handle per path, so a device that comes back reuses its own.
    const auto [it, added] = kept_index_.try_emplace(
        Join(dir, name), static_cast<KeptFile>(kept_.size()));
    if (added) kept_.push_back({std::string(dir), std::string(name)});
    return it->second;
  }

  Result<std::string_view> ReadKept(KeptFile handle,
                                    std::span<char> buf) override {
    Kept& k = kept_.at(handle);
    if (k.fd >= 0 && k.epoch == close_epoch_ && k.dir->checked != gen_ &&
        mode_ == SysfsCacheMode::kSysfs) {
      // The first use in a collection validates the directory as Read()
      // would (sysfs mode re-stat()s it; a changed one is closed, which
      // bumps the epoch). Other modes validate through events or Begin().
      Use(k.dir_path);
    }
    if (k.fd >= 0 && k.epoch == close_epoch_) {
      // The descriptor is still the one the directory entry keeps: no
      // descriptor was closed since it was looked up (a closed number
      // could be reused by another file).
      ssize_t n;
      do {
        n = ::pread(k.fd, buf.data(), buf.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n >= 0 && static_cast<std::size_t>(n) < buf.size()) {
        k.dir->used = gen_;
        return std::string_view(buf.data(), static_cast<std::size_t>(n));
      }
      // An error or a long content: the path below decides (ReadIn drops a
      // failing descriptor and retries as a plain Read would).
    }
    k.fd = -1;
    ReadResult r = ReadIn(k.dir_path, k.name, /*fixed=*/false);
    if (!r.ok()) return r.error();
    if (r->size() >= buf.size()) return ErrnoError(EOVERFLOW);
    std::memcpy(buf.data(), r->data(), r->size());
    // ReadIn just used the directory entry: find the descriptor it keeps.
    Dir& dir = Use(k.dir_path);
    if (auto f = dir.files.find(k.name); f != dir.files.end()) {
      k.fd = f->second.fd;
      k.dir = &dir;
      k.epoch = close_epoch_;
    }
    return std::string_view(buf.data(), r->size());
  }

  // The directory entry opens (O_PATH | O_DIRECTORY follows a symlink and
  // fails with ENOTDIR on anything else) exactly when stat() would say
  // S_ISDIR; the entry is then validated per collection like any other.
  bool IsDirectory(std::string_view path) override {
    return Present(Use(path));
  }

 private:
  struct File {
    int fd = -1;    // kept descriptor, or -1
    int error = 0;  // inotify mode: the file is known to be absent (ENOENT)
    std::optional<std::string> fixed;  // content kept for ReadFixed()
  };

  struct Dir {
    bool opened = false;  // open attempted (fd or error is set)
    int fd = -1;          // O_PATH descriptor; -1 when `error` says why not
    int error = 0;
    // A directory used by its path, without a descriptor: the budget was
    // spent. Such an entry lives for one collection and keeps no files.
    bool by_path = false;
    bool cacheable = false;     // inotify mode: changes reach us as events
    int wd = -1;                // inotify watch
    dev_t dev = 0;              // sysfs mode: identity at open
    ino_t ino = 0;              // (and the root in inotify mode)
    std::uint64_t checked = 0;  // collection it was last validated in
    std::uint64_t used = 0;     // collection it was last used in
    bool listed = false;
    std::uint64_t listed_gen = 0;
    std::vector<std::string> names;
    std::map<std::string, File, std::less<>> files;
  };

  static bool Present(const Dir& dir) { return dir.fd >= 0 || dir.by_path; }

  std::string Full(std::string_view path) const {
    if (path.empty()) return root_;
    std::string out;
    out.reserve(root_.size() + 1 + path.size());
    out.append(root_);
    out.push_back('/');
    out.append(path);
    return out;
  }

  void Decide() {
    mode_ = SysfsCacheMode::kPerCollection;
    SysfsCacheMode want = requested_;
    if (want == SysfsCacheMode::kAuto) {
      struct statfs fs;
      if (::statfs(root_.c_str(), &fs) != 0) return;  // try again next time
      decided_ = true;
      const long type = static_cast<long>(fs.f_type);
      if (type == kSysfsMagic) {
        want = SysfsCacheMode::kSysfs;
      } else if (type == kExtMagic || type == kTmpfsMagic ||
                 type == kXfsMagic || type == kBtrfsMagic) {
        // Local filesystems, where inotify reports every change made on
        // this machine. Network and FUSE filesystems do not qualify.
        want = SysfsCacheMode::kInotify;
      } else {
        want = SysfsCacheMode::kPerCollection;
      }
    }
    decided_ = true;
    if (want == SysfsCacheMode::kInotify) {
      inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (inotify_ < 0) want = SysfsCacheMode::kPerCollection;
    }
    mode_ = want;
  }

  void CloseFile(File& file) {
    if (file.fd >= 0) {
      ::close(file.fd);
      budget_->Give();
      ++close_epoch_;  // invalidates every Kept descriptor
    }
    file.fd = -1;
  }

  // Closes everything a directory entry holds, including its watch.
  void Close(Dir& dir) {
    for (auto& [name, file] : dir.files) CloseFile(file);
    dir.files.clear();
    if (dir.fd >= 0) {
      ::close(dir.fd);
      budget_->Give();
    }
    dir.fd = -1;
    dir.by_path = false;
    if (dir.wd >= 0) {
      ::inotify_rm_watch(inotify_, dir.wd);
      watches_.erase(dir.wd);
      dir.wd = -1;
    }
    dir.listed = false;
    dir.names.clear();
  }

  void DropAll() {
    last_dir_ = nullptr;
    for (auto& [path, dir] : dirs_) Close(dir);
    dirs_.clear();
    index_.clear();
  }

  std::map<std::string, Dir, std::less<>>::iterator Erase(
      std::map<std::string, Dir, std::less<>>::iterator it) {
    index_.erase(std::string_view(it->first));
    return dirs_.erase(it);
  }

  // Drops `prefix` and every directory below it ("" = everything).
  void DropSubtree(const std::string& prefix) {
    last_dir_ = nullptr;
    if (prefix.empty()) {
      DropAll();
      return;
    }
    for (auto it = dirs_.lower_bound(prefix); it != dirs_.end();) {
      const std::string& key = it->first;
      if (key.compare(0, prefix.size(), prefix) != 0) break;
      if (key.size() == prefix.size() || key[prefix.size()] == '/') {
        Close(it->second);
        it = Erase(it);
      } else {
        ++it;  // a sibling such as "<prefix>-x" sorts in between
      }
    }
  }

  // The root has no watched parent to report its removal or replacement,
  // and its own IN_DELETE_SELF only comes once the last descriptor on it is
  // closed (we hold one), so compare its identity once per collection.
  void CheckRoot() {
    auto it = dirs_.find(std::string_view());
    if (it == dirs_.end() || it->second.fd < 0) return;
    struct stat st;
    if (::stat(root_.c_str(), &st) != 0 || st.st_ino != it->second.ino ||
        st.st_dev != it->second.dev) {
      DropAll();
    }
  }

  // Applies the queued inotify events.
  void Drain() {
    alignas(inotify_event) char buf[16384];
    for (;;) {
      ssize_t n = ::read(inotify_, buf, sizeof(buf));
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        return;  // EAGAIN: nothing (more) queued
      }
      for (char* p = buf; p < buf + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(p);
        Handle(*event);
        p += sizeof(inotify_event) + event->len;
      }
    }
  }

  void Handle(const inotify_event& event) {
    if (event.mask & IN_Q_OVERFLOW) {
      DropAll();  // events were lost: trust nothing
      return;
    }
    auto watch = watches_.find(event.wd);
    if (watch == watches_.end()) return;  // a watch we already dropped
    const std::string path = watch->second;
    if (event.mask &
        (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)) {
      DropSubtree(path);
      return;
    }
    if (event.len == 0) {
      // chmod of the directory itself (its parent's watch reports it too,
      // except for the root).
      if (event.mask & IN_ATTRIB) DropSubtree(path);
      return;
    }
    const std::string_view name(event.name);  // NUL-padded
    auto it = dirs_.find(path);
    if (it != dirs_.end()) {
      Dir& dir = it->second;
      if (auto f = dir.files.find(name); f != dir.files.end()) {
        CloseFile(f->second);
        dir.files.erase(f);
      }
      if (event.mask & (IN_DELETE | IN_MOVED_FROM)) dir.listed = false;
      if ((event.mask & (IN_CREATE | IN_MOVED_TO)) && dir.listed &&
          !std::binary_search(dir.names.begin(), dir.names.end(), name)) {
        // A rename over an existing entry (how the simulator writes) keeps
        // the listing; a new name does not.
        dir.listed = false;
      }
    }
    DropSubtree(Join(path, name));
  }

  // The budget is spent: use `dir` by path, if it is a directory (stat()
  // follows a symlink, as opening it would).
  void StatByPath(Dir& dir, std::string_view path) {
    struct stat st;
    if (::stat(Full(path).c_str(), &st) != 0) {
      dir.error = errno;
    } else if (!S_ISDIR(st.st_mode)) {
      dir.error = ENOTDIR;
    } else {
      dir.error = 0;
      dir.by_path = true;
      dir.dev = st.st_dev;
      dir.ino = st.st_ino;
    }
  }

  // Opens `dir` (at `path`) as `dirfd`/`name` with a descriptor from the
  // budget, or by path when the budget is spent.
  void OpenDir(Dir& dir, std::string_view path, int dirfd, const char* name,
               int flags) {
    if (!budget_->TryTake()) {
      StatByPath(dir, path);
      return;
    }
    dir.fd = ::openat(dirfd, name, flags);
    dir.error = dir.fd < 0 ? errno : 0;
    if (dir.fd < 0) budget_->Give();
  }

  // Opens `dir` by its full path (sysfs and per-collection modes).
  void OpenByPath(Dir& dir, std::string_view path) {
    OpenDir(dir, path, AT_FDCWD, Full(path).c_str(),
            O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir.fd >= 0 && mode_ == SysfsCacheMode::kSysfs) {
      struct stat st;
      if (::fstat(dir.fd, &st) == 0) {
        dir.dev = st.st_dev;
        dir.ino = st.st_ino;
      }
    }
  }

  // inotify mode: watch the directory (after its parent, so that its own
  // creation, removal or replacement is reported) and open it.
  void OpenWatched(Dir& dir, std::string_view path) {
    if (path.empty()) {
      OpenDir(dir, path, AT_FDCWD, root_.c_str(),
              O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dir.fd >= 0) {
        dir.wd = ::inotify_add_watch(inotify_, root_.c_str(), kWatchMask);
        if (dir.wd >= 0) watches_[dir.wd] = std::string();
      }
      struct stat st;
      if (dir.fd >= 0 && ::fstat(dir.fd, &st) == 0) {
        dir.dev = st.st_dev;
        dir.ino = st.st_ino;
      }
      // An absent root is reported by nothing we watch: per collection.
      dir.cacheable = dir.wd >= 0 && dir.fd >= 0;
      return;
    }
    const std::size_t slash = path.rfind('/');
    const std::string_view parent_path = slash == std::string_view::npos
                                             ? std::string_view()
                                             : path.substr(0, slash);
    const std::string name(
        slash == std::string_view::npos ? path : path.substr(slash + 1));
    Dir& parent = Use(parent_path);
    if (!Present(parent)) {
      // Missing because an ancestor is: whatever reports the ancestor's
      // creation (its own parent's watch) drops this entry too.
      dir.error = parent.error;
      dir.cacheable = parent.cacheable && IsAbsence(parent.error);
      return;
    }
    if (!parent.cacheable) {
      // (Also a parent used by path, which is never cacheable.)
      OpenDir(dir, path, AT_FDCWD, Full(path).c_str(),
              O_PATH | O_DIRECTORY | O_CLOEXEC);
      return;
    }
    struct stat st;
    if (::fstatat(parent.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      dir.error = errno;
      dir.cacheable = IsAbsence(dir.error);  // the parent's watch sees it come
      return;
    }
    if (S_ISLNK(st.st_mode)) {
      // Where it points is not watched (real sysfs's class/infiniband/<dev>
      // links live in sysfs mode; this is a recorded tree that copied them).
      OpenDir(dir, path, parent.fd, name.c_str(),
              O_PATH | O_DIRECTORY | O_CLOEXEC);
      return;
    }
    if (!S_ISDIR(st.st_mode)) {
      dir.error = ENOTDIR;
      dir.cacheable = true;
      return;
    }
    if (!budget_->TryTake()) {
      StatByPath(dir, path);  // for this collection only, unwatched
      return;
    }
    dir.wd = ::inotify_add_watch(inotify_, Full(path).c_str(), kWatchMask);
    if (dir.wd >= 0) watches_[dir.wd] = std::string(path);
    dir.fd = ::openat(parent.fd, name.c_str(),
                      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    dir.error = dir.fd < 0 ? errno : 0;
    if (dir.fd < 0) budget_->Give();
    dir.cacheable = dir.wd >= 0 && (dir.fd >= 0 || IsAbsence(dir.error));
  }

  // The entry for `path`, opened and validated for this collection.
  Dir& Use(std::string_view path) {
    // Collectors read a directory's files one after another, so most calls
    // name the directory of the previous one: skip the map lookup then.
    // Entries are only erased in Begin(), which starts a new generation, so
    // a pointer from this generation is still valid.
    if (last_dir_ != nullptr && last_gen_ == gen_ && path == last_path_) {
      return *last_dir_;
    }
    Dir& dir = Lookup(path);
    last_dir_ = &dir;
    last_gen_ = gen_;
    last_path_.assign(path);
    return dir;
  }

  Dir& Lookup(std::string_view path) {
    Dir* found = nullptr;
    if (auto hit = index_.find(path); hit != index_.end()) {
      found = hit->second;
    } else {
      auto it = dirs_.emplace(std::string(path), Dir()).first;
      index_.emplace(it->first, &it->second);
      found = &it->second;
    }
    Dir& dir = *found;
    dir.used = gen_;
    if (dir.checked == gen_) return dir;
    dir.checked = gen_;
    switch (mode_) {
      case SysfsCacheMode::kAuto:
      case SysfsCacheMode::kPerCollection:
        // Entries were dropped at Begin(): this one is new.
        if (!dir.opened) OpenByPath(dir, path);
        break;
      case SysfsCacheMode::kSysfs:
        if (dir.fd >= 0) {
          // Same kernfs node as when opened? A re-created or renamed device
          // directory has another inode number. (Once per collection, and
          // before any listing of it is handed out in this collection.)
          struct stat st;
          if (::stat(Full(path).c_str(), &st) != 0) {
            const int error = errno;
            Close(dir);
            dir.error = error;
            break;
          }
          if (st.st_ino == dir.ino && st.st_dev == dir.dev) break;
        }
        // Failures and entries used by path (the budget was spent) are
        // opened afresh every collection.
        Close(dir);
        OpenByPath(dir, path);
        break;
      case SysfsCacheMode::kInotify:
        // A cacheable entry stays valid until an event drops it; the others
        // were dropped at Begin(), so an unopened entry is a new one.
        if (!dir.opened) {
          OpenWatched(dir, path);
          if (!dir.cacheable) any_uncacheable_ = true;
        }
        break;
    }
    dir.opened = true;
    return dir;
  }

  // Reads `name` in the directory its last '/' names.
  ReadResult Split(std::string_view dir, std::string_view name, bool fixed) {
    if (name.find('/') != std::string_view::npos) {
      const std::string full = Join(dir, name);
      const std::size_t slash = full.rfind('/');
      return ReadIn(std::string_view(full).substr(0, slash),
                    std::string_view(full).substr(slash + 1), fixed);
    }
    return ReadIn(dir, name, fixed);
  }

  // `fixed`: the content may come from (and goes into) the kept entry.
  ReadResult ReadIn(std::string_view dir_path, std::string_view name,
                    bool fixed) {
    Dir& dir = Use(dir_path);
    if (!Present(dir)) return ErrnoError(dir.error);
    std::string data;
    auto kept = dir.files.find(name);
    if (kept != dir.files.end()) {
      File& file = kept->second;
      if (file.fd >= 0) {
        if (fixed && file.fixed) return *file.fixed;
        int error = 0;
        if (ReadAttribute(file.fd, /*from_start=*/true, &data, &error)) {
          if (fixed) Remember(file, data);
          return data;
        }
        CloseFile(file);
        dir.files.erase(kept);
        if (mode_ == SysfsCacheMode::kSysfs &&
            (error == ENODEV || error == ENOENT || error == ESTALE)) {
          // The node went away under us. Read this one by path (dir.fd
          // may be the removed directory, and dir.names may be in use, so
          // the directory is left alone); the next collection's identity
          // check re-opens the directory if it was re-created.
          return ReadByPath(dir_path, name);
        }
      } else if (file.error != 0) {
        return ErrnoError(file.error);  // known absent (inotify mode)
      }
    }
    if (dir.fd < 0) return ReadByPath(dir_path, name);
    char cname[256];
    if (name.size() >= sizeof(cname)) return ErrnoError(ENAMETOOLONG);
    std::memcpy(cname, name.data(), name.size());
    cname[name.size()] = '\0';
    int fd = OpenAttribute(dir.fd, cname);
    if (fd < 0) {
      const int error = errno;
      if (error == ENOENT && mode_ == SysfsCacheMode::kInotify &&
          dir.cacheable) {
        // Its creation would be an event on this watched directory.
        dir.files[std::string(name)].error = error;
      }
      return ErrnoError(error);
    }
    int error = 0;
    if (!ReadAttribute(fd, /*from_start=*/false, &data, &error)) {
      ::close(fd);
      return ErrnoError(error);
    }
    const bool keep = (mode_ == SysfsCacheMode::kSysfs ||
                       (mode_ == SysfsCacheMode::kInotify && dir.cacheable)) &&
                      budget_->TryTake();
    if (keep) {
      File& file = dir.files[std::string(name)];
      file = File();
      file.fd = fd;
      if (fixed) Remember(file, data);
    } else {
      ::close(fd);
    }
    return data;
  }

  // Only what a fixed attribute can be: a short line, not a whole page.
  static void Remember(File& file, const std::string& data) {
    constexpr std::size_t kMaxFixed = 256;
    if (data.size() <= kMaxFixed) file.fixed = data;
  }

  ReadResult ReadByPath(std::string_view dir_path, std::string_view name) {
    int fd = OpenAttribute(AT_FDCWD, Full(Join(dir_path, name)).c_str());
    if (fd < 0) return ErrnoError(errno);
    std::string data;
    int error = 0;
    const bool ok = ReadAttribute(fd, /*from_start=*/false, &data, &error);
    ::close(fd);
    if (!ok) return ErrnoError(error);
    return data;
  }

  std::string root_;
  SysfsCacheMode requested_ = SysfsCacheMode::kAuto;
  SysfsCacheMode mode_ = SysfsCacheMode::kPerCollection;
  bool decided_ = false;
  int inotify_ = -1;
  std::uint64_t gen_ = 0;
  std::shared_ptr<FdBudget> budget_;
  // Ordered, for DropSubtree's prefix walk; index_ finds an entry by its
  // whole path in one hash and one compare (the map's lookups compare long
  // shared prefixes, "class/infiniband/mlx5_0/ports/1/...", several times).
  // index_ points into dirs_'s nodes, which do not move; Erase() and the
  // clear() in DropAll() keep the two in step.
  std::map<std::string, Dir, std::less<>> dirs_;
  std::unordered_map<std::string_view, Dir*> index_;
  // The directory of the latest Use() (see there).
  Dir* last_dir_ = nullptr;
  std::uint64_t last_gen_ = 0;
  std::string last_path_;
  std::unordered_map<int, std::string> watches_;  // wd -> directory path
  // inotify mode: an entry without a watch may be in dirs_ (Begin drops
  // them all and clears this).
  bool any_uncacheable_ = false;
  // Keep()'s files. `fd` and `dir` are copies of what the directory entry
  // holds, valid while `epoch` equals close_epoch_ (no kept descriptor
  // closed since; entries are only erased after closing their files).
  struct Kept {
    std::string dir_path, name;
    int fd = -1;
    Dir* dir = nullptr;
    std::uint64_t epoch = 0;
  };
  std::vector<Kept> kept_;
  std::map<std::string, KeptFile, std::less<>> kept_index_;  // by dir/name
  std::uint64_t close_epoch_ = 1;
};

}  // namespace

SysfsReader::KeptFile SysfsReader::Keep(std::string_view dir,
                                        std::string_view name) {
  const auto [it, added] = kept_index_.try_emplace(
      Join(dir, name), static_cast<KeptFile>(kept_names_.size()));
  if (added) kept_names_.emplace_back(dir, name);
  return it->second;
}

Result<std::string_view> SysfsReader::ReadKept(KeptFile file,
                                               std::span<char> buf) {
  const auto& [dir, name] = kept_names_.at(file);
  ReadResult r = Read(dir, name);
  if (!r.ok()) return r.error();
  if (r->size() >= buf.size()) return ErrnoError(EOVERFLOW);
  std::memcpy(buf.data(), r->data(), r->size());
  return std::string_view(buf.data(), r->size());
}

std::unique_ptr<SysfsReader> Sysfs::NewReader() const {
  return std::make_unique<ForwardingReader>(*this);
}

std::unique_ptr<SysfsReader> MakeRealSysfsReader(
    std::string root, SysfsCacheMode mode, std::shared_ptr<FdBudget> budget) {
  return std::make_unique<CachingReader>(
      std::move(root), mode, budget ? std::move(budget) : ProcessFdBudget());
}

}  // namespace fabric
