#include "sources/text_file.h"

namespace fabric {

FileRead ReadTextFile(const std::string& path, std::size_t max_bytes) {
  return ReadRegularFile(path, max_bytes);
}

}  // namespace fabric
