// ControlClient: the coordinator's end of one control connection to an agent
// (wire.h), over a blocking-style POSIX socket driven by poll() with
// deadlines, so the coordinator can wait on every agent at once and notice
// the one that died.
//
// Thread-safety: one thread per instance.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "auth/hmac.h"
#include "benchtool/wire.h"

namespace fabric::bench {

class ControlClient {
 public:
  using Clock = std::chrono::steady_clock;
  ControlClient(const Hmac& hmac, std::string address)
      : hmac_(hmac), address_(std::move(address)) {}
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Connects and exchanges Hellos; false with the reason in `error`.
  bool Open(Clock::time_point deadline, std::string* error);
  bool Send(MsgType type, const Bytes& payload, std::string* error);

  // Reads what is available without blocking; true once a whole frame is
  // in (then Take it). False with `error` set when the agent closed the
  // connection or sent something that does not verify.
  bool Pump(bool* complete, std::string* error);
  void Take(MsgType* type, Bytes* payload);
  // Blocks until a frame arrives or `deadline`.
  bool Receive(Clock::time_point deadline, MsgType* type, Bytes* payload,
               std::string* error);

  int fd() const { return fd_; }
  const std::string& address() const { return address_; }
  void Close();

 private:
  const Hmac& hmac_;
  std::string address_;
  int fd_ = -1;
  Nonces nonces_;
  std::uint64_t send_seq_ = 0, last_seq_ = 0;
  Bytes buffer_;
  std::optional<std::pair<MsgType, Bytes>> ready_;
};

}  // namespace fabric::bench
