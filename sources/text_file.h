// ReadTextFile: the one read of the small text files collectors are
// configured with (node-name maps, probe peers files). Collectors reach it
// through CollectorEnv::read_text_file, the seam tests replace; they never
// open a path themselves.
//
// Size-capped: a setting that names the wrong file (a log, a device) must
// not grow the daemon; a longer file is an error (EFBIG), not a truncated
// read.
//
// Thread-safety: a pure function of the file system; safe from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/result.h"

namespace fabric {

// Node-name maps of the largest fabrics are a few MB; peers files less.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{16} << 20;

// The whole of `path`, or the errno of the failed open/read, or EFBIG when
// it is longer than `max_bytes`.
Result<std::string> ReadTextFile(const std::string& path,
                                 std::size_t max_bytes = kMaxTextFileBytes);

// The seam: ReadTextFile, or a test's files.
using TextFileReader = std::function<Result<std::string>(
    const std::string& path, std::size_t max_bytes)>;

}  // namespace fabric
