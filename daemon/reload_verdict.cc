#include "daemon/reload_verdict.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

namespace fabric {
namespace {

bool ReadNumber(std::string_view* s, std::uint64_t* out) {
  const auto [end, ec] =
      std::from_chars(s->data(), s->data() + s->size(), *out);
  if (ec != std::errc() || end == s->data()) return false;
  s->remove_prefix(end - s->data());
  if (s->empty() || s->front() != ' ') return false;
  s->remove_prefix(1);
  return true;
}

}  // namespace

std::string FormatReloadVerdict(const ReloadVerdict& v) {
  std::string why = v.why;
  for (char& c : why) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return std::to_string(v.received) + " " + std::to_string(v.covered) +
         (v.ok ? " ok" : " rejected " + why) + "\n";
}

std::optional<ReloadVerdict> ParseReloadVerdict(std::string_view line) {
  ReloadVerdict v;
  if (!ReadNumber(&line, &v.received) || !ReadNumber(&line, &v.covered)) {
    return std::nullopt;
  }
  while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line == "ok") return v;
  constexpr std::string_view kRejected = "rejected";
  if (!line.starts_with(kRejected)) return std::nullopt;
  v.ok = false;
  line.remove_prefix(kRejected.size());
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  v.why = std::string(line);
  return v;
}

std::string ReloadVerdictPath(const char* runtime_directory) {
  if (runtime_directory == nullptr || *runtime_directory == '\0') return "";
  const std::string_view dirs(runtime_directory);
  return std::string(dirs.substr(0, dirs.find(':'))) + "/" + kReloadVerdictFile;
}

bool WriteReloadVerdict(const std::string& path, const ReloadVerdict& v,
                        std::string* error) {
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << FormatReloadVerdict(v);
    if (!out.flush()) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    *error = "cannot rename " + tmp + ": " + ec.message();
    return false;
  }
  return true;
}

std::optional<ReloadVerdict> ReadReloadVerdict(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return ParseReloadVerdict(line);
}

int SignalAndAwaitVerdict(const std::string& path,
                          const std::function<bool()>& send,
                          std::chrono::milliseconds timeout) {
  const auto before = path.empty() ? std::nullopt : ReadReloadVerdict(path);
  if (!send()) return 1;
  if (!before) return 0;
  // Our SIGHUP is at least the next one the daemon receives.
  const std::uint64_t ours = before->received + 1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto v = ReadReloadVerdict(path); v && v->covered >= ours) {
      if (v->ok) return 0;
      std::cerr << "fabricmon: reload rejected, keeping the running config: "
                << v->why << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cerr << "fabricmon: the daemon gave no verdict on the reload within "
            << timeout.count() / 1000
            << " s (still reading the files?); see its log\n";
  return 1;
}

}  // namespace fabric
