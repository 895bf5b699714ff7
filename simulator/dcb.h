// The simulator's DCB view: the DCB (IEEE 802.1Qaz) configuration of the
// RoCE netdev of one simulated host (bond0 of mlx5_bond_0) as the text
// iproute2's `dcb` prints, which the renderer writes per netdev
// (<host>/dcb/<netdev>) for the daemon's file-backed DcbSource
// (sources/dcb_file.h, config key `dcb_dir`). The configuration is the
// fleet's expected RoCE setup: PFC on priority kRocePriority only, priority
// kRocePriority on its own traffic class, DSCP trust (DSCP 26 -> priority
// 3, CNPs' DSCP 48 -> priority 6), DCBX not willing; the PFC request and
// indication counts are the model's tx/rx pause frames of each priority.
//
// Thread-safety: none; reads the model (the caller must not step it
// concurrently).
#pragma once

#include <optional>
#include <string>

#include "simulator/model.h"

namespace fabric::sim {

// The dump for `netdev` on `host`, or nullopt when that host has no such
// netdev (or its device is removed).
std::optional<std::string> SimDcbText(const Cluster& cluster, int host,
                                      const std::string& netdev);

}  // namespace fabric::sim
