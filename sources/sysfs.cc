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
  RealSysfs(std::string root, SysfsCacheMode mode,
            std::shared_ptr<FdBudget> budget)
      : root_(std::move(root)), mode_(mode), budget_(std::move(budget)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  ReadResult Read(const std::string& path) const override {
    int fd = OpenAttribute(AT_FDCWD, Full(path).c_str());
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
    return MakeRealSysfsReader(root_, mode_, budget_);
  }

 private:
  std::string Full(const std::string& path) const { return root_ + "/" + path; }
  std::string root_;
  SysfsCacheMode mode_;
  std::shared_ptr<FdBudget> budget_;
};

}  // namespace

int OpenAttribute(int dirfd, const char* path) {
  const int fd = ::openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  int error = 0;
  if (::fstat(fd, &st) != 0) {
    error = errno;
  } else if (S_ISDIR(st.st_mode)) {
    error = EISDIR;  // what read() would say
  } else if (!S_ISREG(st.st_mode)) {
    error = EINVAL;
  }
  if (error == 0) return fd;
  ::close(fd);
  errno = error;
  return -1;
}

std::unique_ptr<Sysfs> MakeRealSysfs(std::string root, SysfsCacheMode mode,
                                     std::shared_ptr<FdBudget> budget) {
  return std::make_unique<RealSysfs>(std::move(root), mode, std::move(budget));
}

}  // namespace fabric
