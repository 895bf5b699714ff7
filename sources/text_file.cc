#include "sources/text_file.h"

#include "sources/fd_read.h"

namespace fabric {

Result<std::string> ReadTextFile(const std::string& path,
                                 std::size_t max_bytes) {
  std::string text;
  if (const int error = ReadWholeFile(path, max_bytes, &text); error != 0) {
    return ErrnoError(error);
  }
  return text;
}

}  // namespace fabric
