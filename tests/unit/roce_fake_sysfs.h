// An in-memory Sysfs for the roce tests: files are a path -> contents map,
// directories are implied by the paths, and chosen files fail with an errno
// (as unused GID table entries do with EINVAL). Thread-safety: none needed.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/sysfs.h"

namespace fabric::testing {

class RoceFakeSysfs final : public Sysfs {
 public:
  void File(const std::string& path, std::string contents) {
    files_[path] = std::move(contents);
  }
  void Fail(const std::string& path, int err) { errors_[path] = err; }

  ReadResult Read(const std::string& path) const override {
    ReadResult r;
    if (auto e = errors_.find(path); e != errors_.end()) {
      r.error = {e->second, std::system_category()};
    } else if (auto f = files_.find(path); f != files_.end()) {
      r.data = f->second;
    } else {
      r.error = std::make_error_code(std::errc::no_such_file_or_directory);
    }
    return r;
  }

  std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error) const override {
    std::set<std::string> names;
    const std::string prefix = path + "/";
    auto collect = [&](const auto& map) {
      for (const auto& [p, unused] : map) {
        if (p.rfind(prefix, 0) != 0) continue;
        std::string rest = p.substr(prefix.size());
        names.insert(rest.substr(0, rest.find('/')));
      }
    };
    collect(files_);
    collect(errors_);
    if (names.empty()) {
      if (error)
        *error = std::make_error_code(std::errc::no_such_file_or_directory);
      return std::nullopt;
    }
    return std::vector<std::string>(names.begin(), names.end());
  }

  std::string ReadLink(const std::string&) const override { return ""; }
  bool IsDirectory(const std::string& path) const override {
    return List(path, nullptr).has_value();
  }

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, int> errors_;
};

}  // namespace fabric::testing
