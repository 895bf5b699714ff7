// Listen addresses in the exporter form HOST:PORT: ":PORT" (all IPv4
// addresses, as fabricmon has always done), "0.0.0.0:PORT", "[::]:PORT"
// (all IPv6 addresses, and IPv4 too unless net.ipv6.bindv6only=1),
// "[::1]:PORT", or a host name resolved once when binding.
//
// Thread-safety: ResolveListenAddress may block on DNS for a host name;
// FormatEndpoint is pure.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>

namespace fabric::http {

// nullopt with *error when the address is not HOST:PORT or the host does
// not resolve.
std::optional<boost::asio::ip::tcp::endpoint> ResolveListenAddress(
    const std::string& listen_address, std::string* error);

// "127.0.0.1:9", "[::1]:9".
std::string FormatEndpoint(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace fabric::http
