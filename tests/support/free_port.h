// A loopback UDP port nothing holds right now, chosen by the kernel (bind to
// port 0, read the port, close). Tests that must name a port before a
// collector binds it use this rather than a port derived from their pid:
// ctest starts tests back to back, so neighbouring pids picked neighbouring
// ports and two tests bound the same one. Thread-safety: free function.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

namespace fabric::testing {

inline int FreeUdpPort() {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket socket(
      io, boost::asio::ip::udp::endpoint(
              boost::asio::ip::address_v4::loopback(), 0));
  return socket.local_endpoint().port();
}

}  // namespace fabric::testing
