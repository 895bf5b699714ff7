// Sends PerfMgr's two events (port_errors, port_data_counters) for many
// distinct switch ports to an `opensm` collector's socket, encoded as the
// plugin encodes them (osm/event_wire.h): the series flood of issue 25, for
// tests/integration/series_cap_test.cc and bench/osm_flood.cc.
//
// Thread-safety: a pure function of its arguments; one socket per call.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "osm/event_wire.h"

namespace fabric::testing {

// Ports 1..64 of consecutive switch GUIDs ("leaf<n>"). Sends block while
// the receiver's queue is full, so none is lost. Empty, or why it failed.
inline std::string FloodSwitchPorts(const std::string& socket_path, int ports) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::strerror(errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  std::array<uint8_t, osm::kMaxMessageSize> buf{};
  std::string error;
  auto send = [&](const osm::Message& m) {
    const std::size_t n = osm::EncodeEvent(m, buf);
    if (::sendto(fd, buf.data(), n, 0, reinterpret_cast<sockaddr*>(&addr),
                 sizeof(addr)) != static_cast<ssize_t>(n)) {
      error = "sendto " + socket_path + ": " + std::strerror(errno);
    }
  };
  for (int i = 0; i < ports && error.empty(); ++i) {
    osm::PortId id;
    id.node_guid = 0x0002c90300000000ull + i / 64;
    id.port = static_cast<uint8_t>(i % 64 + 1);
    id.node_type = osm::NodeType::kSwitch;
    const std::string name = "leaf" + std::to_string(i / 64);
    id.SetName(name.c_str(), name.size());
    osm::PortErrors pe;
    pe.id = id;
    pe.symbol_error = 1;
    osm::Message errors;
    errors.event = osm::Event::kPortErrors;
    errors.body = pe;
    send(errors);
    osm::PortData pd;
    pd.id = id;
    pd.xmit_data = 100;
    osm::Message data;
    data.event = osm::Event::kPortDataCounters;
    data.body = pd;
    send(data);
  }
  ::close(fd);
  return error;
}

}  // namespace fabric::testing
