#include "sources/ethtool_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sources/ethtool_link.h"
#include "sources/ethtool_parse.h"
#include "sources/fd_read.h"

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
  if (!UsableName(netdev)) return Errno(ENODEV);
  std::string text;
  if (const int e =
          ReadWholeFile(dir_ + "/" + netdev, kMaxEthtoolDumpBytes, &text)) {
    // No dump = no such netdev (it vanished, or was never there).
    return Errno(e == ENOENT || e == ENOTDIR ? ENODEV : e);
  }
  EthtoolText parsed = ParseEthtoolText(text);
  parsed.stats.skipped_lines = parsed.bad_lines;
  return std::move(parsed.stats);
}

EthtoolLinkResult FileEthtoolSource::Link(const std::string& netdev) {
  if (!UsableName(netdev)) return Errno(ENODEV);
  std::string text;
  if (const int e = ReadWholeFile(dir_ + "/" + netdev + ".link",
                                  kMaxEthtoolDumpBytes, &text)) {
    if (e == ENOENT || e == ENOTDIR) return std::errc::operation_not_supported;
    return Errno(e);
  }
  auto link = ParseEthtoolLinkText(text);
  if (!link) return Errno(EBADMSG);
  return std::move(*link);
}

std::unique_ptr<EthtoolSource> MakeFileEthtoolSource(const std::string& dir) {
  return std::make_unique<FileEthtoolSource>(dir);
}

}  // namespace fabric
