// The PromQL of the runbooks (docs/runbooks/*.md): every line of every
// ```promql fenced block is one query (a `#` starts a comment, which
// PromQL itself accepts), with the alert's labels as `<placeholders>`.
// ForPrometheus() turns a placeholder matcher (label="<x>") into one that
// matches any value, so the query runs as written against any Prometheus.
// Thread-safety: pure functions over files read once per call.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/paths.h"

namespace fabric::testing {

// {runbook file name, query}, in file and line order.
inline std::vector<std::pair<std::string, std::string>> RunbookQueries() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(SourceDir() + "/docs/runbooks")) {
    if (e.path().extension() == ".md") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
      const auto start = line.find_first_not_of(' ');
      const std::string text =
          start == std::string::npos ? "" : line.substr(start);
      if (text.rfind("```", 0) == 0) {
        inside = !inside && text == "```promql";
        continue;
      }
      if (!inside || text.empty() || text[0] == '#') continue;
      out.emplace_back(path.filename().string(), text);
    }
  }
  return out;
}

// label="<placeholder>" -> label=~".+".
inline std::string ForPrometheus(const std::string& query) {
  return std::regex_replace(query, std::regex(R"re(="<[^>"]+>")re"),
                            "=~\".+\"");
}

}  // namespace fabric::testing
