#include "http/server.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <functional>
#include <list>
#include <optional>

#include "core/metric_sink.h"
#include "http/admission.h"
#include "http/gzip.h"
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
using State = Server::State;

namespace {

// bcrypt checks waiting for the worker thread at once (CheckQueue,
// basic_auth.h); beyond, the least urgent is refused (401), so password
// guessing cannot queue unbounded work.
constexpr std::size_t kMaxQueuedChecks = 8;

std::string_view Std(beast::string_view s) { return {s.data(), s.size()}; }

// The address connections and password checks are limited by: an IPv4
// address, or an IPv6 /64 (one host's usual share, and all of it is any
// one attacker's). "" if the peer is already gone.
std::string SourceOf(const tcp::socket& socket) {
  beast::error_code ec;
  auto address = socket.remote_endpoint(ec).address();
  if (ec) return {};
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6())
        .to_string();
  }
  if (address.is_v4()) return address.to_string();
  auto bytes = address.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return asio::ip::address_v6(bytes).to_string() + "/64";
}

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
  bool MakeRoom(const std::string& source);
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
  // The Server's bcrypt thread and renderer; null once the Server is gone.
  asio::thread_pool* workers = nullptr;
  RenderWorker* renderer = nullptr;
  AuthThrottle throttle{limits.auth};
  SourceRate handshakes{limits.tls_handshakes_per_second,
                        limits.tls_handshake_burst};
  // Password checks: queued ones by id, run one at a time on `workers`.
  // Each callback starts its check (true) or refuses it (false).
  CheckQueue check_queue{kMaxQueuedChecks};
  std::map<std::uint64_t, std::function<void(bool)>> queued_checks;
  std::uint64_t next_check_id = 0;
  bool check_running = false;
  // Queues a check from `source` (already admitted by throttle.TryStart);
  // `run(true)` starts it, `run(false)` refuses it.
  void QueueCheck(const std::string& source, std::function<void(bool)> run);
  // The previous check has ended: start the next queued one.
  void NextCheck();
};

void Server::State::QueueCheck(const std::string& source,
                               std::function<void(bool)> run) {
  const std::uint64_t id = next_check_id++;
  std::optional<std::uint64_t> displaced;
  if (!check_queue.Push(id, throttle.RankOf(source), &displaced)) {
    run(false);
    return;
  }
  queued_checks.emplace(id, std::move(run));
  if (displaced) {
    auto it = queued_checks.find(*displaced);
    auto refuse = std::move(it->second);
    queued_checks.erase(it);
    refuse(false);
  }
  if (!check_running) NextCheck();
}

void Server::State::NextCheck() {
  check_running = false;
  if (workers == nullptr) return;
  if (auto id = check_queue.Pop()) {
    auto it = queued_checks.find(*id);
    auto start = std::move(it->second);
    queued_checks.erase(it);
    check_running = true;
    start(true);
  }
}

