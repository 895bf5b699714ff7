#include "mad/node_name_map.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace fabric::mad {

NodeNameMap ParseNodeNameMap(std::string_view text) {
  NodeNameMap out;
  int number = 0;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string line(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view()
                                         : text.substr(eol + 1);
    ++number;
    std::size_t i = line.find_first_not_of(" \t\r");
    if (i == std::string::npos || line[i] == '#') continue;
    const char* start = line.c_str() + i;
    char* end = nullptr;
    errno = 0;
    const unsigned long long guid = std::strtoull(start, &end, 0);
    if (end == start || errno != 0 || (*end != ' ' && *end != '\t')) {
      out.bad_lines.push_back(number);
      continue;
    }
    std::string rest(end);
    const auto open = rest.find('"');
    const auto close =
        open == std::string::npos ? open : rest.find('"', open + 1);
    if (close == std::string::npos) {
      out.bad_lines.push_back(number);
      continue;
    }
    out.names[guid] = rest.substr(open + 1, close - open - 1);
  }
  return out;
}

}  // namespace fabric::mad
