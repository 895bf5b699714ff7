// The shell commands of the docs: every ```sh fenced block of README.md,
// docs/*.md and docs/runbooks/*.md, as written, with where it starts.
// doc_commands_test runs them. Thread-safety: pure functions over files
// read once per call.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/paths.h"

namespace fabric::testing {

struct DocBlock {
  std::string file;  // relative to the source tree: "docs/deploy.md"
  int line = 0;      // 1-based line of the opening fence
  std::string text;  // the block's lines, their common indentation removed
};

inline std::vector<DocBlock> ShellBlocks() {
  namespace fs = std::filesystem;
  const std::string src = SourceDir();
  std::vector<std::string> files = {"README.md"};
  for (const char* dir : {"docs", "docs/runbooks"}) {
    std::vector<std::string> in_dir;
    for (const auto& e : fs::directory_iterator(src + "/" + dir)) {
      if (e.path().extension() == ".md") {
        in_dir.push_back(std::string(dir) + "/" + e.path().filename().string());
      }
    }
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  std::vector<DocBlock> out;
  for (const auto& file : files) {
    std::ifstream in(src + "/" + file);
    std::string line;
    int number = 0;
    bool inside = false;
    std::size_t indent = 0;
    while (std::getline(in, line)) {
      ++number;
      const auto start = line.find_first_not_of(' ');
      const std::string text =
          start == std::string::npos ? "" : line.substr(start);
      if (text.rfind("```", 0) == 0) {
        if (!inside && text == "```sh") {
          out.push_back({file, number, ""});
          indent = start;
          inside = true;
        } else {
          inside = false;
        }
        continue;
      }
      if (inside) {
        out.back().text +=
            (line.size() > indent ? line.substr(indent) : "") + "\n";
      }
    }
  }
  return out;
}

}  // namespace fabric::testing
