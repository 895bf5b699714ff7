// BenchAgent: one host's side of fabricmon-bench. It listens for a
// coordinator on TCP (Boost.Asio, on the io_context it is given: the daemon's
// in the bench_agent collector, a private one in `fabricmon-bench agent`),
// authenticates every control frame (wire.h), and for an accepted session
// builds a BulkTransport, connects it to the other ranks and runs the
// pattern's operations, timing each and reading the host's fabric counters
// around it. Refused frames are counted by reason and the connection closed.
// One session at a time: a second coordinator is refused ("busy") so two runs
// never load the fabric at once and skew each other.
//
// Thread-safety: Start/Stop and the socket handlers run on the io_context
// thread; the blocking work of a request (connect, run) runs on a worker
// thread per request, which posts its reply back to the io_context. Stats()
// and Listening() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "auth/key_file.h"
#include "benchtool/fabric_guard.h"
#include "benchtool/transport.h"

namespace boost::asio {
class io_context;
}

namespace fabric::bench {

// Fabric counters of this host by name (cumulative); absent = not provided.
using CounterReading = std::vector<std::pair<std::string, std::uint64_t>>;
using CounterSource = std::function<CounterReading()>;

// Makes the transport a Prepare asks for ("tcp", "rdma"); null with the
// reason in `why` when not available here. `bind_address` is the local
// address of the control connection, where the bulk listener belongs (RDMA:
// the port whose GID is that address).
using TransportFactory = std::function<std::unique_ptr<BulkTransport>(
    const std::string& name, const std::string& bind_address,
    std::string* why)>;
TransportFactory DefaultTransportFactory();

struct AgentOptions {
  std::string listen_address = ":10916";  // host:port; ":port" = any
  Key key;
  TransportFactory transports = DefaultTransportFactory();
  CounterSource counters;  // null = no counters
  RailSource rails;        // null = no rails reported (fabric_guard.h)
};

struct AgentStats {
  bool listening = false;
  std::uint64_t sessions = 0;
  std::map<std::string, std::uint64_t> refused;  // reason -> count
  std::uint64_t transmit_bytes = 0, receive_bytes = 0;
};

class BenchAgent {
 public:
  BenchAgent(boost::asio::io_context& io, AgentOptions options);
  ~BenchAgent();
  // Opens the listener; false with the reason in `error`. On the io thread.
  bool Start(std::string* error);
  // Closes the listener and every connection, aborts a running session and
  // waits (bounded) for its worker. On the io thread, or any thread once the
  // io_context has stopped.
  void Stop();
  // The bound port (after Start), for listen addresses with port 0.
  std::uint16_t port() const;
  AgentStats Stats() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fabric::bench
