#include "sources/port_map.h"

#include <algorithm>
#include <chrono>

#include "sources/ib_walk.h"
#include "sources/netdev_port.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// Bounds on what one answer reads, against odd or hostile trees.
constexpr std::size_t kMaxGidEntries = 1024;
constexpr std::size_t kMaxSlaves = 16;
constexpr std::size_t kMaxNetdevs = 4096;

const std::string kNone;

class NameList {
 public:
  explicit NameList(std::vector<std::string>& out) : out_(out) {}
  void Add(std::string_view name, const std::vector<std::string>& also = {}) {
    name = TrimValue(name);
    if (!PlausibleNetdev(name)) return;
    auto has = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    if (!has(out_) && !has(also)) out_.emplace_back(name);
  }

 private:
  std::vector<std::string>& out_;
};

// GID index order: "2" before "10" (the listing is sorted as text).
bool NumericLess(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Step 1: the GID table's netdevs. Its entries are created with the port,
// so the listing is stable.
void FromGidTable(SysfsReader& reader, const std::string& pdir,
                  NameList& names) {
  const std::string ndevs = pdir + "/gid_attrs/ndevs";
  const auto* listed = reader.List(ndevs, /*stable=*/true, nullptr);
  if (!listed) return;
  std::vector<std::string> idx(
      listed->begin(),
      listed->begin() + std::min(listed->size(), kMaxGidEntries));
  std::sort(idx.begin(), idx.end(), NumericLess);
  for (const std::string& i : idx) {
    auto r = reader.Read(ndevs, i);
    if (r.ok()) names.Add(*r);  // unused GID entries fail with EINVAL
  }
}

// Step 2: the device's netdevs that are this port's.
void FromDeviceNet(SysfsReader& reader, const std::string& device,
                   const std::string& port, NameList& names) {
  const std::string net_dir = IbDevicePath(device) + "/device/net";
  // Not stable: netdevs are renamed (udev) and come and go with their
  // driver, independently of the RDMA device.
  const auto* nets = reader.List(net_dir, /*stable=*/false, nullptr);
  if (!nets || nets->empty()) return;
  if (nets->size() == 1) {
    names.Add(nets->front());
    return;
  }
  const auto port_num = ParseU64(port);
  bool told = false;  // some entry has dev_port or dev_id
  std::vector<std::string> mine;
  for (const std::string& net : *nets) {
    if (!PlausibleNetdev(net)) continue;
    const std::string base = net_dir + "/" + net;
    std::optional<std::uint64_t> index;
    if (ReadResult dp = reader.Read(base, "dev_port"); dp.ok()) {
      auto v = ParseU64(*dp);
      if (v.ok()) index = v.value;
      told = true;
    } else if (ReadResult id = reader.Read(base, "dev_id"); id.ok()) {
      auto v = ParseHex(*id);
      if (v.ok()) index = v.value;
      told = true;
    }
    // Ports are numbered from 1, dev_port from 0.
    if (index && port_num.ok() && *index + 1 == port_num.value) {
      mine.push_back(net);
    }
  }
  for (const std::string& net : told ? mine : *nets) names.Add(net);
}

std::string Trimmed(const ReadResult& r) {
  return r.ok() ? std::string(TrimValue(*r)) : std::string();
}

// Step 3: the IPoIB netdevs whose hardware address carries gids/0.
bool FromIpoibAddresses(SysfsReader& reader, const std::string& pdir,
                        NameList& names) {
  const auto g0 = ParseGidText(Trimmed(reader.Read(pdir, "gids/0")));
  if (!g0) return false;
  const auto* nets = reader.List("class/net", /*stable=*/false, nullptr);
  if (!nets) return false;
  std::size_t seen = 0;
  for (const std::string& ifname : *nets) {
    if (++seen > kMaxNetdevs) break;
    if (!PlausibleNetdev(ifname)) continue;
    const std::string net = "class/net/" + ifname;
    if (Trimmed(reader.Read(net, "type")) != "32") continue;
    auto gid = IpoibAddressGid(Trimmed(reader.Read(net, "address")));
    if (gid && *gid == *g0) names.Add(ifname);
  }
  return true;
}

void AddBondSlaves(SysfsReader& reader, PortNetdevs& out) {
  NameList slaves(out.bond_slaves);
  for (const std::string& master : out.netdevs) {
    auto r = reader.Read("class/net/" + master, "bonding/slaves");
    if (!r.ok()) continue;
    std::string_view rest = *r;
    std::size_t count = 0;
    while (!rest.empty() && count < kMaxSlaves) {
      const std::size_t sp = rest.find_first_of(" \n\t");
      const std::string_view name = rest.substr(0, sp);
      if (!name.empty()) {
        slaves.Add(name, out.netdevs);
        ++count;
      }
      rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
    }
  }
}

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const std::string& PortNetdevs::Primary() const {
  return netdevs.empty() ? kNone : netdevs.front();
}

std::vector<std::string> PortNetdevs::All() const {
  std::vector<std::string> out = netdevs;
  out.insert(out.end(), bond_slaves.begin(), bond_slaves.end());
  return out;
}

bool PlausibleNetdev(std::string_view name) {
  return !name.empty() && name.size() < 16 &&
         name.find('/') == std::string_view::npos && name != "." &&
         name != "..";
}

std::string PortPath(const std::string& device, const std::string& port) {
  return IbDevicePath(device) + "/ports/" + port;
}

PortNetdevs ReadPortNetdevs(SysfsReader& reader, const std::string& device,
                            const std::string& port,
                            std::string_view link_layer) {
  PortNetdevs out;
  NameList names(out.netdevs);
  const std::string pdir = PortPath(device, port);
  FromGidTable(reader, pdir, names);
  if (out.netdevs.empty()) FromDeviceNet(reader, device, port, names);
  if (out.netdevs.empty() && link_layer != "Ethernet") {
    out.scanned = FromIpoibAddresses(reader, pdir, names);
  }
  AddBondSlaves(reader, out);
  return out;
}

PortFacts ReadPortFacts(SysfsReader& reader, const std::string& device,
                        const std::string& port) {
  PortFacts f = ReadPortIdentity(reader, device, port);
  f.netdevs = ReadPortNetdevs(reader, device, port, f.link_layer);
  return f;
}

PortFacts ReadPortIdentity(SysfsReader& reader, const std::string& device,
                           const std::string& port) {
  PortFacts f;
  f.device = device;
  f.port = port;
  const std::string ddir = IbDevicePath(device);
  const std::string pdir = PortPath(device, port);
  // link_layer and node_guid are fixed when the device is created.
  f.link_layer = Trimmed(reader.ReadFixed(pdir, "link_layer"));
  if (auto g = ParseGuid(Trimmed(reader.ReadFixed(ddir, "node_guid")));
      g.ok()) {
    f.node_guid = g.value;
  }
  if (auto r = reader.Read(pdir, "gids/0"); r.ok()) {
    if (auto id = ParseGidInterfaceId(*r); id.ok()) f.port_guid = id.value;
  }
  if (auto lid = ParseHex(Trimmed(reader.Read(pdir, "lid")));
      lid.ok() && lid.value < 0x10000) {
    f.lid = static_cast<std::uint16_t>(lid.value);
  }
  if (auto uevent = reader.ReadFixed(ddir, "device/uevent"); uevent.ok()) {
    constexpr std::string_view kKey = "PCI_SLOT_NAME=";
    std::string_view text = *uevent;
    for (std::size_t at = text.find(kKey); at != std::string_view::npos;
         at = text.find(kKey, at + 1)) {
      if (at != 0 && text[at - 1] != '\n') continue;
      std::string_view v = text.substr(at + kKey.size());
      f.pci_address = std::string(TrimValue(v.substr(0, v.find('\n'))));
      break;
    }
  }
  return f;
}

PortMap::PortMap(std::function<double()> now)
    : now_(now ? std::move(now) : SteadySeconds) {}

const PortNetdevs& PortMap::Netdevs(SysfsReader& reader,
                                    const std::string& device,
                                    const std::string& port,
                                    std::string_view link_layer) {
  const double t = now_();
  auto [it, fresh] = entries_.try_emplace({device, port});
  Entry& e = it->second;
  if (!fresh && e.netdevs.scanned && t - e.read_at < kRescanSeconds &&
      std::all_of(e.netdevs.netdevs.begin(), e.netdevs.netdevs.end(),
                  [&](const std::string& n) {
                    return reader.IsDirectory("class/net/" + n);
                  })) {
    return e.netdevs;
  }
  e.netdevs = ReadPortNetdevs(reader, device, port, link_layer);
  e.read_at = t;
  return e.netdevs;
}

}  // namespace fabric
