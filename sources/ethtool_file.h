// FileEthtoolSource: an EthtoolSource that reads `ethtool -S` text dumps
// from a directory, one file per netdev (`<dir>/<netdev>`), instead of asking
// the kernel. It lets the roce and congestion collectors read PFC/ethtool
// statistics the daemon cannot get through the ioctl: the dumps the fabric
// simulator writes next to its sysfs tree (`<host>/ethtool/<netdev>`, see
// docs/simulator.md), or dumps recorded from a real host. Selected by the
// config key `ethtool_dir` (docs/configuration.md).
//
// Behaviour (sources/ethtool_source.h contract):
//   - a missing file (or a name that cannot be a netdev) is ENODEV, like a
//     netdev that vanished; any other read error is its errno; a file larger
//     than kMaxEthtoolDumpBytes is EFBIG;
//   - the text is parsed with ParseEthtoolText (sources/ethtool_parse.h);
//     malformed or truncated lines are skipped and counted in
//     EthtoolStats.skipped_lines, the rest is returned;
//   - driver and hw_address stay empty: a text dump names neither, and the
//     file's netdev is not the running kernel's interface.
// Writers should replace a dump atomically (write elsewhere, rename over),
// as the simulator does; the source reads each file with one open/read loop.
//
// Thread-safety: stateless; Stats() may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "sources/ethtool_source.h"

namespace fabric {

inline constexpr std::size_t kMaxEthtoolDumpBytes = 4 << 20;

class FileEthtoolSource final : public EthtoolSource {
 public:
  explicit FileEthtoolSource(std::string dir) : dir_(std::move(dir)) {}
  EthtoolResult Stats(const std::string& netdev) override;
  // `<dir>/<netdev>.link`: what `ethtool <netdev>` prints
  // (ParseEthtoolLinkText). No such file: operation_not_supported (a dump
  // without link settings); a text with none of them: EBADMSG.
  EthtoolLinkResult Link(const std::string& netdev) override;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

std::unique_ptr<EthtoolSource> MakeFileEthtoolSource(const std::string& dir);

}  // namespace fabric
