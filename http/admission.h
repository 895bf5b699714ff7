// Who gets a connection slot on the /metrics server, apart from sockets, so
// that the share rule is a pure function tested on its own
// (docs/security.md, "Honest scrapers under load").
//
// The rule, with M = max_connections and P = max_connections_per_source:
//  1. A source at its P: one of its own connections makes room (the one
//     waiting longest for a request, else the one writing longest), never
//     another source's; if all of its are being answered, the newcomer is
//     refused (`source_limit`).
//  2. Below M open connections: admitted.
//  3. All M slots taken: the source holding the most connections gives one
//     up if it holds at least two more than the newcomer's source (its
//     longest waiting, else longest writing, else its newest connection,
//     even one being answered). So among S sources each can always hold
//     floor(M / S) connections (one each for up to M sources), however fast
//     the others reconnect: 64 clients re-scraping at full speed from other
//     addresses cannot keep an honest scraper out.
//  4. Otherwise (the sources are already even), among the sources holding
//     at least as many connections as the newcomer's (its own included),
//     the connection waiting longest (a slowloris, an idle keep-alive, a
//     slow handshake), else writing longest, makes room (`evicted`); if
//     there is none, the newcomer is refused (`connection_limit`). A source
//     never loses a connection to one already holding more than it does.
//
// SourceRate is a token bucket per source: the server spends one token per
// TLS connection before its handshake, whose key exchange and signature run
// on the event loop, so a ClientHello flood from one address is closed at
// accept (`source_limit`) instead of taking the loop's time from scrapes.
//
// Thread-safety: pure functions; SourceRate is not thread-safe (the server
// uses it from its event loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <optional>
#include <string>

namespace fabric::http {

using AdmissionClock = std::chrono::steady_clock;

// What the admission rule needs to know about an open connection.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the socket: pending operations end with operation_aborted.
  virtual void Close() = 0;
  bool closing = false;
  std::string source;  // an IPv4 address or an IPv6 /64
  // Waiting for a TLS handshake or a request head (evictable), since when.
  bool waiting = true;
  AdmissionClock::time_point waiting_since = AdmissionClock::now();
  // Set while in a run of responses the client has not caught up with
  // (evictable when not waiting): when its first write began.
  std::optional<AdmissionClock::time_point> writing_since;
  // When it was accepted (rule 3 takes a source's newest first).
  AdmissionClock::time_point accepted = AdmissionClock::now();
};

struct Admission {
  bool admit = false;
  Connection* victim = nullptr;   // to close first (admit is then true)
  const char* refused = nullptr;  // the rejected-total reason when !admit
};

// The rule above for a newcomer from `source`.
Admission Admit(const std::list<Connection*>& connections,
                const std::string& source, std::size_t max_connections,
                std::size_t max_per_source);

class SourceRate {
 public:
  using Clock = AdmissionClock;
  // `per_second` tokens a second per source, up to `burst`; at most
  // `max_sources` remembered (full buckets are forgotten first; beyond,
  // a new source is refused).
  SourceRate(double per_second, double burst, std::size_t max_sources = 4096)
      : per_second_(per_second), burst_(burst), max_sources_(max_sources) {}
  // Spends a token of `source`; false when it has none.
  bool Take(const std::string& source, Clock::time_point now);

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };
  double Refilled(const Bucket& b, Clock::time_point now) const;
  double per_second_;
  double burst_;
  std::size_t max_sources_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace fabric::http
