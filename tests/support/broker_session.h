// A MAD broker session (sources/mad/broker.h Serve) on one end of a socket
// pair, the test on the other: the fixture of the broker's unit tests. The
// test sets deps_.open (its fake fabric) and limits_, then calls Serve();
// the session's local port is one active InfiniBand port, mlx5_0/1.
//
// Thread-safety: the session runs on server_; the fixture's members are
// the test thread's, except what Serve() hands the session (read them
// after Hangup()).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <thread>
#include <vector>

#include "sources/mad/broker.h"
#include "sources/mad/broker_protocol.h"

namespace fabric::testing {

class BrokerSessionTest : public ::testing::Test {
 protected:
  using Deps = mad::broker::Deps;
  using Limits = mad::broker::Limits;
  using LocalPort = mad::LocalPort;
  using Reply = mad::broker::Reply;
  using Request = mad::broker::Request;

  void Serve() {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
    client_ = pair[0];
    const int server = pair[1];
    deps_.list_ports = [](std::string*) {
      LocalPort p;
      p.ca = "mlx5_0";
      p.port = 1;
      p.state = 4;
      p.link_layer = "InfiniBand";
      return std::vector<LocalPort>{p};
    };
    server_ = std::thread([this, server] {
      rc_ = mad::broker::Serve(server, deps_, limits_, &counts_);
      ::close(server);
    });
  }
  void TearDown() override {
    if (client_ >= 0) ::close(client_);
    if (server_.joinable()) server_.join();
  }
  // Ends the session from the client's side and waits for it.
  void Hangup() {
    ::close(client_);
    client_ = -1;
    server_.join();
  }
  void Write(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::send(client_, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next datagram (10 s at most), nullopt when the session ended.
  std::optional<std::vector<std::uint8_t>> Datagram() {
    std::vector<std::uint8_t> buf(mad::broker::kMaxMessage);
    timeval tv{10, 0};
    ::setsockopt(client_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    const ssize_t n = ::recv(client_, buf.data(), buf.size(), 0);
    if (n <= 0) return std::nullopt;
    buf.resize(static_cast<std::size_t>(n));
    return buf;
  }
  std::optional<Reply> Read() {
    const auto d = Datagram();
    if (!d) return std::nullopt;
    return mad::broker::DecodeReply({d->data(), d->size()});
  }
  Reply Call(const Request& r) {
    Write(mad::broker::EncodeRequest(r));
    auto reply = Read();
    EXPECT_TRUE(reply) << "no reply: the session ended";
    return reply.value_or(Reply{});
  }

  int client_ = -1;
  Deps deps_;
  Limits limits_;
  std::thread server_;
  mad::broker::RefusalCounts counts_{};
  int rc_ = -1;
};

}  // namespace fabric::testing
