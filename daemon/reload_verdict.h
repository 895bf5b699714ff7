// The outcome of the last SIGHUP, as a one-line file in the unit's runtime
// directory ($RUNTIME_DIRECTORY/reload-verdict), so `--signal-reload` (the
// unit's ExecReload) can wait for the running daemon's own verdict and make
// `systemctl reload` fail on a rejected config. The running process checks
// what it reads itself: a separate `--check-config` in ExecReload cannot
// always see what the daemon sees (systemd 252 does not mount the unit's
// credentials for ExecReload in a sandboxed unit: systemd issue #35227).
//
// Line: "<received> <covered> ok|rejected[ <why>]": SIGHUPs received so far,
// the SIGHUPs the verdict's reload covers (those received before it started
// reading the files), and its result.
//
// Thread-safety: pure functions, and file functions with no shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace fabric {

inline constexpr char kReloadVerdictFile[] = "reload-verdict";

struct ReloadVerdict {
  std::uint64_t received = 0;
  std::uint64_t covered = 0;
  bool ok = true;
  std::string why;  // set when rejected
};

std::string FormatReloadVerdict(const ReloadVerdict& v);
std::optional<ReloadVerdict> ParseReloadVerdict(std::string_view line);

// The verdict file under the first directory of `runtime_directory` (systemd
// joins several with ':'); "" when it is unset or empty (not under systemd).
std::string ReloadVerdictPath(const char* runtime_directory);

// Replaces the file at `path` (write, then rename); false with *error.
bool WriteReloadVerdict(const std::string& path, const ReloadVerdict& v,
                        std::string* error);
std::optional<ReloadVerdict> ReadReloadVerdict(const std::string& path);

// Sends the signal with `send` and waits for the verdict of a reload that
// covers it. Without a readable verdict file before signalling (a daemon not
// under systemd, or an older one) it only sends. Returns the exit status:
// 0 applied (or only sent), 1 rejected, not sent, or no verdict within
// `timeout`; prints why to stderr.
int SignalAndAwaitVerdict(const std::string& path,
                          const std::function<bool()>& send,
                          std::chrono::milliseconds timeout);

}  // namespace fabric
