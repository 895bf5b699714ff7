#include "http/server.h"

#include <openssl/crypto.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <list>

#include "core/metric_sink.h"
#include "http/handler.h"
#include "http/listen_address.h"
#include "http/tls_context.h"

namespace fabric::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// bcrypt checks queued or running at once; more are refused (401) so that
// password guessing cannot queue unbounded work.
constexpr std::size_t kMaxPendingChecks = 8;

std::string_view Std(beast::string_view s) { return {s.data(), s.size()}; }

// What the server needs to know about a connection to apply its policy.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the socket: pending operations end with operation_aborted.
  virtual void Close() = 0;
  bool closing = false;
  // Waiting for a TLS handshake or a request head (evictable), since when.
  bool waiting = true;
  Clock::time_point waiting_since = Clock::now();
};

}  // namespace

struct Server::State : std::enable_shared_from_this<Server::State> {
  State(asio::io_context& io_context, Security sec,
        std::vector<std::shared_ptr<prometheus::Collectable>> c,
        std::shared_ptr<ServerMetrics> m, ServerLimits l)
      : io(io_context),
        acceptor(io_context),
        retry_timer(io_context),
        security(std::move(sec)),
        collectables(std::move(c)),
        metrics(std::move(m)),
        limits(l) {}

  void Accept();
  void OnAccepted(tcp::socket socket);
  bool MakeRoom();
  std::string Render() const;

  asio::io_context& io;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  Security security;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  std::shared_ptr<ServerMetrics> metrics;
  ServerLimits limits;
  std::list<Connection*> connections;
  bool stopped = false;
  // The Server's bcrypt thread; null once the Server is gone.
  asio::thread_pool* workers = nullptr;
  std::size_t pending_checks = 0;
};

namespace {

// One connection: [TLS handshake], then request -> response until the
// client or a limit ends it. Stream is beast::tcp_stream or
// beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
class Session : public Connection,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(std::shared_ptr<Server::State> state, tcp::socket socket)
      : state_(std::move(state)),
        tls_(state_->security.tls),
        auth_(state_->security.auth),
        stream_(MakeStream(std::move(socket), tls_.get())) {
    entry_ = state_->connections.insert(state_->connections.end(), this);
    state_->metrics->open_connections().Increment();
  }
  ~Session() override {
    state_->connections.erase(entry_);
    state_->metrics->open_connections().Decrement();
  }

