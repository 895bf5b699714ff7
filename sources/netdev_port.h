// The fabric port behind a network interface (issue 29: probes that know
// their ports). A probe over UDP leaves and arrives by a netdev; when that
// netdev is IPoIB, or a RoCE netdev, it belongs to one RDMA port, whose
// node GUID, port GUID, LID and GID name it on the fabric:
//   - IPoIB (`type` 32, ARPHRD_INFINIBAND): the 20-byte hardware address is
//     4 bytes of flags and QPN, then the port's GID; the port is the one
//     whose `gids/0` is that GID.
//   - RoCE: the port whose GID table names the netdev
//     (`gid_attrs/ndevs/<i>`); its GID is the first such entry.
// Anything else (lo, a plain NIC, a veth) has no fabric port: nullopt.
// NetdevsOfFabricPort is the reverse (a probe rail named by device/port):
// the port map's netdev rule (sources/port_map.h), the one every collector
// uses, with errors that name what is missing.
//
// Read through Sysfs (sources/sysfs.h), so recorded trees and the test fake
// work; the text parsers are pure.
//
// Thread-safety: pure functions of what the Sysfs returns.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/sysfs.h"

namespace fabric {

using Gid = std::array<std::uint8_t, 16>;

struct NetdevPort {
  std::string device;      // "mlx5_0"
  int port = 0;            // 1-based
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;  // IB: gids/0's interface id; 0 on RoCE
  std::uint16_t lid = 0;        // 0 on RoCE
  Gid gid{};
  bool operator==(const NetdevPort&) const = default;
};

// "fe80:0000:0000:0000:0002:c903:00a1:b2c3" (eight groups of four hex
// digits, as sysfs prints GIDs).
std::optional<Gid> ParseGidText(std::string_view text);
// The same form, for labels.
std::string FormatGid(const Gid& gid);
// The GID in an IPoIB hardware address: twenty colon-separated hex bytes
// ("80:00:00:48:fe:80:...:b2:c3"); nullopt for any other length.
std::optional<Gid> IpoibAddressGid(std::string_view address);

// The port behind `ifname`, or nullopt (with why in *error when something
// could not be read, empty when the netdev simply has no fabric port).
std::optional<NetdevPort> FabricPortOfNetdev(const Sysfs& sysfs,
                                             const std::string& ifname,
                                             std::string* error);

// The netdevs of RDMA port `device`/`port`, the reverse of
// FabricPortOfNetdev: PortNetdevs::All() of sources/port_map.h (the GID
// table's netdevs, else the device's device/net entries for the port, else
// the IPoIB netdevs carrying the port's GID; then bond slaves). nullopt with
// a clear *error when the device or port does not exist or no netdev
// belongs to the port.
std::optional<std::vector<std::string>> NetdevsOfFabricPort(
    const Sysfs& sysfs, const std::string& device, int port,
    std::string* error);

}  // namespace fabric
