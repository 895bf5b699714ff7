// ReadTextFile: the one read of the small text files collectors are
// configured with (node-name maps, probe peers files). Collectors reach it
// through CollectorEnv::read_text_file, the seam tests replace; they never
// open a path themselves.
//
// A bounded regular-file read (sources/fd_read.h's ReadRegularFile): a
// setting that names the wrong file (a log, a FIFO, a device) must neither
// grow nor block the daemon; a longer file is an error (EFBIG), not a
// truncated read, and the error says why ("not a regular file").
//
// Thread-safety: a pure function of the file system; safe from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "sources/fd_read.h"

namespace fabric {

// The whole of `path`, or why not (FileRead::error), refused when longer
// than `max_bytes` (each caller names its own cap: kMaxNodeNameMapBytes,
// kMaxPeersFileBytes).
FileRead ReadTextFile(const std::string& path, std::size_t max_bytes);

// The seam: ReadTextFile, or a test's files.
using TextFileReader =
    std::function<FileRead(const std::string& path, std::size_t max_bytes)>;

}  // namespace fabric
