// The local RDMA ports: which ones can carry probes (UD) and bench traffic
// (RC), with the GID their packets carry and the kind of timestamps their
// device gives. On a host without RDMA (no devices from ibv_get_device_list)
// the list is empty, which the probe collector's `auto` transport reads as
// "use UDP".
//
// Thread-safety: pure functions over the VerbsOps seam; ListRdmaPorts opens
// and closes devices, so give each thread its own VerbsOps calls (libibverbs
// itself allows concurrent opens).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probe/hca_clock.h"
#include "probe/verbs_ops.h"

namespace fabric::rdma {

// A local port that can carry RDMA probes.
struct RdmaPort {
  std::string device;
  int port = 0;
  LinkLayer link_layer = LinkLayer::kUnknown;
  std::uint16_t lid = 0;
  GidEntry gid;  // the source GID of our packets
  int mtu_bytes = 0;
  ClockKind clock = ClockKind::kSoftware;
};

// The GID entry probes use. RoCE: a RoCEv2 entry holding an IPv4-mapped
// address first (routed like plain IPv4 across an L3 fabric), then any
// RoCEv2, then RoCEv1. IB: the lowest index (the default GID: subnet prefix
// and port GUID). Empty (all-zero) slots are skipped; nullopt when none fits.
std::optional<GidEntry> PickGid(std::span<const GidEntry> table,
                                LinkLayer link_layer);

// Every ACTIVE local port that can send probes. No devices (the kernel has
// no RDMA, no rdma_rxe link) is an empty list and no error: the probe
// collector's `auto` transport then uses UDP. A device or port that cannot be
// queried is skipped and named in *error; the others are still returned.
std::vector<RdmaPort> ListRdmaPorts(VerbsOps& ops, std::string* error);

// The port for traffic bound to `address` ("host", "host:port",
// "[v6]:port"): the port whose GID is that IP address (RoCE), else the first
// port listed. nullopt when `ports` is empty.
std::optional<RdmaPort> PickPortForAddress(std::span<const RdmaPort> ports,
                                           std::string_view address);

// Port `port` of `device` among `ports`; nullopt when it is not there (not
// ACTIVE, or no such device).
std::optional<RdmaPort> FindPort(std::span<const RdmaPort> ports,
                                 std::string_view device, int port);

// True for ::ffff:a.b.c.d, the GID of a RoCEv2 entry on an IPv4 address.
bool IsIpv4MappedGid(const Gid& gid);
bool IsZeroGid(const Gid& gid);

}  // namespace fabric::rdma
