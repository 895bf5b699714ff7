// The gnmi collector's gRPC side (collectors/gnmi_switch.h): one gNMI
// Subscribe RPC to one switch, STREAM mode, every path of
// SubscriptionPathStrings() SAMPLEd at the asked interval, each Notification
// handed over parsed (collectors/gnmi_parse.h). No gRPC or generated header
// here: the collector's threading code includes this without them (gRPC's
// Abseil defines its own GUARDED_BY, which core/thread_annotations.h also
// defines).
//
// Thread-safety: Run() on one thread; Cancel() from any thread, at any time
// (before, during or after Run).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/gnmi_parse.h"

namespace fabric::gnmi_switch {

struct ClientOptions {
  bool insecure = false;
  std::string ca_pem, cert_pem, key_pem;  // "" = none (system roots)
  std::string tls_server_name;
  std::string username, password;  // metadata; none when username is ""
  std::chrono::nanoseconds sample_interval{std::chrono::seconds(5)};
  // SONiC's COUNTERS_DB tables (target COUNTERS_DB, COUNTERS/Ethernet*)
  // instead of the OpenConfig paths.
  bool sonic_counters_db = false;
};

class SubscribeCall {
 public:
  virtual ~SubscribeCall() = default;
  // Connects, subscribes and reads until the stream ends, fails or is
  // cancelled; returns why. `subscribed` once the request is sent;
  // `response` for every response: its Notification parsed, or null (a
  // sync_response).
  struct Handlers {
    std::function<void()> subscribed;
    std::function<void(const ParsedNotification*)> response;
  };
  virtual std::string Run(const Handlers& handlers) = 0;
  virtual void Cancel() = 0;
};

using SubscribeCallFactory = std::function<std::unique_ptr<SubscribeCall>(
    const std::string& address, const ClientOptions& options)>;

// The real one: C++ gRPC (Debian's libgrpc++), through the gRPC module
// (collectors/grpc_module.h), loaded at the first call; without the module,
// a call whose Run() fails at once with the loader's reason.
std::unique_ptr<SubscribeCall> NewGrpcSubscribeCall(
    const std::string& address, const ClientOptions& options);

// What NewGrpcSubscribeCall reaches in the module (gnmi_client.cc, linked
// into libfabricmon_grpc.so, and into the gnmi_* tests).
std::unique_ptr<SubscribeCall> GrpcSubscribe(const std::string& address,
                                             const ClientOptions& options);

// The subscribed paths as text ("/interfaces/interface[name=*]/state", ...).
std::vector<std::string> SubscriptionPathStrings(
    bool sonic_counters_db = false);

}  // namespace fabric::gnmi_switch
