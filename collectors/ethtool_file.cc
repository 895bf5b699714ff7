#include "collectors/ethtool_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "collectors/ethtool_parse.h"

namespace fabric {
namespace {

// A netdev name usable as one path component (IFNAMSIZ is 16 with the NUL).
bool UsableName(const std::string& name) {
  return !name.empty() && name.size() < 16 && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::error_code Errno(int e) { return {e, std::generic_category()}; }

}  // namespace

EthtoolResult FileEthtoolSource::Stats(const std::string& netdev) {
  EthtoolResult r;
  if (!UsableName(netdev)) {
    r.error = Errno(ENODEV);
    return r;
  }
  const std::string path = dir_ + "/" + netdev;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    // No dump = no such netdev (it vanished, or was never there).
    r.error = Errno(e == ENOENT || e == ENOTDIR ? ENODEV : e);
    return r;
  }
  std::string text;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = Errno(errno);
      break;
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > kMaxEthtoolDumpBytes) {
      r.error = Errno(EFBIG);
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (r.error) return r;
  EthtoolText parsed = ParseEthtoolText(text);
  r.stats = std::move(parsed.stats);
  r.stats.skipped_lines = parsed.bad_lines;
  return r;
}

std::unique_ptr<EthtoolSource> MakeFileEthtoolSource(const std::string& dir) {
  return std::make_unique<FileEthtoolSource>(dir);
}

}  // namespace fabric
