// A kubelet's pod-resources socket served by a test (the kubelet_* tests,
// which link the generated stubs): `service` answers List on Unix socket
// `socket`.
// Thread-safety: gRPC's server; the caller shuts it down.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace fabric::testing {

// The started server, or null when it could not listen there.
inline std::unique_ptr<grpc::Server> ServeKubelet(const std::string& socket,
                                                  grpc::Service* service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

}  // namespace fabric::testing