  void Run() {
    if constexpr (kTls) {
      Lowest().expires_after(state_->limits.request_timeout);
      stream_.async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) {
            if (self->closing) return;
            if (ec) {
              // Plain HTTP to a TLS port ends here too: it is not served.
              self->state_->metrics->Reject("tls_handshake");
              self->Shutdown();
              return;
            }
            self->Read();
          });
    } else {
      Read();
    }
  }

  void Close() override {
    closing = true;
    Lowest().close();
  }

 private:
  static Stream MakeStream(tcp::socket socket, ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(beast::tcp_stream(std::move(socket)), *tls);
    } else {
      (void)tls;
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Read() {
    waiting = true;
    waiting_since = Clock::now();
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(state_->limits.max_header_bytes));
    Lowest().expires_after(state_->limits.request_timeout);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
          self->OnRead(ec);
        });
  }

  void OnRead(beast::error_code ec) {
    if (closing || ec == asio::error::operation_aborted) return;
    if (!ec) {
      waiting = false;
      Answer();
      return;
    }
    ServerMetrics& m = *state_->metrics;
    if (ec == bhttp::error::end_of_stream) {
      Shutdown();  // the client closed between requests
    } else if (ec == beast::error::timeout) {
      // Keep-alive that simply expired is not a rejection; a request or
      // handshake still unfinished (slowloris) is.
      if (served_ == 0 || parser_->got_some()) m.Reject("timeout");
      Shutdown();
    } else if (ec == bhttp::error::header_limit) {
      m.Reject("header_too_large");
      SendError(431, "Request Header Fields Too Large\n");
    } else if (ec == bhttp::error::partial_message) {
      m.Reject("truncated");
      SendError(400, "Bad Request: truncated\n");
    } else if (ec.category() ==
                   beast::error_code(bhttp::error::end_of_stream).category() ||
               ec == bhttp::error::unexpected_body) {
      m.Reject("bad_request");
      SendError(400, "Bad Request\n");
    } else {
      if (parser_->got_some()) m.Reject("truncated");
      Shutdown();
    }
  }

  // Basic auth first; a bcrypt check runs on the worker thread, never on
  // the event loop, and the answer resumes here.
  void Answer() {
    const auto& req = parser_->get();
    BasicAuth::Check check;
    switch (auth_->Precheck(Std(req[bhttp::field::authorization]), &check)) {
      case BasicAuth::Verdict::kAllow:
        Respond(true);
        return;
      case BasicAuth::Verdict::kDeny:
        Respond(false);
        return;
      case BasicAuth::Verdict::kCheck:
        break;
    }
    if (state_->workers == nullptr ||
        state_->pending_checks >= kMaxPendingChecks) {
      Respond(false);  // overloaded by password guesses: refuse, cheaply
      return;
    }
    ++state_->pending_checks;
    auto executor = Lowest().get_executor();
    asio::post(*state_->workers, [self = this->shared_from_this(), executor,
                                  check = std::move(check)]() mutable {
      const bool ok =
          CheckBcrypt(check.password, check.hash) && check.known_user;
      OPENSSL_cleanse(check.password.data(), check.password.size());
      asio::post(executor, [self, ok, key = check.key] {
        --self->state_->pending_checks;
        if (self->closing) return;
        if (ok) self->auth_->Remember(key);
        self->Respond(ok);
      });
    });
  }

  void Respond(bool authorized) {
    const auto& req = parser_->get();
    const bool head = req.method() == bhttp::verb::head;
    Reply reply;
    try {
      reply = HandleRequest(Request{req.method(), Std(req.target()),
                                    Std(req[bhttp::field::authorization]),
                                    Std(req[bhttp::field::accept_encoding])},
                            authorized, [this] { return state_->Render(); });
    } catch (const std::exception&) {
      reply = Reply{};
      reply.status = 500;
      reply.content_type = "text/plain; charset=utf-8";
      reply.body = "Internal Server Error\n";
    }
    if (!reply.rejected.empty()) state_->metrics->Reject(reply.rejected);
    ++served_;
    const bool keep_alive = req.keep_alive();
    auto fill = [&](auto& res) {
      res.result(reply.status);
      res.version(req.version());
      res.set(bhttp::field::content_type, reply.content_type);
      if (reply.gzip) res.set(bhttp::field::content_encoding, "gzip");
      for (const auto& [name, value] : reply.headers) res.set(name, value);
      res.keep_alive(keep_alive);
    };
    if (head) {
      bhttp::response<bhttp::empty_body> res;
      fill(res);
      res.content_length(reply.body.size());
      Send(std::move(res), !keep_alive);
    } else {
      bhttp::response<bhttp::string_body> res;
      fill(res);
      res.body() = std::move(reply.body);
      res.prepare_payload();
      Send(std::move(res), !keep_alive);
    }
  }

  void SendError(unsigned status, const char* text) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                            11};
    res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
    res.body() = text;
    res.keep_alive(false);
    res.prepare_payload();
    Send(std::move(res), true);
  }

  template <class Body>
  void Send(bhttp::response<Body>&& res, bool close_after) {
    auto held = std::make_shared<bhttp::response<Body>>(std::move(res));
    response_ = held;
    Lowest().expires_after(state_->limits.write_timeout);
    bhttp::async_write(stream_, *held,
                       [self = this->shared_from_this(), close_after](
                           beast::error_code ec, std::size_t) {
                         self->response_.reset();
                         if (self->closing) return;
                         if (ec || close_after) {
                           self->Shutdown();
                           return;
                         }
                         self->Read();
                       });
  }

  // Ends the connection from our side; the session is freed when its last
  // handler returns.
  void Shutdown() {
    closing = true;
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().close();
  }

  std::shared_ptr<Server::State> state_;
  std::shared_ptr<ssl::context> tls_;  // outlives stream_
  std::shared_ptr<BasicAuth> auth_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::empty_body>> parser_;
  std::shared_ptr<void> response_;
  std::size_t served_ = 0;
  std::list<Connection*>::iterator entry_;
};

}  // namespace

void Server::State::Accept() {
  acceptor.async_accept(
      [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
        if (self->stopped) return;
        if (ec) {
          if (ec == asio::error::operation_aborted) return;
          // Out of descriptors or similar: retry shortly instead of spinning.
          self->retry_timer.expires_after(std::chrono::milliseconds(100));
          self->retry_timer.async_wait([self](beast::error_code wait_ec) {
            if (!wait_ec && !self->stopped) self->Accept();
          });
          return;
        }
        self->OnAccepted(std::move(socket));
        self->Accept();
      });
}

void Server::State::OnAccepted(tcp::socket socket) {
  if (!MakeRoom()) {
    metrics->Reject("connection_limit");
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  if (security.tls) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
        shared_from_this(), std::move(socket))
        ->Run();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(shared_from_this(),
                                                 std::move(socket))
        ->Run();
  }
}

