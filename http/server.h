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
//    IPv6 /64); who gets a slot when they are taken is the share rule in
//    admission.h: a flood from one address only displaces itself, and when
//    the server is full the source holding the most gives up a slot to one
//    holding fewer, so every source keeps its even share. A real scrape
//    sends its request right after connecting and reads its answer at once.
//  - TLS connections from one source beyond `tls_handshakes_per_second`
//    (burst `tls_handshake_burst`) are closed before their handshake.
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
#include <functional>
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
  // TLS connections a second from one source, and the burst allowed
  // (SourceRate, admission.h); more are closed before their handshake.
  double tls_handshakes_per_second = 20;
  double tls_handshake_burst = 50;
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
  // What the web config asked for (Downgrade, web_config.h, compares a
  // reload's with the running one's).
  SecurityLevel level;
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

  // Renders the exposition the way a scrape does (on the render thread,
  // shared with scrapes waiting for a render) and calls `done(ok)` on the
  // event loop, `ok` false when rendering threw. A render that finished
  // within `recent` (a scrape's) counts instead, so the check costs no
  // render of its own while scrapes come often. Never called while the
  // render thread is wedged, nor once the Server is gone. For the watchdog's
  // self-check (daemon/self_check.h).
  void CheckRender(std::chrono::milliseconds recent,
                   std::function<void(bool ok)> done);

  // The settings new connections are accepted with.
  const Security& security() const;

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
