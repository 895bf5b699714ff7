#include "core/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace fabric {
namespace {

// sysfs attributes are at most PAGE_SIZE; allow a little more for recorded
// trees that were written by other tools.
constexpr std::size_t kMaxRead = 16384;

class RealSysfs final : public Sysfs {
 public:
  RealSysfs(std::string root, SysfsCacheMode mode)
      : root_(std::move(root)), mode_(mode) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  ReadResult Read(const std::string& path) const override {
    ReadResult result;
    int fd = ::open(Full(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result.error = {errno, std::system_category()};
      return result;
    }
    // A stack buffer instead of a zero-filled 16 KiB string per read, and
    // stop at the first short read: sysfs (kernfs) returns a whole attribute
    // in one read(), as does a regular file, so the usual extra read() that
    // returns 0 is one syscall per file saved (collections read hundreds).
    char buf[kMaxRead];
    std::size_t used = 0;
    while (used < kMaxRead) {
      ssize_t n = ::read(fd, buf + used, kMaxRead - used);
      if (n < 0) {
        if (errno == EINTR) continue;
        result.error = {errno, std::system_category()};
        break;
      }
      used += static_cast<std::size_t>(n);
      if (n == 0 || used < kMaxRead) break;
    }
    ::close(fd);
    if (result.ok()) result.data.assign(buf, used);
    return result;
  }

  std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error) const override {
    DIR* dir = ::opendir(Full(path).c_str());
    if (dir == nullptr) {
      if (error) *error = {errno, std::system_category()};
      return std::nullopt;
    }
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string ReadLink(const std::string& path) const override {
    char buf[4096];
    ssize_t n = ::readlink(Full(path).c_str(), buf, sizeof(buf));
    if (n <= 0) return {};
    return std::string(buf, static_cast<std::size_t>(n));
  }

  bool IsDirectory(const std::string& path) const override {
    struct stat st;
    return ::stat(Full(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  std::unique_ptr<SysfsReader> NewReader() const override {
    return MakeRealSysfsReader(root_, mode_);
  }

 private:
  std::string Full(const std::string& path) const { return root_ + "/" + path; }
  std::string root_;
  SysfsCacheMode mode_;
};

}  // namespace

std::unique_ptr<Sysfs> MakeRealSysfs(std::string root, SysfsCacheMode mode) {
  return std::make_unique<RealSysfs>(std::move(root), mode);
}

}  // namespace fabric
