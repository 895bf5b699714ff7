// The Kubernetes pods holding this node's RDMA devices, from the kubelet's
// pod-resources API (gRPC service v1.PodResourcesLister, RPC List, on the
// kubelet's Unix socket, default /var/lib/kubelet/pod-resources/kubelet.sock;
// proto/podresources/), mapped to the `device` label (mlx5_N) our port series
// carry. Read-only: List is the kubelet's read-only view of what it
// allocated.
//
// What a device ID can be mapped from (docs/jobs.md, Kubernetes):
//  - a PCI address ("0000:3b:00.2": the SR-IOV network device plugin's VFs,
//    or a whole PF it hands out): the RDMA device of that function's
//    physical function (bus/pci/devices/<pci>/physfn/infiniband/<dev>; for
//    a PF its own infiniband/<dev>). A VF has no cable of its own: its
//    traffic leaves by the PF's port, which is what the port series and
//    alerts name. A PCI function without an RDMA device (a GPU, an NVMe
//    drive handed out by PCI address) is not ours and is skipped.
//  - anything else (the RDMA shared device plugin's IDs are slot numbers
//    "0".."rdmaHcaMax-1", GPUs' are UUIDs): nothing in the ID names a
//    device. A resource listed in `shared` (e.g. "rdma/hca_shared_devices_a"
//    -> mlx5_0, mlx5_1, as the plugin's selectors chose them) maps to its
//    devices: every container holding any ID of it shares them all.
//
// Split in two: the pure mapping (pod_resources.cc, in fabric_sources) and
// the gRPC client (pod_resources_grpc.cc, built only with gRPC into the gRPC
// module, like the gnmi collector's client).
//
// Thread-safety: pure functions of their inputs, and ListPodResources opens
// its own channel per call; all safe from any thread.
#pragma once

#include <chrono>
#include <compare>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sources/sysfs.h"

namespace fabric {

// One container's devices of one resource, as List gives them.
struct PodContainerDevices {
  std::string ns, pod, container;
  std::string resource;
  std::vector<std::string> ids;
};

// One fabric_pod_device_info series.
struct PodDevice {
  std::string ns, pod, container, device;
  auto operator<=>(const PodDevice&) const = default;
};

// Resource name -> the RDMA devices it stands for (collectors.pods.shared).
using SharedResources = std::map<std::string, std::vector<std::string>>;

// "0000:3b:00.2" (domain of 4 to 8 hex digits, bus, device, function):
// nothing else is used in a sysfs path.
bool IsPciAddress(std::string_view id);

// The RDMA devices of PCI function `pci`'s physical function (see above),
// sorted; empty when it has none or is not there.
std::vector<std::string> PciRdmaDevices(const Sysfs& fs, std::string_view pci);

// Every (namespace, pod, container, device) the containers hold, sorted,
// each once.
std::vector<PodDevice> MapPodDevices(
    const Sysfs& fs, const std::vector<PodContainerDevices>& containers,
    const SharedResources& shared);

// What List answered: every container's devices, or why there is nothing.
struct PodResourcesReply {
  std::vector<PodContainerDevices> containers;
  // Empty on success, and when `socket` does not exist (a node without
  // Kubernetes: nothing to say); else what failed, for the log.
  std::string error;
};

// Calls List on the kubelet's socket `socket` (an absolute path), giving up
// after `deadline` (a kubelet that accepts and never answers cannot hold a
// collection). Answers larger than 16 MiB (the kubelet's own cap) fail.
// The RPC is the gRPC module's (collectors/grpc_module.h), loaded only once
// the socket exists; a module that cannot be loaded is the error.
PodResourcesReply ListPodResources(const std::string& socket,
                                   std::chrono::milliseconds deadline);

// The module's List (pod_resources_grpc.cc): the RPC alone, on a socket
// ListPodResources has found.
PodResourcesReply ListPodResourcesOverGrpc(const std::string& socket,
                                           std::chrono::milliseconds deadline);

}  // namespace fabric
