#include "tests/support/http_client.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace fabric::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

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

template <class Stream>
std::optional<FetchResult> Exchange(asio::io_context& io, Stream& stream,
                                    const FetchOptions& o, bool tls) {
  http::request<http::empty_body> req{http::string_to_verb(o.method), o.target,
                                      11};
  req.set(http::field::host, o.host);
  if (!o.user.empty()) {
    req.set(http::field::authorization,
            "Basic " + Base64(o.user + ":" + o.password));
  }
  for (const auto& [name, value] : o.headers) req.set(name, value);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  if (o.method == "HEAD") parser.skip(true);
  beast::error_code result = asio::error::timed_out;
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(std::chrono::seconds(10));
  auto do_request = [&] {
    http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      http::async_read(
          stream, buffer, parser,
          [&](beast::error_code ec2, std::size_t) { result = ec2; });
    });
  };
  boost::system::error_code parse_error;
  auto address = asio::ip::make_address(o.host, parse_error);
  if (parse_error) return std::nullopt;
  if (!o.source.empty()) {
    auto local = asio::ip::make_address(o.source, parse_error);
    if (parse_error) return std::nullopt;
    lowest.socket().open(local.is_v4() ? tcp::v4() : tcp::v6(), parse_error);
    if (!parse_error)
      lowest.socket().bind(tcp::endpoint(local, 0), parse_error);
    if (parse_error) return std::nullopt;
  }
  lowest.async_connect(
      tcp::endpoint(address, static_cast<unsigned short>(o.port)),
      [&](beast::error_code ec) {
        if (ec) {
          result = ec;
          return;
        }
        if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
          stream.async_handshake(ssl::stream_base::client,
                                 [&](beast::error_code ec2) {
                                   if (ec2) {
                                     result = ec2;
                                     return;
                                   }
                                   do_request();
                                 });
        } else {
          (void)tls;
          do_request();
        }
      });
  io.run();
  if (result) return std::nullopt;
  FetchResult out;
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

std::optional<FetchResult> Fetch(const FetchOptions& o) {
  asio::io_context io;
  if (!o.tls) {
    beast::tcp_stream stream(io);
    return Exchange(io, stream, o, false);
  }
  ssl::context ctx(ssl::context::tls_client);
  boost::system::error_code ec;
  if (!o.ca_file.empty()) {
    ctx.load_verify_file(o.ca_file, ec);
    if (ec) return std::nullopt;
    ctx.set_verify_mode(ssl::verify_peer);
  }
  if (!o.cert_file.empty()) {
    ctx.use_certificate_chain_file(o.cert_file, ec);
    if (ec) return std::nullopt;
    ctx.use_private_key_file(o.key_file, ssl::context::pem, ec);
    if (ec) return std::nullopt;
  }
  beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
  return Exchange(io, stream, o, true);
}

std::optional<std::string> RawExchange(int port, const std::string& bytes,
                                       bool half_close,
                                       std::chrono::seconds limit) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return std::nullopt;
  }
  timeval tv{};
  tv.tv_sec = limit.count();
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n =
        send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close before reading it all
    sent += static_cast<std::size_t>(n);
  }
  if (half_close) shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

std::optional<std::string> Gunzip(const std::string& data) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

std::string BcryptHash(const std::string& password, int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof(salt))) {
    return "";
  }
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), salt, &data);
  return hash && hash[0] == '$' ? hash : "";
}

bool MakeTestCa(const std::string& dir, std::string* error) {
  const std::string d = "'" + dir + "'";
  const std::string ec =
      " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::vector<std::string> commands = {
      "openssl req -x509" + ec + " -keyout " + d + "/ca.key -out " + d +
          "/ca.crt -subj /CN=fabricmon-test-ca -days 2",
      "openssl req -new" + ec + " -keyout " + d + "/server.key -out " + d +
          "/server.csr -subj /CN=localhost"
          " -addext subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost",
      "openssl x509 -req -in " + d + "/server.csr -CA " + d +
          "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -copy_extensions copy -out " + d +
          "/server.crt",
      "openssl req -new" + ec + " -keyout " + d + "/client.key -out " + d +
          "/client.csr -subj /CN=prometheus -addext "
          // SANs of types that hold no string come first: the check must
          // skip them, not read them as strings.
          "'subjectAltName=RID:1.2.3.4,otherName:1.2.3.5;UTF8:x,"
          "DNS:prometheus.example,IP:10.0.0.7,"
          "URI:spiffe://fabricmon-test/prometheus'",
      "openssl x509 -req -in " + d + "/client.csr -CA " + d +
          "/ca.crt -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -copy_extensions copy -out " + d +
          "/client.crt",
      "openssl req -x509" + ec + " -keyout " + d + "/stranger.key -out " + d +
          "/stranger.crt -subj /CN=stranger -days 2",
  };
  for (const auto& command : commands) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
      *error = command;
      return false;
    }
  }
  return true;
}

}  // namespace fabric::testing
