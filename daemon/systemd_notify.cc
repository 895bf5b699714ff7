#include "daemon/systemd_notify.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>  // the functions' types; not linked

#include <cstdlib>

namespace fabric {
namespace {

struct Libsystemd {
  decltype(&sd_notify) notify = nullptr;
  decltype(&sd_watchdog_enabled) watchdog_enabled = nullptr;
};

const Libsystemd& Load() {
  static const Libsystemd lib = [] {
    Libsystemd out;
    const char* socket = std::getenv("NOTIFY_SOCKET");
    if (socket == nullptr || *socket == '\0') return out;
    // Never closed: the process talks to systemd until it exits.
    void* handle = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      spdlog::error(
          "NOTIFY_SOCKET is set but libsystemd.so.0 cannot be loaded ({}); "
          "systemd will not hear that fabricmon is ready",
          dlerror());
      return out;
    }
    out.notify =
        reinterpret_cast<decltype(&sd_notify)>(dlsym(handle, "sd_notify"));
    out.watchdog_enabled = reinterpret_cast<decltype(&sd_watchdog_enabled)>(
        dlsym(handle, "sd_watchdog_enabled"));
    return out;
  }();
  return lib;
}

}  // namespace

bool SystemdNotify(const char* state) {
  const Libsystemd& lib = Load();
  return lib.notify != nullptr && lib.notify(0, state) > 0;
}

std::uint64_t SystemdWatchdogUsec() {
  const Libsystemd& lib = Load();
  std::uint64_t usec = 0;
  if (lib.watchdog_enabled == nullptr || lib.watchdog_enabled(0, &usec) <= 0) {
    return 0;
  }
  return usec;
}

}  // namespace fabric
