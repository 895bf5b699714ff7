#include "daemon/self_check.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>

#include "http/server.h"

namespace fabric {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

enum class Outcome { kAnswered, kOtherMode, kFailed };

// A TLS alert from the server: it ran our handshake and refused it (no
// client certificate where one is required).
bool IsAlert(const beast::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) >
             SSL_AD_REASON_OFFSET;
}

// One connection in one mode (plain or TLS), bounded by `deadline`.
class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  using Done = std::function<void(Outcome, std::string)>;
  Attempt(asio::io_context& io, tcp::endpoint endpoint, bool tls,
          Clock::time_point deadline, Done done)
      : endpoint_(endpoint),
        tls_(tls),
        deadline_(deadline),
        done_(std::move(done)),
        ctx_(ssl::context::tls_client),
        tcp_(io) {}

  void Start() {
    tcp_.expires_at(deadline_);
    tcp_.async_connect(endpoint_,
                       [self = shared_from_this()](beast::error_code ec) {
                         self->OnConnect(ec);
                       });
  }

 private:
  void OnConnect(beast::error_code ec) {
    if (ec) return Finish(Outcome::kFailed, "connect: " + ec.message());
    if (!tls_) return Exchange(tcp_);
    ctx_.set_verify_mode(ssl::verify_none);
    ssl_.emplace(std::move(tcp_), ctx_);
    ssl_->async_handshake(ssl::stream_base::client, [self = shared_from_this()](
                                                        beast::error_code ec) {
      if (!ec) return self->Exchange(*self->ssl_);
      if (IsAlert(ec)) return self->Finish(Outcome::kAnswered, "");
      // Not TLS on the other end (a plain server answered our hello
      // with an HTTP error): try plain.
      const bool other = ec.category() == asio::error::get_ssl_category();
      self->Finish(other ? Outcome::kOtherMode : Outcome::kFailed,
                   "TLS handshake: " + ec.message());
    });
  }

  template <class Stream>
  void Exchange(Stream& stream) {
    request_ = {bhttp::verb::get, "/", 11};
    request_.set(bhttp::field::host, "fabricmon-self-check");
    request_.set(bhttp::field::user_agent, "fabricmon-watchdog");
    request_.keep_alive(false);
    bhttp::async_write(stream, request_,
                       [self = shared_from_this(), &stream](
                           beast::error_code ec, std::size_t) {
                         if (ec) return self->Failed(ec, "write");
                         bhttp::async_read_header(
                             stream, self->buffer_, self->parser_,
                             [self](beast::error_code ec, std::size_t) {
                               if (!ec)
                                 return self->Finish(Outcome::kAnswered, "");
                               self->Failed(ec, "read");
                             });
                       });
  }

  void Failed(const beast::error_code& ec, const char* step) {
    // TLS 1.3 refuses a missing client certificate after the handshake.
    if (IsAlert(ec)) return Finish(Outcome::kAnswered, "");
    std::string why = std::string(step) + ": " + ec.message();
    if (ec == beast::error::timeout) return Finish(Outcome::kFailed, why);
    // A TLS server closes a plain request unanswered: try TLS.
    Finish(tls_ ? Outcome::kFailed : Outcome::kOtherMode, why);
  }

  void Finish(Outcome outcome, std::string why) {
    if (!done_) return;
    beast::error_code ignored;
    tcp::socket& socket = ssl_ ? ssl_->next_layer().socket() : tcp_.socket();
    socket.close(ignored);
    auto done = std::move(done_);
    done_ = nullptr;
    done(outcome, std::move(why));
  }

  tcp::endpoint endpoint_;
  bool tls_;
  Clock::time_point deadline_;
  Done done_;
  ssl::context ctx_;
  beast::tcp_stream tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> ssl_;
  bhttp::request<bhttp::empty_body> request_;
  beast::flat_buffer buffer_;
  bhttp::response_parser<bhttp::empty_body> parser_;
};

}  // namespace

