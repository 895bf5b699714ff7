#include "sources/fd_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fabric {
namespace {

// "4 KiB", "1 MiB", or bytes when neither divides.
std::string Size(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024, kMiB = 1024 * kKiB;
  if (bytes >= kMiB && bytes % kMiB == 0) {
    return std::to_string(bytes / kMiB) + " MiB";
  }
  if (bytes >= kKiB && bytes % kKiB == 0) {
    return std::to_string(bytes / kKiB) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

void Fail(FileRead* r, int error_number, std::string error) {
  r->text.clear();
  r->error_number = error_number;
  r->error = std::move(error);
}

bool IsNullDevice(const struct stat& st) {
  return S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
         minor(st.st_rdev) == 3;
}

}  // namespace

bool ReadAttribute(int fd, bool from_start, std::string* out, int* error) {
  // A stack buffer rather than a zero-filled 16 KiB string per read.
  char buf[kMaxAttributeRead];
  std::size_t used = 0;
  while (used < kMaxAttributeRead) {
    const ssize_t n = from_start
                          ? ::pread(fd, buf + used, kMaxAttributeRead - used,
                                    static_cast<off_t>(used))
                          : ::read(fd, buf + used, kMaxAttributeRead - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = errno;
      return false;
    }
    used += static_cast<std::size_t>(n);
    if (n == 0 || used < kMaxAttributeRead) break;
  }
  out->assign(buf, used);
  return true;
}

FileRead ReadRegularFile(const std::string& path, std::size_t max_bytes,
                         Symlinks symlinks) {
  FileRead r;
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (symlinks == Symlinks::kRefuse) flags |= O_NOFOLLOW;
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    Fail(&r, errno, std::strerror(errno));
    return r;
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (stat_ok) r.mode = st.st_mode;
  if (!stat_ok) {
    Fail(&r, errno, std::strerror(errno));
  } else if (IsNullDevice(st)) {
    // Empty, as documented.
  } else if (!S_ISREG(st.st_mode)) {
    Fail(&r, EINVAL, "not a regular file");
  } else if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    Fail(&r, EFBIG, "larger than " + Size(max_bytes));
  } else {
    char buf[65536];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Fail(&r, errno, std::strerror(errno));
        break;
      }
      if (n == 0) break;
      // Grown since fstat (a file being appended to): still refused.
      if (r.text.size() + static_cast<std::size_t>(n) > max_bytes) {
        Fail(&r, EFBIG, "larger than " + Size(max_bytes));
        break;
      }
      r.text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return r;
}

int ReadWholeFile(const std::string& path, std::size_t max_bytes,
                  std::string* out) {
  FileRead r = ReadRegularFile(path, max_bytes);
  *out = std::move(r.text);
  return r.error_number;
}

}  // namespace fabric
