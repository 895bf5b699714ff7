// The /metrics server: Boost.Beast HTTP/1.1 on the caller's io_context,
// optionally TLS (Boost.Asio SSL over OpenSSL) and basic auth from a web
// config (web_config.h). Each /metrics response renders the collectables
// with prometheus-cpp's TextSerializer, gzipped when the client accepts it;
// both run on a worker thread (render_worker.h), so a big exposition never
// delays other work on the event loop. Accepted sockets get TCP_NODELAY:
// without it a TLS response's last record waits for the client's delayed
// ACK (~40 ms).
//
// Limits, so that bad or hostile clients cannot stop scrapes:
//  - at most `max_connections` open connections, and at most
//    `max_connections_per_source` from one source (an IPv4 address or an
//    IPv6 /64). When a new connection needs a slot (in its source's share
//    or overall), the server closes the connection that has waited longest
//    for its request (idle keep-alive, a slow TLS handshake, a slowloris
//    sender), or if none waits, the one that has been writing longest (a
//    slow or pipelining reader); within its source's share only that
//    source's connections are candidates, so a flood from one address
//    only displaces itself. A connection whose request is being checked or
//    rendered (with no earlier answer still unread) is never closed; if
//    every candidate is such, the newcomer is closed unanswered. A real scrape
//    sends its request right after connecting and reads its answer at once, so
//    it is answered before it could become the oldest.
//  - a connection must complete its TLS handshake and each request's head
//    within `request_timeout` (idle keep-alive time included), else it is
//    closed; request heads larger than `max_header_bytes` get 431; a
//    request with a body, or malformed, gets 400.
//  - a run of responses the client has not caught up with (one response,
//    or pipelined ones: the next request already sent) is written within
//    `write_timeout` in total, and runs past `max_pipelined_requests`
//    requests end the connection.
// Everything refused is counted in fabric_http_requests_rejected_total.
// bcrypt (basic auth) runs on one worker thread, never on the event loop;
// each source gets at most a couple of checks in flight and a back-off when
// it keeps failing (AuthThrottle, basic_auth.h), and with 8 checks queued
// in all, further unverified credentials get 401 at once.
//
// Thread-safety: create, use and destroy a Server on the thread that runs
// its io_context (the daemon's one event-loop thread). The collectables'
// Collect() is called on the render thread. Destroying the Server closes
// the listener and every connection and waits for a running render or
// bcrypt check; in-flight handlers finish safely.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "http/basic_auth.h"
#include "http/render_worker.h"
#include "http/web_config.h"

namespace fabric::http {

struct ServerLimits {
  std::size_t max_connections = 64;
  std::size_t max_connections_per_source = 16;
  std::size_t max_header_bytes = 8 * 1024;
  std::size_t max_pipelined_requests = 16;
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds write_timeout{30'000};
  AuthThrottle::Limits auth;
};

// The server's own metrics, kept across listeners (a reload to a new listen
// address keeps the counts). Thread-safe (prometheus-cpp metrics).
class ServerMetrics {
 public:
  // Every `reason` label value, all exported from the start at 0.
  static const std::vector<std::string>& Reasons();
  ServerMetrics();
  void Reject(const std::string& reason);
  prometheus::Gauge& open_connections() { return *open_; }
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::map<std::string, prometheus::Counter*> rejected_;
  prometheus::Gauge* open_ = nullptr;
};

// A web config made ready to serve: the TLS context loaded from its files
// and the users' hashes.
struct Security {
  std::shared_ptr<boost::asio::ssl::context> tls;  // null = plain HTTP
  std::shared_ptr<BasicAuth> auth;
};

// nullopt with *error when a TLS file cannot be loaded.
std::optional<Security> MakeSecurity(const WebConfig& web, std::string* error);

// The web config file at `path` (LoadWebConfigFile) made ready to serve; an
// empty path means plain HTTP without auth.
std::optional<Security> LoadSecurity(const std::string& path,
                                     std::string* error);

// "TLS, basic auth" / "TLS" / "basic auth" / "plain HTTP", for log lines.
std::string Describe(const Security& security);

class Server {
 public:
  // Binds `listen_address` and serves the collectables (their families
  // merged and sorted by name) plus `metrics`. nullptr with *error when the
  // address is invalid or cannot be bound.
  static std::unique_ptr<Server> Start(
      boost::asio::io_context& io, const std::string& listen_address,
      Security security,
      std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
      std::shared_ptr<ServerMetrics> metrics, std::string* error,
      ServerLimits limits = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // TLS and auth for connections accepted from now on (open connections
  // keep the settings they were accepted with). Credentials verified
  // before stay verified while their user's hash is unchanged.
  void Reconfigure(Security security);

  int port() const;
  // "HOST:PORT" with the bound port, for the startup log line.
  std::string BoundAddress() const;

  struct State;  // shared with the connections (server.cc)

 private:
  explicit Server(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
  // One thread for bcrypt checks (basic_auth.h), off the event loop.
  std::unique_ptr<boost::asio::thread_pool> workers_;
  std::unique_ptr<RenderWorker> renderer_;
};

}  // namespace fabric::http
