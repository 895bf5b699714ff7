#include "http/listen_address.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <charconv>

namespace fabric::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::optional<tcp::endpoint> ResolveListenAddress(
    const std::string& listen_address, std::string* error) {
  auto bad = [&](const std::string& why) {
    *error = "cannot listen on " + listen_address + ": " + why;
    return std::nullopt;
  };
  auto colon = listen_address.rfind(':');
  if (colon == std::string::npos) return bad("not HOST:PORT");
  std::string host = listen_address.substr(0, colon);
  std::string port_text = listen_address.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(),
                                   port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() ||
      end != port_text.data() + port_text.size() || port > 65535) {
    return bad("bad port");
  }
  const auto p = static_cast<unsigned short>(port);
  if (host.empty()) return tcp::endpoint(asio::ip::address_v4::any(), p);
  boost::system::error_code parse_error;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("bad IPv6 literal");
    auto v6 =
        asio::ip::make_address_v6(host.substr(1, host.size() - 2), parse_error);
    if (parse_error) return bad("bad IPv6 literal");
    return tcp::endpoint(v6, p);
  }
  auto v4 = asio::ip::make_address_v4(host, parse_error);
  if (!parse_error) return tcp::endpoint(v4, p);
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code resolve_error;
  auto results = resolver.resolve(host, port_text, resolve_error);
  if (resolve_error || results.empty()) {
    return bad("cannot resolve " + host + ": " + resolve_error.message());
  }
  return results.begin()->endpoint();
}

std::string FormatEndpoint(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string host =
      address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

}  // namespace fabric::http
