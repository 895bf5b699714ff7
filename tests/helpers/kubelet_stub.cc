// kubelet_stub: a stand-in kubelet for tests that cannot start the test's
// own in-process server where they need one (systemd_nspawn_test runs it
// inside the container, as root, on the kubelet's real socket path). It
// serves v1.PodResourcesLister/List with Debian's gRPC C++ and the stubs
// generated from the same proto/podresources/ the daemon's client uses,
// and answers every List with the containers named on its command line:
//
//   kubelet_stub SOCKET NAMESPACE/POD/CONTAINER/RESOURCE=ID[,ID...]...
//
// It prints "serving SOCKET" once listening and serves until SIGTERM or
// SIGINT. Thread-safety: the reply is built before serving and only read.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "podresources_v1.grpc.pb.h"

namespace {

class Kubelet final : public v1::PodResourcesLister::Service {
 public:
  explicit Kubelet(v1::ListPodResourcesResponse pods)
      : pods_(std::move(pods)) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    *out = pods_;
    return grpc::Status::OK;
  }

 private:
  const v1::ListPodResourcesResponse pods_;
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  return out;
}

// "ns/pod/container/resource=id,id" into `pods`; false when malformed.
bool AddContainer(const std::string& arg, v1::ListPodResourcesResponse* pods) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) return false;
  const auto names = Split(arg.substr(0, eq), '/');
  // A resource name has a '/' of its own (nvidia.com/gpu): the rest.
  if (names.size() < 4) return false;
  std::string resource = names[3];
  for (std::size_t i = 4; i < names.size(); ++i) resource += "/" + names[i];
  auto* pod = pods->add_pod_resources();
  pod->set_namespace_(names[0]);
  pod->set_name(names[1]);
  auto* container = pod->add_containers();
  container->set_name(names[2]);
  auto* devices = container->add_devices();
  devices->set_resource_name(resource);
  for (const auto& id : Split(arg.substr(eq + 1), ',')) {
    devices->add_device_ids(id);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s SOCKET NS/POD/CONTAINER/RESOURCE=ID[,ID]...\n",
                 argv[0]);
    return 2;
  }
  v1::ListPodResourcesResponse pods;
  for (int i = 2; i < argc; ++i) {
    if (!AddContainer(argv[i], &pods)) {
      std::fprintf(stderr, "%s: not NS/POD/CONTAINER/RESOURCE=IDS\n", argv[i]);
      return 2;
    }
  }
  // Block the stop signals before gRPC starts its threads, so that only
  // sigwait below takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  Kubelet kubelet(std::move(pods));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("unix:") + argv[1],
                           grpc::InsecureServerCredentials());
  builder.RegisterService(&kubelet);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "cannot listen on %s\n", argv[1]);
    return 1;
  }
  std::printf("serving %s\n", argv[1]);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown();
  return 0;
}
