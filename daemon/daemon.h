// The long-running daemon: Boost.Asio event loop, per-collector pollers,
// the /metrics listener, signals (SIGHUP reload, SIGTERM/SIGINT stop) and
// the systemd notify protocol (READY, STOPPING, WATCHDOG). A reload reads
// and parses its files off the event loop (daemon/off_loop.h).
//
// Thread-safety: RunDaemon owns everything it creates and runs on the
// calling thread until stopped.
#pragma once

#include "config/config.h"
#include "daemon/options.h"

namespace fabric {

// Runs until SIGTERM/SIGINT. Returns the process exit status: 0 after a
// clean stop, 1 when the listener cannot be bound at startup.
int RunDaemon(const Options& options, const Config& config);

}  // namespace fabric
