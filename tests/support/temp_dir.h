// A private temporary directory for a test (mkdtemp under the system's
// temporary directory), removed with its contents when it goes out of
// scope. Thread-safety: one owner.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace fabric::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fabricmon-test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX"))
            .string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fabric::testing
