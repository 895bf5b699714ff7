#include "sources/netdev_port.h"

#include <algorithm>
#include <cstdio>

#include "sources/port_map.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `groups` groups of `digits` hex digits separated by ':' into bytes.
template <std::size_t N>
std::optional<std::array<std::uint8_t, N>> HexGroups(std::string_view text,
                                                     std::size_t digits) {
  text = TrimValue(text);
  const std::size_t groups = N * 2 / digits;
  if (text.size() != groups * digits + groups - 1) return std::nullopt;
  std::array<std::uint8_t, N> out{};
  std::size_t nibble = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((i + 1) % (digits + 1) == 0) {
      if (text[i] != ':') return std::nullopt;
      continue;
    }
    const int d = HexDigit(text[i]);
    if (d < 0) return std::nullopt;
    out[nibble / 2] = static_cast<std::uint8_t>(out[nibble / 2] << 4 | d);
    ++nibble;
  }
  return out;
}

std::uint64_t InterfaceId(const Gid& gid) {
  std::uint64_t v = 0;
  for (int i = 8; i < 16; ++i) v = v << 8 | gid[i];
  return v;
}

std::string Trimmed(const ReadResult& r) {
  return r.ok() ? std::string(TrimValue(*r)) : std::string();
}

}  // namespace

std::optional<Gid> ParseGidText(std::string_view text) {
  return HexGroups<16>(text, 4);
}

std::string FormatGid(const Gid& gid) {
  std::string out;
  char group[8];
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(group, sizeof(group), "%s%02x%02x", i ? ":" : "", gid[i],
                  gid[i + 1]);
    out += group;
  }
  return out;
}

std::optional<Gid> IpoibAddressGid(std::string_view address) {
  auto bytes = HexGroups<20>(address, 2);
  if (!bytes) return std::nullopt;
  Gid gid;
  std::copy(bytes->begin() + 4, bytes->end(), gid.begin());
  return gid;
}

std::optional<NetdevPort> FabricPortOfNetdev(const Sysfs& sysfs,
                                             const std::string& ifname,
                                             std::string* error) {
  error->clear();
  if (ifname.empty() || ifname.find('/') != std::string::npos ||
      ifname == "." || ifname == "..") {
    *error = "bad netdev name";
    return std::nullopt;
  }
  const std::string net = "class/net/" + ifname + "/";
  std::optional<Gid> ipoib_gid;
  if (Trimmed(sysfs.Read(net + "type")) == "32") {
    ipoib_gid = IpoibAddressGid(Trimmed(sysfs.Read(net + "address")));
    if (!ipoib_gid) {
      *error = ifname + ": IPoIB netdev without a readable address";
      return std::nullopt;
    }
  }
  std::error_code ec;
  const auto devices = sysfs.List("class/infiniband", &ec);
  if (!devices) return std::nullopt;  // no RDMA devices: no fabric port
  for (const std::string& dev : *devices) {
    const std::string base = "class/infiniband/" + dev + "/";
    const auto ports = sysfs.List(base + "ports");
    if (!ports) continue;
    for (const std::string& p : *ports) {
      const std::string port = base + "ports/" + p + "/";
      std::optional<Gid> gid;
      if (ipoib_gid) {
        auto g0 = ParseGidText(Trimmed(sysfs.Read(port + "gids/0")));
        if (g0 && *g0 == *ipoib_gid) gid = g0;
      } else if (auto ndevs = sysfs.List(port + "gid_attrs/ndevs")) {
        // The lowest GID index that names the netdev (its link-local one).
        for (const std::string& index : *ndevs) {
          if (Trimmed(sysfs.Read(port + "gid_attrs/ndevs/" + index)) !=
              ifname) {
            continue;
          }
          gid = ParseGidText(Trimmed(sysfs.Read(port + "gids/" + index)));
          if (gid) break;
        }
      }
      if (!gid) continue;
      // The rest is the port map's (sources/port_map.h).
      const auto reader = sysfs.NewReader();
      reader->Begin();
      const PortFacts facts = ReadPortIdentity(*reader, dev, p);
      NetdevPort out;
      out.device = dev;
      const auto num = ParseU64(p);
      out.port = num.ok() && num.value < 256 ? static_cast<int>(num.value) : 0;
      out.link_layer = facts.link_layer;
      out.gid = *gid;
      // IB: gids/0's interface id is the port GUID. A RoCE GID's is made
      // from the MAC or IP address, not a GUID: the GID names the port.
      if (ipoib_gid) out.port_guid = InterfaceId(*gid);
      out.node_guid = facts.node_guid;
      out.lid = facts.lid;
      return out;
    }
  }
  if (ipoib_gid) *error = ifname + ": no RDMA port has its GID";
  return std::nullopt;
}

std::optional<std::vector<std::string>> NetdevsOfFabricPort(
    const Sysfs& sysfs, const std::string& device, int port,
    std::string* error) {
  error->clear();
  const std::string what = device + " port " + std::to_string(port);
  if (device.empty() || device.find('/') != std::string::npos ||
      device == "." || device == "..") {
    *error = "bad RDMA device name \"" + device + "\"";
    return std::nullopt;
  }
  const std::string base = "class/infiniband/" + device + "/";
  if (!sysfs.IsDirectory(base)) {
    const auto devices = sysfs.List("class/infiniband");
    std::string have;
    for (const auto& d : devices.value_or(std::vector<std::string>{})) {
      have += (have.empty() ? "" : ", ") + d;
    }
    *error = "no RDMA device " + device + " (this host has " +
             (have.empty() ? std::string("none") : have) + ")";
    return std::nullopt;
  }
  const std::string dir = base + "ports/" + std::to_string(port) + "/";
  if (!sysfs.IsDirectory(dir)) {
    std::string have;
    for (const auto& p :
         sysfs.List(base + "ports").value_or(std::vector<std::string>{})) {
      have += (have.empty() ? "" : ", ") + p;
    }
    *error = device + " has no port " + std::to_string(port) +
             " (ports: " + (have.empty() ? std::string("none") : have) + ")";
    return std::nullopt;
  }
  // The port map's rule (sources/port_map.h), bond slaves included: a
  // rail binds to the first of them with an address, the master's.
  const auto reader = sysfs.NewReader();
  reader->Begin();
  const std::string link_layer = Trimmed(sysfs.Read(dir + "link_layer"));
  const std::vector<std::string> out =
      ReadPortNetdevs(*reader, device, std::to_string(port), link_layer).All();
  if (out.empty()) {
    *error = what +
             " has no netdev (no IPoIB netdev carries its GID, no RoCE GID "
             "names one)";
    return std::nullopt;
  }
  return out;
}

}  // namespace fabric
