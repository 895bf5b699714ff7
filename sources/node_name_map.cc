#include "sources/node_name_map.h"

#include <charconv>

#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// "0x..." hex or decimal, the whole token.
bool ParseMapGuid(std::string_view token, std::uint64_t* guid) {
  int base = 10;
  if (token.size() > 2 && token[0] == '0' &&
      (token[1] == 'x' || token[1] == 'X')) {
    token.remove_prefix(2);
    base = 16;
  }
  if (token.empty()) return false;
  const auto [end, ec] =
      std::from_chars(token.data(), token.data() + token.size(), *guid, base);
  return ec == std::errc() && end == token.data() + token.size();
}

}  // namespace

NodeNameMap ParseNodeNameMap(std::string_view text) {
  NodeNameMap map;
  int number = 0;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{}
                                         : text.substr(eol + 1);
    ++number;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      // '#' inside a quoted name is part of the name.
      const auto quote = line.find('"');
      if (quote == std::string_view::npos || hash < quote) {
        line = line.substr(0, hash);
      }
    }
    line = TrimValue(line);
    if (line.empty()) continue;
    const auto space = line.find_first_of(" \t");
    std::uint64_t guid = 0;
    if (space == std::string_view::npos ||
        !ParseMapGuid(line.substr(0, space), &guid)) {
      map.bad_lines.push_back(number);
      continue;
    }
    std::string_view name = TrimValue(line.substr(space));
    if (!name.empty() && name.front() == '"') {
      const auto close = name.find('"', 1);
      if (close == std::string_view::npos) {
        map.bad_lines.push_back(number);
        continue;
      }
      name = name.substr(1, close - 1);
    }
    if (name.empty()) {
      map.bad_lines.push_back(number);
      continue;
    }
    map.names[guid] = std::string(name);
  }
  return map;
}

}  // namespace fabric
