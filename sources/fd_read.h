// The bounded reads of files: ReadAttribute for a sysfs attribute (behind
// Sysfs::Read and the caching SysfsReader), ReadRegularFile for every file
// an operator names (config, web config, TLS files, keys, peer lists,
// node-name-maps, dumps).
//
// Thread-safety: pure functions of their descriptor or path; callers do not
// share one descriptor between threads.
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

// What ReadRegularFile read, or why it refused.
struct FileRead {
  std::string text;
  // st_mode of the opened file (0 when it could not be opened), so a caller
  // checks permissions on the file it read rather than on the path.
  unsigned mode = 0;
  // "" on success; else "not a regular file", "larger than N bytes" or the
  // strerror text of the open/fstat/read that failed.
  std::string error;
  // The errno behind `error` (ENOENT for a missing file ...): EINVAL for a
  // file that is not regular, EFBIG for one over the limit.
  int error_number = 0;
  bool ok() const { return error.empty(); }
};

enum class Symlinks { kFollow, kRefuse };

// Reads the whole file at `path`, at most `max_bytes` of it. Opened with
// O_NONBLOCK, so a FIFO's open does not wait for a writer, then checked on
// the descriptor: anything that is not a regular file (a FIFO, a socket, a
// device such as /dev/zero, a directory) is refused before a byte is read,
// so nothing can block the reader or grow it without bound. The one
// exception is the null device, which reads as an empty file (`--config
// /dev/null` is the documented way to run the built-in defaults). A file
// longer than `max_bytes`, also one that grows while it is read, is refused
// whole. Symlinks::kRefuse opens with O_NOFOLLOW (key files).
FileRead ReadRegularFile(const std::string& path, std::size_t max_bytes,
                         Symlinks symlinks = Symlinks::kFollow);

// ReadRegularFile for callers that only need the errno (dump files:
// ethtool -S, dcb): 0, or FileRead::error_number.
int ReadWholeFile(const std::string& path, std::size_t max_bytes,
                  std::string* out);

}  // namespace fabric
