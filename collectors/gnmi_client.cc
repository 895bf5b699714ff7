#include "collectors/gnmi_client.h"

#include <grpcpp/grpcpp.h>

#include "gnmi.grpc.pb.h"
#include "gnmi.pb.h"

namespace fabric::gnmi_switch {
namespace {

gnmi::PathElem Elem(const std::string& name,
                    std::initializer_list<std::string> keys = {}) {
  gnmi::PathElem e;
  e.set_name(name);
  for (const auto& k : keys) (*e.mutable_key())[k] = "*";
  return e;
}

std::vector<gnmi::Path> SubscriptionPaths(bool sonic_counters_db) {
  std::vector<gnmi::Path> out;
  auto add = [&](std::initializer_list<gnmi::PathElem> elems) {
    gnmi::Path p;
    for (const auto& e : elems) *p.add_elem() = e;
    out.push_back(std::move(p));
  };
  if (sonic_counters_db) {
    // Every port's counter table (sonic-gnmi's virtual path; the prefix
    // carries target COUNTERS_DB).
    add({Elem("COUNTERS"), Elem("Ethernet*")});
    return out;
  }
  add({Elem("interfaces"), Elem("interface", {"name"}), Elem("state")});
  add({Elem("interfaces"), Elem("interface", {"name"}), Elem("ethernet"),
       Elem("state"), Elem("port-speed")});
  add({Elem("qos"), Elem("interfaces"), Elem("interface", {"interface-id"}),
       Elem("output"), Elem("queues"), Elem("queue", {"name"}), Elem("state")});
  add({Elem("qos"), Elem("interfaces"), Elem("interface", {"interface-id"}),
       Elem("switch-priority", {"priority"}), Elem("state")});
  add({Elem("lldp"), Elem("interfaces"), Elem("interface", {"name"}),
       Elem("neighbors"), Elem("neighbor", {"id"}), Elem("state")});
  return out;
}

class GrpcSubscribeCall final : public SubscribeCall {
 public:
  GrpcSubscribeCall(const std::string& address, const ClientOptions& o)
      : address_(address), options_(o) {
    if (!o.username.empty()) {
      context_.AddMetadata("username", o.username);
      context_.AddMetadata("password", o.password);
    }
  }

  std::string Run(const Handlers& handlers) override {
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (options_.insecure) {
      creds = grpc::InsecureChannelCredentials();
    } else {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options_.ca_pem;
      ssl.pem_cert_chain = options_.cert_pem;
      ssl.pem_private_key = options_.key_pem;
      creds = grpc::SslCredentials(ssl);
    }
    grpc::ChannelArguments args;
    if (!options_.tls_server_name.empty())
      args.SetSslTargetNameOverride(options_.tls_server_name);
    // A notification of a 64-port switch with every queue is well under
    // this; a bigger one is a broken or hostile target.
    args.SetMaxReceiveMessageSize(16 << 20);
    auto stub =
        gnmi::gNMI::NewStub(grpc::CreateCustomChannel(address_, creds, args));
    auto stream = stub->Subscribe(&context_);
    gnmi::SubscribeRequest request;
    auto* list = request.mutable_subscribe();
    list->set_mode(gnmi::SubscriptionList::STREAM);
    // SONiC's tables are JSON objects; the OpenConfig leaves scalars.
    list->set_encoding(options_.sonic_counters_db ? gnmi::JSON_IETF
                                                  : gnmi::PROTO);
    if (options_.sonic_counters_db)
      list->mutable_prefix()->set_target("COUNTERS_DB");
    for (const auto& path : SubscriptionPaths(options_.sonic_counters_db)) {
      auto* sub = list->add_subscription();
      *sub->mutable_path() = path;
      sub->set_mode(gnmi::SAMPLE);
      sub->set_sample_interval(
          static_cast<std::uint64_t>(options_.sample_interval.count()));
    }
    // The request side stays open: a target may end the RPC when the
    // client half-closes (the Node.js target does), and gNMI clients keep
    // STREAM subscriptions open. A failed Write is explained by Finish().
    if (stream->Write(request)) {
      handlers.subscribed();
      gnmi::SubscribeResponse response;
      while (stream->Read(&response)) {
        if (response.has_update()) {
          const ParsedNotification parsed =
              ParseNotification(response.update());
          handlers.response(&parsed);
        } else {
          handlers.response(nullptr);
        }
      }
    }
    grpc::Status status = stream->Finish();
    return status.ok() ? "stream ended by the switch"
                       : status.error_message() + " (gRPC code " +
                             std::to_string(status.error_code()) + ")";
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  const std::string address_;
  const ClientOptions options_;
  grpc::ClientContext context_;  // TryCancel is thread-safe
};

}  // namespace

std::unique_ptr<SubscribeCall> GrpcSubscribe(const std::string& address,
                                             const ClientOptions& options) {
  return std::make_unique<GrpcSubscribeCall>(address, options);
}

std::vector<std::string> SubscriptionPathStrings(bool sonic_counters_db) {
  std::vector<std::string> out;
  for (const auto& p : SubscriptionPaths(sonic_counters_db))
    out.push_back(PathString({}, p));
  return out;
}

}  // namespace fabric::gnmi_switch
