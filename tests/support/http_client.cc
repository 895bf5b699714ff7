#include "tests/support/http_client.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>

#include "http/client.h"

namespace fabric::testing {

std::optional<FetchResult> Fetch(const FetchOptions& o) {
  http::ClientRequest r;
  r.host = o.host;
  r.port = o.port;
  r.source = o.source;
  r.method = o.method;
  r.target = o.target;
  r.headers = o.headers;
  r.user = o.user;
  r.password = o.password;
  r.tls = o.tls;
  r.ca_file = o.ca_file;
  r.cert_file = o.cert_file;
  r.key_file = o.key_file;
  // The tests check the chain only (some certificates they serve name
  // no host on purpose).
  r.verify_name = false;
  auto answer = http::Request(r);
  if (!answer) return std::nullopt;
  return FetchResult{answer->status, std::move(answer->headers),
                     std::move(answer->body)};
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
