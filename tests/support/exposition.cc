#include "tests/support/exposition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace fabric::testing {
namespace {

// `name{labels} value [timestamp]` -> "name{sorted labels}"; nullopt when
// the line is not a sample line of the text format.
std::optional<std::string> SeriesKey(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  if (i == 0) return std::nullopt;
  std::string key(line.substr(0, i));
  std::vector<std::pair<std::string, std::string>> labels;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const std::size_t eq = line.find('=', i);
      if (eq == std::string_view::npos || eq + 1 >= line.size() ||
          line[eq + 1] != '"') {
        return std::nullopt;
      }
      std::string name(line.substr(i, eq - i));
      std::string value;
      std::size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) value += line[j++];
        value += line[j];
      }
      if (j >= line.size()) return std::nullopt;
      labels.emplace_back(std::move(name), std::move(value));
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return std::nullopt;
    ++i;  // '}'
  }
  if (i >= line.size() || line[i] != ' ') return std::nullopt;
  std::sort(labels.begin(), labels.end());
  key += '{';
  for (std::size_t k = 0; k < labels.size(); ++k) {
    key += (k ? "," : "") + labels[k].first + "=\"" + labels[k].second + "\"";
  }
  key += '}';
  return key;
}

}  // namespace

std::vector<std::string> DuplicateSeries(std::string_view text) {
  std::map<std::string, int> seen;
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? "" : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    const auto key = SeriesKey(line);
    if (!key) {
      out.push_back("unparsable: " + std::string(line));
      continue;
    }
    if (++seen[*key] == 2) out.push_back(*key);
  }
  return out;
}

void ExpectUniqueSeries(std::string_view text, std::string_view what) {
  const auto dups = DuplicateSeries(text);
  if (dups.empty()) return;
  std::string list;
  for (const auto& d : dups) list += "\n  " + d;
  ADD_FAILURE() << what << ": series written more than once in one "
                << "exposition:" << list;
}

}  // namespace fabric::testing
