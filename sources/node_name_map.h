// The node-name-map file infiniband-diags and OpenSM share
// (`--node-name-map`): one `<guid> "<name>"` per line, the GUID in hex with
// 0x or in decimal, the name quoted or bare; `#` starts a comment (inside
// quotes it is part of the name); blank lines are ignored. Malformed lines
// are skipped and reported by number, never fatal. Used by the fabric sweep
// and the opensm collector (`node_name_map` in both).
//
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fabric {

// The largest node-name-map file read: a line per node at ~60 bytes is
// ~6 MB for a 100,000-node fabric.
inline constexpr std::size_t kMaxNodeNameMapBytes = 8 << 20;

struct NodeNameMap {
  std::map<std::uint64_t, std::string> names;  // node GUID -> name
  std::vector<int> bad_lines;                  // 1-based
};

NodeNameMap ParseNodeNameMap(std::string_view text);

}  // namespace fabric
