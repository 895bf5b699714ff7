// SelfCheck: asks the daemon's own /metrics server, through its real
// listening socket, whether it still accepts and answers, so that the
// systemd watchdog is fed only while scrapes could be served (daemon.cc).
// Descriptors exhausted (our socket() fails, the server cannot accept), a
// listener that is gone (refused) and a server that accepts but never
// answers (timeout) all fail the check.
//
// The request is `GET /` without credentials: the landing page, which
// renders nothing, so a large exposition cannot make the check slow. With
// basic auth the server answers 401 instead and with TLS that requires a
// client certificate it refuses the handshake with an alert; either still
// proves that the server accepted the connection and ran the request (or
// handshake) on its event loop, which is what the check is for. (The server
// counts those answers in fabric_http_requests_rejected_total, once per
// check.) TLS is spoken without verifying the certificate: the check
// authenticates nothing, it only needs an answer.
//
// RunScrapeCheck, the systemd watchdog's check (self_check_watchdog.h),
// adds what the landing page skips: a render of the exposition on the
// server's render thread, the path every scrape takes (shared with the
// scrapes waiting for a render, and skipped when a scrape's render finished
// since the previous check, so it costs at most one render per check and
// none while Prometheus scrapes often). A wedged render thread (a
// collectable stuck in Collect) never answers it.
//
// Thread-safety: run it on the thread that runs `io` (the daemon's event
// loop); `done` is called there, exactly once.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace fabric {
namespace http {
class Server;
}

struct SelfCheckResult {
  bool answered = false;
  // The mode the server answered in (after a reload that switched TLS on
  // or off, the other one than asked for); start the next check with it.
  bool tls = false;
  std::string why;  // when not answered
};

// Checks the server listening on `endpoint`, speaking TLS first if `tls`;
// if the server turns out to speak the other (it closes a plain request
// unanswered, or answers a TLS handshake with plain HTTP), that one is
// tried next, within the same `timeout`.
void RunSelfCheck(boost::asio::io_context& io,
                  const boost::asio::ip::tcp::endpoint& endpoint, bool tls,
                  std::chrono::milliseconds timeout,
                  std::function<void(SelfCheckResult)> done);

// RunSelfCheck on `server`'s listener and server.CheckRender (a scrape's
// render within `recent` counts), both within `timeout` (a timer ends the
// wait; `server` is not used after this call returns, so a reload may
// replace it meanwhile). Answered when both are; otherwise `why` names the
// part that failed.
void RunScrapeCheck(boost::asio::io_context& io, http::Server& server, bool tls,
                    std::chrono::milliseconds timeout,
                    std::chrono::milliseconds recent,
                    std::function<void(SelfCheckResult)> done);

// Where to reach a server bound to `bound` ("HOST:PORT", "[V6]:PORT", as
// http::Server::BoundAddress() prints it): that address, or loopback for a
// wildcard bind. nullopt when `bound` does not parse (no listener).
std::optional<boost::asio::ip::tcp::endpoint> SelfCheckEndpoint(
    const std::string& bound);

}  // namespace fabric
