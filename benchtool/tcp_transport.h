// TcpTransport: the BulkTransport over plain TCP sockets, for hosts without
// RDMA ports (and every test here). One connection per direction of each
// link (a rank connects to each rank it sends to and accepts one from each it
// receives from); the connector presents the session id, the session's token
// and its rank, so a stranger cannot attach. Every message carries a 12-byte
// header (magic, length) so a mismatched plan is an error, not garbage.
// Sockets are non-blocking and one poll() loop drives all of an Exchange's
// sends and receives at once; an eventfd wakes it for Abort().
//
// Thread-safety: as BulkTransport (one driving thread; Abort from any).
#pragma once

#include <memory>
#include <string>

#include "benchtool/transport.h"

namespace fabric::bench {

struct TcpTransportOptions {
  // Local address the bulk listener binds (the agent passes the address its
  // control connection arrived on); empty = any.
  std::string bind_address;
};

std::unique_ptr<BulkTransport> MakeTcpTransport(TcpTransportOptions options);

// Endpoint bytes of a TCP rank: its listening port, big-endian.
Endpoint TcpEndpoint(std::uint16_t port);

// "host:port" -> host (brackets of an IPv6 literal removed) and port; false
// when malformed.
bool SplitHostPort(const std::string& text, std::string* host,
                   std::uint16_t* port);

}  // namespace fabric::bench
