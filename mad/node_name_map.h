// infiniband-diags' node-name-map file: one `GUID "name"` per line (GUID
// in hex with 0x, or decimal), `#` comments and blank lines ignored.
// Malformed lines are skipped and reported by line number, never fatal.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::mad {

struct NodeNameMap {
  std::map<std::uint64_t, std::string> names;
  std::vector<int> bad_lines;  // 1-based
};

NodeNameMap ParseNodeNameMap(std::string_view text);

}  // namespace fabric::mad
