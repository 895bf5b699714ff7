// The pods collector: which Kubernetes pods hold this node's RDMA devices,
// as fabric_pod_device_info{namespace, pod, container, device} = 1, so that
// rules and alerts can say which pods a fabric fault touches (as the jobs
// collector does for Slurm). Read from the kubelet's pod-resources API on
// its Unix socket (sources/pod_resources.h) every interval, with a deadline
// of its own (`deadline`, below `timeout`): a kubelet that never answers
// ends the collection, it does not hold it. A node without the socket (no
// Kubernetes) exports nothing and logs nothing; a pod that ends is gone at
// the next collection. A failed List (kubelet down, an answer that is not
// gRPC, the deadline) fails the collection (fabric_collector_success 0),
// with one log line per failure streak and one when it answers again.
//
// Bounded: at most `max_series` series (a node runs at most a few hundred
// pods, few of which hold RDMA devices). Past it the first in (namespace,
// pod, container, device) order are kept and fabric_pod_devices_over_cap
// says how many were left out.
//
// Built only with gRPC (proto/CMakeLists.txt), like gnmi.
//
// Thread-safety: the collector follows Collector.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.h"

namespace fabric {

struct PodsSettings {
  std::string socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::chrono::microseconds deadline = std::chrono::seconds(2);
  int max_series = 256;
  // Resources whose device IDs name no device (the RDMA shared device
  // plugin's): resource name -> the RDMA devices it stands for.
  std::map<std::string, std::vector<std::string>> shared;
  bool operator==(const PodsSettings&) const = default;
};

CollectorSpec PodsCollectorSpec();

}  // namespace fabric
