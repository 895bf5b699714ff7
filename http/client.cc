#include "http/client.h"

#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <type_traits>

namespace fabric::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

void SetError(std::string* error, const std::string& what) {
  if (error) *error = what;
}

// Resolve, connect (from `source` when set), handshake when TLS, write the
// request and read the answer, all under one deadline.
template <class Stream>
std::optional<ClientResponse> Exchange(asio::io_context& io, Stream& stream,
                                       const ClientRequest& o,
                                       std::string* error) {
  bhttp::request<bhttp::empty_body> req{bhttp::string_to_verb(o.method),
                                        o.target, 11};
  req.set(bhttp::field::host, o.host);
  if (!o.user.empty()) {
    req.set(bhttp::field::authorization,
            "Basic " + Base64(o.user + ":" + o.password));
  }
  for (const auto& [name, value] : o.headers) req.set(name, value);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(o.body_limit);
  if (o.method == "HEAD") parser.skip(true);
  beast::error_code result = asio::error::timed_out;
  std::string stage = "connect";
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(o.timeout);
  auto do_request = [&] {
    stage = "request";
    bhttp::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      stage = "answer";
      // Boost 1.74's parser sets body_limit on a Content-Length over the
      // limit but goes on reading the body (a 65 MiB answer passed a 1 MiB
      // limit): read the header, refuse a declared length over the limit,
      // then read the body (chunked or to-EOF bodies keep the parser's own
      // check, and the size is checked once more below).
      bhttp::async_read_header(
          stream, buffer, parser, [&](beast::error_code ec2, std::size_t) {
            if (ec2) {
              result = ec2;
              return;
            }
            if (o.method != "HEAD" &&
                parser.content_length().value_or(0) > o.body_limit) {
              result = bhttp::error::body_limit;
              return;
            }
            bhttp::async_read(
                stream, buffer, parser,
                [&](beast::error_code ec3, std::size_t) { result = ec3; });
          });
    });
  };
  auto on_connect = [&](beast::error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      stage = "TLS handshake";
      stream.async_handshake(ssl::stream_base::client,
                             [&](beast::error_code ec2) {
                               if (ec2) {
                                 result = ec2;
                                 return;
                               }
                               do_request();
                             });
    } else {
      do_request();
    }
  };
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(o.host, std::to_string(o.port), ec);
  if (ec || endpoints.empty()) {
    SetError(error, "cannot resolve " + o.host + ": " + ec.message());
    return std::nullopt;
  }
  if (!o.source.empty()) {
    const auto local = asio::ip::make_address(o.source, ec);
    if (ec) {
      SetError(error, "bad source address " + o.source);
      return std::nullopt;
    }
    lowest.socket().open(local.is_v4() ? tcp::v4() : tcp::v6(), ec);
    if (!ec) lowest.socket().bind(tcp::endpoint(local, 0), ec);
    if (ec) {
      SetError(error, "cannot bind " + o.source + ": " + ec.message());
      return std::nullopt;
    }
    lowest.async_connect(endpoints.begin()->endpoint(), on_connect);
  } else {
    lowest.async_connect(
        endpoints,
        [&](beast::error_code e, const tcp::endpoint&) { on_connect(e); });
  }
  io.run();
  if (!result && parser.get().body().size() > o.body_limit) {
    result = bhttp::error::body_limit;
  }
  if (result) {
    SetError(error, o.host + ":" + std::to_string(o.port) + ": " + stage +
                        ": " + result.message());
    return std::nullopt;
  }
  ClientResponse out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(c));
    out.headers[name] = std::string(field.value());
  }
  out.body = res.body();
  return out;
}

}  // namespace

std::string Base64(const std::string& in) {
  static const char* kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = -6;
  for (unsigned char c : in) {
    value = (value << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(kAlphabet[(value >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(kAlphabet[((value << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

std::optional<ClientResponse> Request(const ClientRequest& o,
                                      std::string* error) {
  asio::io_context io;
  if (!o.tls) {
    beast::tcp_stream stream(io);
    return Exchange(io, stream, o, error);
  }
  ssl::context ctx(ssl::context::tls_client);
  boost::system::error_code ec;
  const std::string name = o.server_name.empty() ? o.host : o.server_name;
  if (!o.ca_file.empty()) {
    ctx.load_verify_file(o.ca_file, ec);
    if (ec) {
      SetError(error, "cannot read CA file " + o.ca_file + ": " + ec.message());
      return std::nullopt;
    }
    ctx.set_verify_mode(ssl::verify_peer);
    if (o.verify_name) {
      ctx.set_verify_callback(ssl::host_name_verification(name));
    }
  }
  if (!o.cert_file.empty()) {
    ctx.use_certificate_chain_file(o.cert_file, ec);
    if (!ec) ctx.use_private_key_file(o.key_file, ssl::context::pem, ec);
    if (ec) {
      SetError(error, "cannot load client certificate " + o.cert_file + " / " +
                          o.key_file + ": " + ec.message());
      return std::nullopt;
    }
  }
  beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
  // SNI, for servers behind a proxy that picks the certificate by name.
  SSL_set_tlsext_host_name(stream.native_handle(), name.c_str());
  return Exchange(io, stream, o, error);
}

}  // namespace fabric::http
