// osm_flood SOCKET PORTS: sends PerfMgr events for PORTS distinct switch
// ports to an `opensm` collector's socket in the plugin's wire format (the
// series flood of issue 25), to measure the daemon's scrape and RSS at
// collectors.opensm.max_switch_ports (docs/opensm.md, Bounds).
#include "tests/support/osm_flood.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: osm_flood SOCKET PORTS\n");
    return 2;
  }
  const std::string error =
      fabric::testing::FloodSwitchPorts(argv[1], std::atoi(argv[2]));
  if (!error.empty()) {
    std::fprintf(stderr, "osm_flood: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