void RunSelfCheck(asio::io_context& io, const tcp::endpoint& endpoint, bool tls,
                  std::chrono::milliseconds timeout,
                  std::function<void(SelfCheckResult)> done) {
  const auto deadline = Clock::now() + timeout;
  std::make_shared<Attempt>(
      io, endpoint, tls, deadline,
      [&io, endpoint, tls, deadline, done](Outcome outcome, std::string why) {
        if (outcome == Outcome::kAnswered) return done({true, tls, ""});
        if (outcome == Outcome::kFailed || Clock::now() >= deadline) {
          return done({false, tls, why});
        }
        std::make_shared<Attempt>(
            io, endpoint, !tls, deadline,
            [tls, why, done](Outcome second, std::string) {
              if (second == Outcome::kAnswered) return done({true, !tls, ""});
              done({false, tls, why});
            })
            ->Start();
      })
      ->Start();
}

void RunScrapeCheck(asio::io_context& io, http::Server& server, bool tls,
                    std::chrono::milliseconds timeout,
                    std::chrono::milliseconds recent,
                    std::function<void(SelfCheckResult)> done) {
  struct Pending {
    explicit Pending(asio::io_context& io) : timer(io) {}
    asio::steady_timer timer;
    std::function<void(SelfCheckResult)> done;
    std::optional<SelfCheckResult> socket;
    bool rendered = false;
    std::string render_failure;
    void Finish(SelfCheckResult result) {
      if (!done) return;
      timer.cancel();
      auto call = std::move(done);
      done = nullptr;
      call(std::move(result));
    }
    bool tls = false;
    void Maybe() {
      if (socket && !socket->answered) return Finish(*socket);
      if (!render_failure.empty()) {
        return Finish({false, socket ? socket->tls : tls, render_failure});
      }
      if (socket && rendered) Finish(*socket);
    }
  };
  auto pending = std::make_shared<Pending>(io);
  pending->done = std::move(done);
  pending->tls = tls;
  pending->timer.expires_after(timeout);
  pending->timer.async_wait([pending, tls, timeout](beast::error_code ec) {
    if (ec) return;
    if (pending->socket && !pending->socket->answered) {
      return pending->Finish(*pending->socket);
    }
    const bool tls_now = pending->socket ? pending->socket->tls : tls;
    pending->Finish(
        {false, tls_now,
         pending->socket
             ? "the exposition's render did not finish within " +
                   std::to_string(timeout.count()) +
                   "ms (render thread wedged or a collector stuck in Collect)"
             : "no answer within " + std::to_string(timeout.count()) + "ms"});
  });
  server.CheckRender(recent, [pending](bool ok) {
    if (ok) {
      pending->rendered = true;
    } else {
      pending->render_failure = "rendering the exposition failed";
    }
    pending->Maybe();
  });
  const auto endpoint = SelfCheckEndpoint(server.BoundAddress());
  if (!endpoint) {
    pending->socket = SelfCheckResult{false, tls, "the listener is closed"};
    pending->Maybe();
    return;
  }
  RunSelfCheck(io, *endpoint, tls, timeout, [pending](SelfCheckResult r) {
    pending->socket = std::move(r);
    pending->Maybe();
  });
}

std::optional<tcp::endpoint> SelfCheckEndpoint(const std::string& bound) {
  const std::size_t colon = bound.rfind(':');
  if (colon == std::string::npos || colon + 1 >= bound.size()) {
    return std::nullopt;
  }
  std::string host = bound.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  int port = 0;
  try {
    port = std::stoi(bound.substr(colon + 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (port <= 0 || port > 65535) return std::nullopt;
  if (address.is_unspecified()) {
    address = address.is_v6()
                  ? asio::ip::address(asio::ip::address_v6::loopback())
                  : asio::ip::address(asio::ip::address_v4::loopback());
  }
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

}  // namespace fabric