bool Server::State::MakeRoom() {
  std::size_t open = 0;
  Connection* oldest = nullptr;
  for (Connection* c : connections) {
    if (c->closing) continue;
    ++open;
    if (c->waiting && (!oldest || c->waiting_since < oldest->waiting_since)) {
      oldest = c;
    }
  }
  if (open < limits.max_connections) return true;
  if (!oldest) return false;
  metrics->Reject("evicted");
  oldest->Close();
  return true;
}

std::string Server::State::Render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables) {
    auto more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  auto own = metrics->registry()->Collect();
  families.insert(families.end(), std::make_move_iterator(own.begin()),
                  std::make_move_iterator(own.end()));
  SortFamilies(families);
  return ToText(families);
}

const std::vector<std::string>& ServerMetrics::Reasons() {
  static const std::vector<std::string> kReasons = {
      "bad_request",        "connection_limit", "evicted", "header_too_large",
      "method_not_allowed", "not_found",        "timeout", "tls_handshake",
      "truncated",          "unauthorized"};
  return kReasons;
}

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& rejected =
      prometheus::BuildCounter()
          .Name("fabric_http_requests_rejected_total")
          .Help(
              "Requests and connections the /metrics server refused or "
              "closed, by reason (see docs/metrics.md).")
          .Register(*registry_);
  for (const auto& reason : Reasons()) {
    rejected_[reason] = &rejected.Add({{"reason", reason}});
  }
  open_ = &prometheus::BuildGauge()
               .Name("fabric_http_connections")
               .Help("Open connections to the /metrics server.")
               .Register(*registry_)
               .Add({});
}

void ServerMetrics::Reject(const std::string& reason) {
  auto it = rejected_.find(reason);
  if (it != rejected_.end()) it->second->Increment();
}

std::optional<Security> MakeSecurity(const WebConfig& web, std::string* error) {
  Security security;
  if (web.tls) {
    security.tls = MakeTlsContext(*web.tls, error);
    if (!security.tls) return std::nullopt;
  }
  security.auth = std::make_shared<BasicAuth>(web.users);
  return security;
}

std::optional<Security> LoadSecurity(const std::string& path,
                                     std::string* error) {
  if (path.empty()) return MakeSecurity(WebConfig{}, error);
  auto web = LoadWebConfigFile(path, error);
  if (!web) return std::nullopt;
  auto security = MakeSecurity(*web, error);
  if (!security) *error += " (in " + path + ")";
  return security;
}

std::string Describe(const Security& security) {
  const bool auth = security.auth && security.auth->enabled();
  if (security.tls) return auth ? "TLS, basic auth" : "TLS";
  return auth ? "plain HTTP, basic auth" : "plain HTTP";
}

Server::Server(std::shared_ptr<State> state)
    : state_(std::move(state)),
      workers_(std::make_unique<asio::thread_pool>(1)) {
  state_->workers = workers_.get();
}

std::unique_ptr<Server> Server::Start(
    asio::io_context& io, const std::string& listen_address, Security security,
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
    std::shared_ptr<ServerMetrics> metrics, std::string* error,
    ServerLimits limits) {
  auto endpoint = ResolveListenAddress(listen_address, error);
  if (!endpoint) return nullptr;
  if (!security.auth)
    security.auth =
        std::make_shared<BasicAuth>(std::map<std::string, std::string>{});
  if (!metrics) metrics = std::make_shared<ServerMetrics>();
  auto state =
      std::make_shared<State>(io, std::move(security), std::move(collectables),
                              std::move(metrics), limits);
  beast::error_code ec;
  auto fail = [&](const char* step) {
    *error = "cannot listen on " + listen_address + ": " + step + ": " +
             ec.message();
    return nullptr;
  };
  state->acceptor.open(endpoint->protocol(), ec);
  if (ec) return fail("socket");
  // A restart must not wait for the old connections' TIME_WAIT; Linux still
  // refuses a port another socket listens on.
  state->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  state->acceptor.bind(*endpoint, ec);
  if (ec) return fail("bind");
  state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  state->Accept();
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

Server::~Server() {
  state_->stopped = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
  state_->retry_timer.cancel();
  for (Connection* c : state_->connections) {
    if (!c->closing) c->Close();
  }
  // A running check finishes (its answer is dropped: the connection is
  // closed); queued ones are discarded.
  workers_->stop();
  workers_->join();
  state_->workers = nullptr;
}

void Server::Reconfigure(Security security) {
  if (!security.auth) {
    security.auth =
        std::make_shared<BasicAuth>(std::map<std::string, std::string>{});
  }
  state_->security = std::move(security);
}

int Server::port() const {
  beast::error_code ec;
  auto endpoint = state_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

std::string Server::BoundAddress() const {
  beast::error_code ec;
  auto endpoint = state_->acceptor.local_endpoint(ec);
  return ec ? std::string() : FormatEndpoint(endpoint);
}

}  // namespace fabric::http
