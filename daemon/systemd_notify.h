// systemd's notify protocol through libsystemd (sd_notify(3),
// sd_watchdog_enabled(3)), with libsystemd loaded at run time and only when
// systemd is listening ($NOTIFY_SOCKET set, as it is for Type=notify units).
// `--once`, `--check-config` and a daemon started outside systemd then never
// map libsystemd and the compression and crypto libraries it pulls in
// (2.9 ms of CPU and 2.5 MB of RSS per process start, measured on the build
// VM with an empty main() linked against it).
//
// Thread-safety: the library is looked up once (a function-local static);
// calls may come from any thread.
#pragma once

#include <cstdint>

namespace fabric {

// sd_notify(0, state) when systemd listens. False when it does not, when
// libsystemd cannot be loaded (logged once), or when sending fails.
bool SystemdNotify(const char* state);

// The watchdog period systemd asked for (sd_watchdog_enabled), in
// microseconds; 0 when there is none.
std::uint64_t SystemdWatchdogUsec();

}  // namespace fabric
