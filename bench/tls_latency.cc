// Time to last byte of /metrics over TLS on loopback: the fabricmon HTTP
// server (http/server.h) in this process with an exposition of SERIES
// counters (default 20, ~1.5 KB; 2000 is ~130 KB, several TLS records) and a
// throwaway CA (openssl CLI), a Boost.Beast client on one keep-alive
// connection, and one fresh connection (TCP + TLS handshake) per request.
// Without TCP_NODELAY the last TLS record of each answer waited ~40 ms for the
// client's delayed ACK (issue #25, finding 7).
//
// Then the honest scraper's share under load (issue 40, finding 5): HONEST
// (100) scrapes from 127.0.0.1, one every 100 ms, each a new connection +
// handshake + request (the worst case for admission), reported as answered
// / refused
// and latency, alone; during a ClientHello flood (FLOOD_THREADS threads from
// 127.0.0.2 connecting and starting a handshake as fast as they can), with
// the per-source handshake budget and without it; and during 64 clients
// re-scraping at full speed on keep-alive connections from 127.0.0.3-6.
//
//   cmake --build build --target tls_latency &&
//     build/bench/tls_latency [REQUESTS [SERIES [FLOOD_THREADS [HONEST]]]]
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
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

// A fresh TLS connection from `source` (127.0.0.x) to `endpoint`, handshake
// done; false on any error.
bool Connect(beast::ssl_stream<beast::tcp_stream>& stream,
             const std::string& source, const tcp::endpoint& endpoint) {
  beast::error_code ec;
  auto& socket = beast::get_lowest_layer(stream).socket();
  socket.open(tcp::v4(), ec);
  if (!ec) socket.bind(tcp::endpoint(asio::ip::make_address(source), 0), ec);
  if (!ec) socket.connect(endpoint, ec);
  if (!ec) {
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    stream.handshake(ssl::stream_base::client, ec);
  }
  return !ec;
}

struct HonestResult {
  std::vector<double> ms;
  int refused = 0;
};

// `n` scrapes from 127.0.0.1, each on a new connection, one every 100 ms
// (a busy scraper, within the server's per-source handshake budget).
HonestResult HonestScrapes(ssl::context& ctx, const tcp::endpoint& endpoint,
                           int n) {
  HonestResult out;
  asio::io_context io;
  auto next = Clock::now();
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_until(next);
    next += std::chrono::milliseconds(100);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    const auto start = Clock::now();
    if (Connect(stream, "127.0.0.1", endpoint) && OneRequest(stream) >= 0) {
      out.ms.push_back(Ms(Clock::now() - start));
    } else {
      ++out.refused;
    }
  }
  return out;
}

void ReportHonest(const char* what, HonestResult r, double load_per_s) {
  const int n = static_cast<int>(r.ms.size()) + r.refused;
  std::printf("%-44s answered %d/%d", what, static_cast<int>(r.ms.size()), n);
  if (load_per_s >= 0) std::printf("  (load %.0f/s)", load_per_s);
  std::printf("\n");
  if (!r.ms.empty()) Report("    honest scrape latency", std::move(r.ms));
}

// Background clients until destroyed; `done` counts what they got done.
class Load {
 public:
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  double PerSecond() const {
    return done_ / std::chrono::duration<double>(Clock::now() - start_).count();
  }
  // ClientHellos from `source`: connect, start a handshake, drop it.
  void HelloFlood(ssl::context& ctx, const tcp::endpoint& endpoint,
                  const std::string& source, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, &ctx, endpoint, source] {
        asio::io_context io;
        while (!stop_) {
          beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
          Connect(stream, source, endpoint);
          ++done_;
        }
      });
    }
  }
  // Clients re-scraping at full speed on keep-alive connections,
  // reconnecting when closed; `sources` round-robin.
  void Rescrapers(ssl::context& ctx, const tcp::endpoint& endpoint,
                  const std::vector<std::string>& sources, int clients) {
    for (int c = 0; c < clients; ++c) {
      const std::string source = sources[c % sources.size()];
      threads_.emplace_back([this, &ctx, endpoint, source] {
        asio::io_context io;
        while (!stop_) {
          beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
          if (!Connect(stream, source, endpoint)) continue;
          while (!stop_ && OneRequest(stream) >= 0) ++done_;
        }
      });
    }
  }

 private:
  std::atomic<bool> stop_ = false;
  std::atomic<long> done_ = 0;
  const Clock::time_point start_ = Clock::now();
  std::vector<std::thread> threads_;
};

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
  std::unique_ptr<fabric::http::Server> server;
  // (Re)starts the server with `limits`; its port, 0 on failure.
  auto serve = [&](fabric::http::ServerLimits limits) {
    std::promise<int> bound;
    asio::post(io, [&] {
      server.reset();
      server = fabric::http::Server::Start(io, "127.0.0.1:0", *security,
                                           {registry}, nullptr, &error, limits);
      bound.set_value(server ? server->port() : 0);
    });
    return bound.get_future().get();
  };
  std::thread loop([&] { io.run(); });
  // The latency part opens REQUESTS connections back to back: no
  // handshake budget there.
  fabric::http::ServerLimits unlimited;
  unlimited.tls_handshakes_per_second = 1e9;
  unlimited.tls_handshake_burst = 1e9;
  const int port = serve(unlimited);
  if (port == 0) {
    std::fprintf(stderr, "%s\n", error.c_str());
    asio::post(io, [&] { work.reset(); });
    loop.join();
    return 1;
  }

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

  // The honest scraper's share under load.
  const int flood_threads = argc > 3 ? std::atoi(argv[3]) : 4;
  auto at = [](int p) {
    return tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                         static_cast<unsigned short>(p));
  };
  const int honest = argc > 4 ? std::atoi(argv[4]) : 100;
  std::printf(
      "\nhonest scraper (127.0.0.1, new connection each, every 100 ms):\n");
  {
    const int p = serve({});
    ReportHonest("alone", HonestScrapes(ctx, at(p), honest), -1);
    Load flood;
    flood.HelloFlood(ctx, at(p), "127.0.0.2", flood_threads);
    auto r = HonestScrapes(ctx, at(p), honest);
    ReportHonest("ClientHello flood, per-source handshake budget", r,
                 flood.PerSecond());
  }
  {
    const int p = serve(unlimited);
    Load flood;
    flood.HelloFlood(ctx, at(p), "127.0.0.2", flood_threads);
    auto r = HonestScrapes(ctx, at(p), honest);
    ReportHonest("ClientHello flood, no handshake budget", r,
                 flood.PerSecond());
  }
  {
    const int p = serve({});
    Load rescrape;
    rescrape.Rescrapers(
        ctx, at(p), {"127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"}, 64);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // slots filled
    auto r = HonestScrapes(ctx, at(p), honest);
    ReportHonest("64 keep-alive clients re-scraping at full speed", r,
                 rescrape.PerSecond());
  }

  asio::post(io, [&] {
    server.reset();
    work.reset();
  });
  loop.join();
  std::filesystem::remove_all(dir);
  return 0;
}
