// Paths tests need: the source tree, the build tree, built binaries and the
// recorded fixtures. Thread-safety: pure functions.
#pragma once

#include <string>

namespace fabric::testing {

inline std::string SourceDir() { return FABRICMON_SOURCE_DIR; }
inline std::string BinaryDir() { return FABRICMON_BINARY_DIR; }
// Built executables live at the top of the build tree.
inline std::string Binary(const std::string& name) {
  return BinaryDir() + "/" + name;
}
// tests/fixtures/<relative>
inline std::string Fixture(const std::string& relative) {
  return SourceDir() + "/tests/fixtures/" + relative;
}

}  // namespace fabric::testing