namespace {

// One connection: [TLS handshake], then request -> response until the
// client or a limit ends it. Stream is beast::tcp_stream or
// beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
class Session : public Connection,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(std::shared_ptr<Server::State> state, tcp::socket socket,
          std::string from)
      : state_(std::move(state)),
        tls_(state_->security.tls),
        auth_(state_->security.auth),
        stream_(MakeStream(std::move(socket), tls_.get())) {
    source = std::move(from);
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
    if (buffer_.size() == 0) {
      // The client has read every answer before asking again.
      writing_since.reset();
      pipelined_ = 0;
    } else if (++pipelined_ > state_->limits.max_pipelined_requests) {
      state_->metrics->Reject("pipeline_limit");
      Shutdown();
      return;
    }
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
      if (FramingRefused()) return;
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

  // RFC 9112 section 6.3 (FramingError, handler.h): 400 and close, so that
  // a body whose end is unknown is never read as the next request.
  bool FramingRefused() {
    const auto& req = parser_->get();
    std::vector<std::string_view> codings;
    auto [begin, end] = req.equal_range(bhttp::field::transfer_encoding);
    for (auto it = begin; it != end; ++it) codings.push_back(Std(it->value()));
    const std::string why = FramingError(
        codings, req.find(bhttp::field::content_length) != req.end());
    if (why.empty()) return false;
    state_->metrics->Reject("bad_request");
    SendError(400, ("Bad Request: " + why + "\n").c_str());
    return true;
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
    // Password guessing gets cheap refusals: a source with too many checks
    // in flight or that keeps failing, and a check that loses its place in
    // the queue to a more urgent one (basic_auth.h).
    if (state_->workers == nullptr ||
        !state_->throttle.TryStart(source, Clock::now())) {
      Respond(false);
      return;
    }
    state_->QueueCheck(source, [self = this->shared_from_this(),
                                check = std::move(check)](bool start) mutable {
      if (!start || self->closing) {
        OPENSSL_cleanse(check.password.data(), check.password.size());
        self->state_->throttle.Drop(self->source);
        if (start) {
          self->state_->NextCheck();  // gone meanwhile: not worth a check
        } else if (!self->closing) {
          self->Respond(false);
        }
        return;
      }
      self->RunCheck(std::move(check));
    });
  }

  // On the worker thread; the answer resumes on the event loop.
  void RunCheck(BasicAuth::Check check) {
    auto executor = Lowest().get_executor();
    asio::post(*state_->workers, [self = this->shared_from_this(), executor,
                                  check = std::move(check)]() mutable {
      const bool ok =
          CheckBcrypt(check.password, check.hash) && check.known_user;
      OPENSSL_cleanse(check.password.data(), check.password.size());
      // `self` moves to the event loop: the session is never freed here.
      asio::post(executor, [self = std::move(self), ok, key = check.key,
                            user = std::move(check.user)] {
        State& state = *self->state_;
        state.throttle.Finish(self->source, ok, Clock::now());
        state.NextCheck();
        if (self->closing) return;
        if (ok) self->auth_->Remember(key, user);
        self->Respond(ok);
      });
    });
  }

  // The exposition is rendered and gzipped on the render thread; the
  // answer resumes here.
  void Respond(bool authorized) {
    const auto& req = parser_->get();
    Reply reply = Route(Request{req.method(), Std(req.target()),
                                Std(req[bhttp::field::authorization]),
                                Std(req[bhttp::field::accept_encoding])},
                        authorized);
    if (!reply.rejected.empty()) state_->metrics->Reject(reply.rejected);
    if (!reply.metrics) {
      auto text = std::make_shared<const std::string>(std::move(reply.body));
      Deliver(reply, text, *text);
      return;
    }
    const bool gzip = AcceptsGzip(Std(req[bhttp::field::accept_encoding]));
    state_->renderer->Request(
        gzip, [self = this->shared_from_this(), reply = std::move(reply),
               gzip](std::shared_ptr<const Rendered> out) mutable {
          if (self->closing) return;
          if (out->failed) {
            reply.status = 500;
            reply.content_type = "text/plain; charset=utf-8";
            auto text =
                std::make_shared<const std::string>("Internal Server Error\n");
            self->Deliver(reply, text, *text);
          } else if (gzip && out->gzip) {
            reply.gzip = true;
            self->Deliver(reply, out, *out->gzip);
          } else {
            self->Deliver(reply, out, out->text);
          }
        });
  }

  // Writes `reply` with `body`, which `owner` keeps alive (a rendered
  // exposition is shared by the requests that asked for it, not copied).
  void Deliver(const Reply& reply, std::shared_ptr<const void> owner,
               std::string_view body) {
    const auto& req = parser_->get();
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
    if (req.method() == bhttp::verb::head) {
      bhttp::response<bhttp::empty_body> res;
      fill(res);
      res.content_length(body.size());
      Send(std::move(res), !keep_alive);
    } else {
      bhttp::response<bhttp::span_body<const char>> res;
      fill(res);
      res.body() = {body.data(), body.size()};
      res.prepare_payload();
      body_ = std::move(owner);
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

  // The run's writes share one `write_timeout` (see server.h), so a slow
  // reader cannot stretch it by pipelining.
  template <class Body>
  void Send(bhttp::response<Body>&& res, bool close_after) {
    const auto now = Clock::now();
    if (!writing_since) writing_since = now;
    const auto left = state_->limits.write_timeout - (now - *writing_since);
    if (left <= Clock::duration::zero()) {
      state_->metrics->Reject("write_timeout");
      Shutdown();
      return;
    }
    auto held = std::make_shared<bhttp::response<Body>>(std::move(res));
    response_ = held;
    Lowest().expires_after(left);
    bhttp::async_write(stream_, *held,
                       [self = this->shared_from_this(), close_after](
                           beast::error_code ec, std::size_t) {
                         self->response_.reset();
                         self->body_.reset();
                         if (self->closing) return;
                         if (ec == beast::error::timeout) {
                           self->state_->metrics->Reject("write_timeout");
                         }
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
  std::shared_ptr<const void> body_;  // what response_'s body points into
  std::size_t served_ = 0;
  std::size_t pipelined_ = 0;  // requests in a row found already sent
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
  std::string source = SourceOf(socket);
  // A TLS handshake costs the event loop a key exchange and a signature:
  // each source gets a bounded rate of them (admission.h).
  if (security.tls && !handshakes.Take(source, Clock::now())) {
    metrics->Reject("source_limit");
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  if (!MakeRoom(source)) {
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (security.tls) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
        shared_from_this(), std::move(socket), std::move(source))
        ->Run();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(
        shared_from_this(), std::move(socket), std::move(source))
        ->Run();
  }
}

bool Server::State::MakeRoom(const std::string& source) {
  const Admission admission = Admit(connections, source, limits.max_connections,
                                    limits.max_connections_per_source);
  if (!admission.admit) {
    metrics->Reject(admission.refused);
    return false;
  }
  if (admission.victim) {
    metrics->Reject("evicted");
    admission.victim->Close();
  }
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
      "bad_request",      "connection_limit",   "evicted",
      "header_too_large", "method_not_allowed", "not_found",
      "pipeline_limit",   "source_limit",       "timeout",
      "tls_handshake",    "truncated",          "unauthorized",
      "write_timeout"};
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
  security.level = LevelOf(web);
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
      workers_(std::make_unique<asio::thread_pool>(1)),
      // The State outlives the renderer (~Server joins it first).
      renderer_(std::make_unique<RenderWorker>(
          state_->io.get_executor(),
          [state = state_.get()] { return state->Render(); })) {
  state_->workers = workers_.get();
  state_->renderer = renderer_.get();
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
  // Queued checks hold their sessions, which hold the State.
  state_->queued_checks.clear();
  renderer_.reset();
  state_->renderer = nullptr;
}

void Server::Reconfigure(Security security) {
  if (!security.auth) {
    security.auth =
        std::make_shared<BasicAuth>(std::map<std::string, std::string>{});
  }
  if (security.auth != state_->security.auth) {
    security.auth->KeepVerified(*state_->security.auth);
  }
  state_->security = std::move(security);
}

void Server::CheckRender(std::chrono::milliseconds recent,
                         std::function<void(bool)> done) {
  if (renderer_->last_done() != Clock::time_point{} &&
      Clock::now() - renderer_->last_done() < recent) {
    asio::post(state_->io, [done = std::move(done)] { done(true); });
    return;
  }
  renderer_->Request(
      false, [done = std::move(done)](std::shared_ptr<const Rendered> out) {
        done(!out->failed);
      });
}

const Security& Server::security() const { return state_->security; }

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
