// Where a probe rail named by RDMA device and port listens (issue 29): the
// port's netdev (sources/netdev_port.h, NetdevsOfFabricPort) and that
// netdev's IP address, from the host's interface addresses (getifaddrs,
// injectable as an InterfaceAddressLister so tests hand in a list).
//
// The choice: the port's netdevs in NetdevsOfFabricPort's order (IPoIB
// parent before its P_Key children, then RoCE), the first with an IPv4
// address, else the first with a global IPv6 address. Link-local IPv6
// addresses are not used: they need a scope and do not route between
// subnets, which a rail's peers are usually on.
//
// Thread-safety: the Binding* functions are pure functions of their inputs;
// SystemInterfaceAddresses may run on any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sources/sysfs.h"

namespace fabric {

// One address of one interface, as getifaddrs lists it.
struct InterfaceAddress {
  std::string netdev;   // "ib0"
  std::string address;  // canonical text: "10.0.0.1", "fd00::1"
  bool ipv6 = false;
  bool link_local = false;  // fe80::/10
  bool operator==(const InterfaceAddress&) const = default;
};

// The host's interface addresses, or empty with *error set.
using InterfaceAddressLister =
    std::function<std::vector<InterfaceAddress>(std::string* error)>;
// The real one: getifaddrs(3), IPv4 and IPv6 only.
std::vector<InterfaceAddress> SystemInterfaceAddresses(std::string* error);

// `text` in canonical form ("10.0.0.1", "fd00::1"), or empty when it is not
// an IP address.
std::string CanonicalAddress(const std::string& text);

// What a device/port rail binds to.
struct RailBinding {
  std::string netdev;
  std::string address;  // canonical IP text
  bool ipv6 = false;
  bool operator==(const RailBinding&) const = default;
};

// The netdev and address of `device`/`port`. With `want` (a canonical IP
// address; empty = choose), that address, which must be one of the port's
// netdevs'. nullopt with a clear *error: no such device or port, no netdev,
// no usable address, or `want` on another netdev.
std::optional<RailBinding> BindingOfFabricPort(
    const Sysfs& sysfs, const std::vector<InterfaceAddress>& addresses,
    const std::string& device, int port, const std::string& want,
    std::string* error);
// The same choice among `netdevs` (NetdevsOfFabricPort's answer for the
// port `what` names, "mlx5_0 port 1"), for a caller that keeps that answer
// between address checks.
std::optional<RailBinding> BindingOfNetdevs(
    const std::vector<std::string>& netdevs,
    const std::vector<InterfaceAddress>& addresses, const std::string& what,
    const std::string& want, std::string* error);

}  // namespace fabric
