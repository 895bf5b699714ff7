// A tiny HTTP server on 127.0.0.1:0 for tests of HTTP clients facing bad
// servers (fabricmon-locate's Prometheus): each request's target goes to a
// handler that returns what to send back — a status and body, raw bytes
// that are not HTTP at all, or nothing (the connection is held open
// unanswered until the server stops, so the client's timeout fires).
// Requests are read with Boost.Beast.
//
// Thread-safety: the server runs one thread of its own, one connection at a
// time; the handler runs on it. Construct and destroy from one thread.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace fabric::testing {

struct FakeHttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body = "";
  std::string www_authenticate = "";  // set: a WWW-Authenticate header
  bool raw = false;                   // body sent as is, no HTTP around it
};

class FakeHttpServer {
 public:
  // nullopt from the handler: never answer that request.
  using Handler =
      std::function<std::optional<FakeHttpAnswer>(const std::string& target)>;
  explicit FakeHttpServer(Handler handler);
  // A handler that also sees the request body (a webhook receiver).
  using BodyHandler = std::function<std::optional<FakeHttpAnswer>(
      const std::string& target, const std::string& body)>;
  explicit FakeHttpServer(BodyHandler handler);
  ~FakeHttpServer();  // stops: closes the listener and held connections
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void Serve();

  BodyHandler handler_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace fabric::testing
