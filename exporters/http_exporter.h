// HttpExporter: serves a Collectable at /metrics with prometheus-cpp's pull
// Exposer (civetweb). Owns the listener; replacing the listen address means
// building a new HttpExporter (the daemon does that on reload).
//
// Thread-safety: construct and destroy on one thread; the Exposer's own
// threads call the collectable concurrently with everything else.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <memory>
#include <optional>
#include <string>

namespace fabric {

// ":10915" -> "0.0.0.0:10915"; "[::1]:80" and "host:port" unchanged.
// civetweb needs an explicit host for IPv4 "any".
std::string CivetAddress(const std::string& listen_address);

class HttpExporter {
 public:
  // Binds `listen_address` and serves `collectable` at /metrics. Returns
  // nullptr with *error set when the address cannot be bound.
  static std::unique_ptr<HttpExporter> Start(
      const std::string& listen_address,
      std::shared_ptr<prometheus::Collectable> collectable, std::string* error);

  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  const std::string& listen_address() const { return listen_address_; }
  // The bound port (useful with port 0), or 0 when unknown.
  int port() const;
  // "HOST:PORT" with the bound port, for the startup log line.
  std::string BoundAddress() const;

 private:
  HttpExporter() = default;
  std::string listen_address_;
  std::string civet_address_;
  std::shared_ptr<prometheus::Collectable> collectable_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace fabric
