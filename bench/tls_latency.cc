// Time to last byte of /metrics over TLS on loopback: the fabricmon HTTP
// server (http/server.h) in this process with an exposition of SERIES
// counters (default 20, ~1.5 KB; 2000 is ~130 KB, several TLS records) and a
// throwaway CA (openssl CLI), a Boost.Beast client on one keep-alive
// connection, and one fresh connection (TCP + TLS handshake) per request.
// Without TCP_NODELAY the last TLS record of each answer waited ~40 ms for the
// client's delayed ACK (issue #25, finding 7).
//
//   cmake --build build --target tls_latency &&
//     build/bench/tls_latency [REQUESTS [SERIES]]
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"
#include "tests/support/http_client.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

void Report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[static_cast<std::size_t>(q * (ms.size() - 1))];
  };
  std::printf("%-38s n=%zu  median %.2f ms  p90 %.2f ms  max %.2f ms\n", what,
              ms.size(), at(0.5), at(0.9), ms.back());
}

// One request on `stream`; the time from sending it to the answer's last
// byte. Negative on error.
double OneRequest(beast::ssl_stream<beast::tcp_stream>& stream) {
  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, "/metrics", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> res;
  beast::error_code ec;
  const auto start = Clock::now();
  bhttp::write(stream, req, ec);
  if (!ec) bhttp::read(stream, buffer, res, ec);
  if (ec || res.result_int() != 200) return -1;
  return Ms(Clock::now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  const int series = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("tls_latency." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string error;
  if (!fabric::testing::MakeTestCa(dir, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  fabric::http::WebConfig web;
  web.tls.emplace();
  web.tls->cert_file = dir + "/server.crt";
  web.tls->key_file = dir + "/server.key";
  auto security = fabric::http::MakeSecurity(web, &error);
  if (!security) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  auto& family = prometheus::BuildCounter()
                     .Name("fabric_bench_total")
                     .Help("bench")
                     .Register(*registry);
  for (int i = 0; i < series; ++i) {
    family
        .Add({{"port", std::to_string(i)},
              {"device", "mlx5_" + std::to_string(i % 16)}})
        .Increment(i);
  }

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  auto server = fabric::http::Server::Start(io, "127.0.0.1:0", *security,
                                            {registry}, nullptr, &error);
  if (!server) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const int port = server->port();
  std::thread loop([&] { io.run(); });

  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(dir + "/ca.crt");
  ctx.set_verify_mode(ssl::verify_peer);
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port));
  asio::io_context client_io;
  std::vector<double> keep_alive, fresh;
  {
    beast::ssl_stream<beast::tcp_stream> stream(client_io, ctx);
    beast::get_lowest_layer(stream).connect(endpoint);
    stream.handshake(ssl::stream_base::client);
    for (int i = 0; i < n; ++i) {
      double ms = OneRequest(stream);
      if (ms >= 0) keep_alive.push_back(ms);
    }
  }
  for (int i = 0; i < n; ++i) {
    beast::ssl_stream<beast::tcp_stream> stream(client_io, ctx);
    const auto start = Clock::now();
    beast::error_code ec;
    beast::get_lowest_layer(stream).connect(endpoint, ec);
    if (!ec) stream.handshake(ssl::stream_base::client, ec);
    if (!ec && OneRequest(stream) >= 0)
      fresh.push_back(Ms(Clock::now() - start));
  }
  if (keep_alive.empty() || fresh.empty()) {
    std::fprintf(stderr, "requests failed\n");
    return 1;
  }
  Report("keep-alive, request to last byte", keep_alive);
  Report("new connection + handshake + request", fresh);

  asio::post(io, [&] {
    server.reset();
    work.reset();
  });
  loop.join();
  std::filesystem::remove_all(dir);
  return 0;
}
