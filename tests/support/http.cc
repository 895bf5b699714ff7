#include "tests/support/http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>

namespace fabric::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::optional<HttpResponse> HttpGet(int port, const std::string& target) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1");
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  // Asynchronous only so that one deadline covers the whole exchange:
  // tcp_stream's timeout does not apply to its blocking calls.
  beast::error_code result;
  stream.expires_after(std::chrono::seconds(5));
  stream.async_connect(
      tcp::endpoint(asio::ip::address_v4::loopback(),
                    static_cast<unsigned short>(port)),
      [&](beast::error_code ec) {
        if (ec) {
          result = ec;
          return;
        }
        http::async_write(
            stream, request, [&](beast::error_code ec, std::size_t) {
              if (ec) {
                result = ec;
                return;
              }
              http::async_read(
                  stream, buffer, response,
                  [&](beast::error_code ec, std::size_t) { result = ec; });
            });
      });
  io.run();
  if (result) return std::nullopt;
  return HttpResponse{
      static_cast<int>(response.result_int()),
      std::string(response[http::field::content_type]),
      std::move(response.body()),
  };
}

std::optional<std::string> HttpGetOk(int port, const std::string& target) {
  auto response = HttpGet(port, target);
  if (!response || response->status != 200) return std::nullopt;
  return std::move(response->body);
}

int FreeLoopbackPort() {
  asio::io_context io;
  tcp::acceptor acceptor(io,
                         tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  return acceptor.local_endpoint().port();
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  char hex[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace fabric::testing
