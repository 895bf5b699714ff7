// The gRPC module (libfabricmon_grpc.so): the only code of fabricmon that
// speaks gRPC — the gnmi collector's Subscribe stream
// (collectors/gnmi_client.h) and the pods collector's List on the kubelet
// (sources/pod_resources.h) — built as a shared module that the daemon
// dlopen()s the first time one of them has work: a gnmi collector with a
// switch in its shard, a pods collector whose kubelet socket exists. The
// daemon binary itself links no gRPC, protobuf or Abseil: mapping and
// relocating their 48 shared libraries was half of a `fabricmon --once`'s
// start-up on a node that uses neither (docs/measurements.md, "The one-shot
// process and the gRPC module").
//
// Both sides include this header. The module exports one C symbol,
// fabricmon_grpc_module(), returning a GrpcModuleApi; the collectors, their
// config and threads stay in the daemon. The two are one build: the loader
// refuses a module whose abi, build or layout differ from its own (C++ types
// cross the boundary).
//
// Where the module is looked for (GrpcModulePaths): $FABRICMON_GRPC_MODULE
// when set (that file only); else next to the running executable (a build
// tree: build/fabricmon, build/libfabricmon_grpc.so), then the installed
// libdir relative to it (/usr/bin/fabricmon ->
// /usr/lib/<multiarch>/fabricmon/libfabricmon_grpc.so; packaging/deb.cmake).
// A module that is missing or broken fails only those collectors, with the
// loader's reason: the gnmi switches go down (fabric_gnmi_switch_up 0, one
// log line per failure streak), the pods collection fails
// (fabric_collector_success 0, one log line).
//
// Thread-safety: GrpcModule() loads once per process (concurrent first
// callers wait for the one load) and never unloads; the API's functions are
// as thread-safe as the functions they point to. LoadGrpcModule has no
// state of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collectors/gnmi_client.h"
#include "sources/pod_resources.h"

namespace fabric {

// Bumped when GrpcModuleApi changes.
inline constexpr int kGrpcModuleAbi = 1;

// The sizes of what crosses the boundary, folded: a header edited on one
// side only (a build that mixes objects) changes it.
inline constexpr std::size_t kGrpcModuleLayout =
    sizeof(gnmi_switch::ClientOptions) * 1000003u ^
    sizeof(gnmi_switch::ParsedNotification) * 10007u ^
    sizeof(gnmi_switch::SubscribeCall::Handlers) * 101u ^
    sizeof(PodResourcesReply) * 7u ^ sizeof(PodContainerDevices);

struct GrpcModuleApi {
  int abi = kGrpcModuleAbi;
  const char* build = nullptr;  // version-revision the module was built from
  std::size_t layout = kGrpcModuleLayout;
  // gnmi_switch::GrpcSubscribe and ListPodResourcesOverGrpc.
  std::unique_ptr<gnmi_switch::SubscribeCall> (*subscribe)(
      const std::string& address,
      const gnmi_switch::ClientOptions& options) = nullptr;
  PodResourcesReply (*list_pod_resources)(
      const std::string& socket, std::chrono::milliseconds deadline) = nullptr;
};

// The process's module, loaded from GrpcModulePaths() at the first call;
// null, with the reason in *error, when it cannot be (the same reason on
// every later call: the daemon does not retry, a restart does).
const GrpcModuleApi* GrpcModule(std::string* error);

// See above. `env_file`: $FABRICMON_GRPC_MODULE ("" = unset); `exe`: the
// running executable's path (/proc/self/exe).
std::vector<std::string> GrpcModulePaths(const std::string& env_file,
                                         const std::string& exe);

// Loads the first of `candidates` that exists and checks it is this build's;
// null and *error ("<path>: <why>", or which paths were tried) otherwise. A
// module that exists but does not load is an error, not a reason to try the
// next one.
const GrpcModuleApi* LoadGrpcModule(const std::vector<std::string>& candidates,
                                    std::string* error);

}  // namespace fabric

// The module's one export.
extern "C" const fabric::GrpcModuleApi* fabricmon_grpc_module();
