#include "sources/netdev_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "sources/netdev_port.h"

namespace fabric {
namespace {

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<InterfaceAddress> SystemInterfaceAddresses(std::string* error) {
  error->clear();
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    *error = std::string("getifaddrs: ") + std::strerror(errno);
    return out;
  }
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_name == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    InterfaceAddress item;
    item.netdev = a->ifa_name;
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      ::inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
      item.ipv6 = true;
      item.link_local = IN6_IS_ADDR_LINKLOCAL(&in->sin6_addr);
    } else {
      continue;
    }
    item.address = text;
    out.push_back(std::move(item));
  }
  ::freeifaddrs(list);
  return out;
}

std::string CanonicalAddress(const std::string& text) {
  unsigned char bytes[sizeof(in6_addr)];
  char out[INET6_ADDRSTRLEN] = {};
  if (::inet_pton(AF_INET, text.c_str(), bytes) == 1) {
    ::inet_ntop(AF_INET, bytes, out, sizeof(out));
  } else if (::inet_pton(AF_INET6, text.c_str(), bytes) == 1) {
    ::inet_ntop(AF_INET6, bytes, out, sizeof(out));
  }
  return out;
}

std::optional<RailBinding> BindingOfFabricPort(
    const Sysfs& sysfs, const std::vector<InterfaceAddress>& addresses,
    const std::string& device, int port, const std::string& want,
    std::string* error) {
  const auto netdevs = NetdevsOfFabricPort(sysfs, device, port, error);
  if (!netdevs) return std::nullopt;
  return BindingOfNetdevs(*netdevs, addresses,
                          device + " port " + std::to_string(port), want,
                          error);
}

std::optional<RailBinding> BindingOfNetdevs(
    const std::vector<std::string>& netdevs,
    const std::vector<InterfaceAddress>& addresses, const std::string& what,
    const std::string& want, std::string* error) {
  // Best first: IPv4, then global IPv6, netdev by netdev.
  for (const auto& netdev : netdevs) {
    for (const bool ipv6 : {false, true}) {
      for (const auto& a : addresses) {
        if (a.netdev != netdev || a.ipv6 != ipv6) continue;
        if (!want.empty() ? a.address == want : !a.link_local) {
          return RailBinding{netdev, a.address, a.ipv6};
        }
      }
    }
  }
  if (!want.empty()) {
    std::string owner;
    for (const auto& a : addresses) {
      if (a.address == want) owner = a.netdev;
    }
    *error = "listen_address " + want + " is not on " + what + "'s netdev " +
             Joined(netdevs) +
             (owner.empty() ? std::string(" (no netdev has it)")
                            : " (it is " + owner + "'s)");
    return std::nullopt;
  }
  *error = what + ": netdev " + Joined(netdevs) +
           " has no IPv4 or global IPv6 address";
  return std::nullopt;
}

}  // namespace fabric
