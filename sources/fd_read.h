// ReadAttribute: the one bounded read of a sysfs attribute (or any small
// file) behind Sysfs::Read and the caching SysfsReader.
//
// Thread-safety: a pure function of its descriptor; callers do not share one
// descriptor between threads.
#pragma once

#include <cstddef>
#include <string>

namespace fabric {

// sysfs attributes are at most PAGE_SIZE; a little more is allowed for
// recorded trees written by other tools. Anything longer is cut here.
constexpr std::size_t kMaxAttributeRead = 16384;

// Reads up to kMaxAttributeRead bytes of `fd` into `out`, stopping at the
// first short read: kernfs returns a whole attribute in one read(), as does
// a regular file, so the usual extra read() that returns 0 is one syscall
// per file saved. `from_start`: pread() from offset 0, for a kept
// descriptor (on sysfs a read at offset 0 regenerates the attribute);
// otherwise read(), so FIFOs and the like behave as with a plain open/read.
// On failure returns false with errno in `error`.
bool ReadAttribute(int fd, bool from_start, std::string* out, int* error);

// Reads the whole of the file at `path` into `out` (dump files: ethtool -S,
// dcb). Returns 0, the errno of a failed open/read, or EFBIG when the file
// is longer than `max_bytes` (a hostile or broken dump must not grow the
// daemon).
int ReadWholeFile(const std::string& path, std::size_t max_bytes,
                  std::string* out);

}  // namespace fabric
