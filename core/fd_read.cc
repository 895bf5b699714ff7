#include "core/fd_read.h"

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

}  // namespace fabric
