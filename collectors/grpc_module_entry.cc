// The gRPC module's one export (collectors/grpc_module.h): built into
// libfabricmon_grpc.so only, never into the daemon.
#include "collectors/grpc_module.h"

#ifndef FABRICMON_GRPC_MODULE_BUILD
#error "FABRICMON_GRPC_MODULE_BUILD (version-revision) comes from CMake"
#endif

extern "C" __attribute__((visibility("default"))) const fabric::GrpcModuleApi*
fabricmon_grpc_module() {
  static const fabric::GrpcModuleApi api = [] {
    fabric::GrpcModuleApi a;
    a.build = FABRICMON_GRPC_MODULE_BUILD;
    a.subscribe = fabric::gnmi_switch::GrpcSubscribe;
    a.list_pod_resources = fabric::ListPodResourcesOverGrpc;
    return a;
  }();
  return &api;
}
