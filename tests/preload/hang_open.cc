// LD_PRELOAD library for the daemon tests: opening the file named by
// FABRICMON_TEST_HANG_PATH (its absolute, symlink-free path) blocks the
// calling thread, the way a sysfs read stuck in a device's firmware does,
// for as long as the file named by FABRICMON_TEST_HANG_WHILE exists
// (forever when unset), then opens normally. The daemon's readers refuse
// FIFOs, so a real file that hangs is what tests of stuck collections need.
//
// Thread-safety: the wrappers are reentrant; the real functions are looked
// up once (dlsym is thread-safe).
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// The absolute path `path` names relative to `dirfd`, as openat() resolves
// it (directory part through /proc/self/fd).
bool Resolve(int dirfd, const char* path, char* out, std::size_t size) {
  if (path[0] == '/') return std::snprintf(out, size, "%s", path) > 0;
  char dir[PATH_MAX];
  if (dirfd == AT_FDCWD) {
    if (::getcwd(dir, sizeof dir) == nullptr) return false;
  } else {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    const ssize_t n = ::readlink(link, dir, sizeof dir - 1);
    if (n <= 0) return false;
    dir[n] = '\0';
  }
  return std::snprintf(out, size, "%s/%s", dir, path) > 0;
}

void MaybeHang(int dirfd, const char* path) {
  const char* want = std::getenv("FABRICMON_TEST_HANG_PATH");
  if (want == nullptr || path == nullptr) return;
  char full[2 * PATH_MAX];
  if (!Resolve(dirfd, path, full, sizeof full) ||
      std::strcmp(full, want) != 0) {
    return;
  }
  const char* hold = std::getenv("FABRICMON_TEST_HANG_WHILE");
  while (hold == nullptr || ::access(hold, F_OK) == 0) ::usleep(10'000);
}

template <class F>
F Real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

mode_t ModeArg(int flags, va_list args) {
  return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
}

}  // namespace

extern "C" {

int openat(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = ModeArg(flags, args);
  va_end(args);
  MaybeHang(dirfd, path);
  static const auto real = Real<int (*)(int, const char*, int, ...)>("openat");
  return real(dirfd, path, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = ModeArg(flags, args);
  va_end(args);
  MaybeHang(AT_FDCWD, path);
  static const auto real = Real<int (*)(const char*, int, ...)>("open");
  return real(path, flags, mode);
}

}  // extern "C"
