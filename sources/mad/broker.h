// The MAD broker's server side: serves one client connection (a connected
// SOCK_SEQPACKET socket) until the client hangs up. The broker is the only
// fabricmon process that opens umad (fabricmon-mad-broker, broker_main.cc);
// the daemon reaches MADs through it (broker_client.h).
//
// Per request (broker_protocol.h): a malformed message, a Set or any method
// but Get, an attribute off the allow-list, a modifier or destination out
// of range, a directed route longer than Limits::max_hops or one that
// passes a node twice (broker_routes.h), a MAD before OPEN, or one over the
// in-flight limits is refused
// (reply kRefused with the reason), counted by reason and logged, and never
// sent. An allowed one is built here (BuildMad) and posted on the port the
// connection OPENed; its answer, or a timeout, is sent back. The broker
// sends each MAD once: retries are the client's (each a new request).
// An empty datagram is counted (malformed) and logged, and the session goes
// on. A message may carry several requests; each is checked on its own, and
// the replies ready at one time go back together in as few messages as
// fit (broker_protocol.h), so a sweep costs a few datagrams per batch
// rather than two per MAD.
//
// Thread-safety: ServeBroker runs on one thread and owns everything it
// touches; the dependencies are called on that thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sources/mad/broker_protocol.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/umad_transport.h"

namespace fabric::mad::broker {

struct Limits {
  // Well above what the daemon's collectors ask for at their defaults (64
  // overall, 4 per destination: MadOptions), so only a client that ignores
  // its own limits meets these.
  int max_in_flight = 256;
  // Per destination NODE: a directed route is resolved to the node it ends
  // at (broker_routes.h), a LID-routed MAD counts per LID.
  int max_per_destination = 16;
  // Directed-route hops. IBA allows 63; a real fabric needs far fewer: the
  // longest shortest route of a 3-level fat tree or a dragonfly+ from a
  // host is 6 hops (host, leaf, spine, core, spine, leaf, host), and
  // discovery and the sweep only send shortest routes. 16 leaves room for
  // odd topologies; a longer route can only loop. --max-hops raises it.
  int max_hops = 16;
};

// The OS seams: the local ports and a umad port opener (real: LocalIbPorts
// and UmadTransport::Open).
struct Deps {
  std::function<std::vector<LocalPort>(std::string* error)> list_ports;
  std::function<std::unique_ptr<MadTransport>(const std::string& ca, int port,
                                              std::string* error)>
      open;
};

using RefusalCounts =
    std::array<std::uint64_t, static_cast<std::size_t>(Refusal::kCount)>;

// Serves `fd` until the client closes it (returns 0) or the socket fails
// (returns 1). `refused`, when given, receives the counts at the end.
int Serve(int fd, const Deps& deps, const Limits& limits,
          RefusalCounts* refused = nullptr);

}  // namespace fabric::mad::broker
