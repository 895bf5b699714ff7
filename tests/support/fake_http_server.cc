#include "tests/support/fake_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <vector>

namespace fabric::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

FakeHttpServer::FakeHttpServer(Handler handler)
    : FakeHttpServer(
          BodyHandler([handler = std::move(handler)](const std::string& target,
                                                     const std::string&) {
            return handler(target);
          })) {}

FakeHttpServer::FakeHttpServer(BodyHandler handler)
    : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    return;  // port() stays 0: the test fails on it
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpServer::~FakeHttpServer() {
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void FakeHttpServer::Serve() {
  std::vector<int> held;  // connections left unanswered
  asio::io_context io;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 || fds[1].revents) break;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    beast::error_code ec;
    asio::ip::tcp::socket socket(io);
    socket.assign(asio::ip::tcp::v4(), fd, ec);
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request, ec);
    if (ec) continue;  // the socket closes as it goes out of scope
    ++requests_;
    const std::optional<FakeHttpAnswer> answer =
        handler_(std::string(request.target()), request.body());
    if (!answer) {
      held.push_back(socket.release(ec));
      continue;
    }
    if (answer->raw) {
      asio::write(socket, asio::buffer(answer->body), ec);
      continue;
    }
    http::response<http::string_body> response(
        static_cast<http::status>(answer->status), 11);
    response.set(http::field::content_type, answer->content_type);
    if (!answer->www_authenticate.empty()) {
      response.set(http::field::www_authenticate, answer->www_authenticate);
    }
    response.body() = answer->body;
    response.prepare_payload();
    http::write(socket, response, ec);
  }
  for (int fd : held) ::close(fd);
}

}  // namespace fabric::testing
