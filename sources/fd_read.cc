#include "sources/fd_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace fabric {

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

int ReadWholeFile(const std::string& path, std::size_t max_bytes,
                  std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  out->clear();
  int error = 0;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    if (n == 0) break;
    if (out->size() + static_cast<std::size_t>(n) > max_bytes) {
      error = EFBIG;
      break;
    }
    out->append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return error;
}

}  // namespace fabric
