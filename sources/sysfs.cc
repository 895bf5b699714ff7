#include "sources/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sources/fd_read.h"

namespace fabric {
namespace {

class RealSysfs final : public Sysfs {
 public:
  RealSysfs(std::string root, SysfsCacheMode mode)
      : root_(std::move(root)), mode_(mode) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  ReadResult Read(const std::string& path) const override {
    int fd = ::open(Full(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno);
    std::string data;
    int error = 0;
    const bool ok = ReadAttribute(fd, /*from_start=*/false, &data, &error);
    ::close(fd);
    if (!ok) return ErrnoError(error);
    return data;
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
