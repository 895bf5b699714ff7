#include "daemon/daemon.h"

#include <spdlog/spdlog.h>

namespace fabric {

int RunDaemon(const Options&, const Config&) {
  spdlog::error("daemon mode not implemented yet; use --once");
  return 1;
}

}  // namespace fabric
