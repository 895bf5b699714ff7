// ListPodResourcesOverGrpc (sources/pod_resources.h): the gRPC half, Debian's
// libgrpc++ and the stubs generated from proto/podresources/, built into the
// gRPC module (collectors/grpc_module.h).
#include <grpcpp/grpcpp.h>

#include "podresources_v1.grpc.pb.h"
#include "sources/pod_resources.h"

namespace fabric {

PodResourcesReply ListPodResourcesOverGrpc(const std::string& socket,
                                           std::chrono::milliseconds deadline) {
  PodResourcesReply reply;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(16 << 20);
  auto stub = v1::PodResourcesLister::NewStub(grpc::CreateCustomChannel(
      "unix:" + socket, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::ListPodResourcesResponse response;
  const grpc::Status status =
      stub->List(&context, v1::ListPodResourcesRequest(), &response);
  if (!status.ok()) {
    reply.error = "List on " + socket + ": " + status.error_message() +
                  " (gRPC code " + std::to_string(status.error_code()) + ")";
    return reply;
  }
  for (const auto& pod : response.pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& devices : container.devices()) {
        reply.containers.push_back(
            {pod.namespace_(),
             pod.name(),
             container.name(),
             devices.resource_name(),
             {devices.device_ids().begin(), devices.device_ids().end()}});
      }
    }
  }
  return reply;
}

}  // namespace fabric
