#include "sources/rail_class.h"

#include <array>
#include <charconv>
#include <cstdint>

#include "sources/ib_walk.h"
#include "sources/nic_model.h"
#include "sources/port_map.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// "xxxx:xxxx:...:xxxx" (8 groups of 4 hex digits, sysfs gids/<n>).
std::optional<std::array<std::uint16_t, 8>> ParseGid(std::string_view text) {
  text = TrimValue(text);
  if (text.size() != 39) return std::nullopt;
  std::array<std::uint16_t, 8> groups{};
  for (int i = 0; i < 8; ++i) {
    std::string_view g = text.substr(i * 5, 4);
    if (i < 7 && text[i * 5 + 4] != ':') return std::nullopt;
    auto [end, ec] = std::from_chars(g.data(), g.data() + 4, groups[i], 16);
    if (ec != std::errc() || end != g.data() + 4) return std::nullopt;
  }
  return groups;
}

// GID table slots looked at for the RoCE network: the kernel fills the
// table from index 0 and a port's addresses sit in the first few.
constexpr int kGidSlots = 16;

std::string Attr(SysfsReader& reader, std::string_view dir,
                 std::string_view name) {
  auto text = reader.Read(dir, name);
  return text.ok() ? std::string(TrimValue(*text)) : std::string();
}

// On when every ecn/roce_{np,rp}/enable/<prio> file found on the port's
// netdevs (a bond's slaves included: MLNX_OFED puts the ecn/ tree on the
// physical functions) says 1, off when one says 0, unknown when there is
// none.
CcState Cc(SysfsReader& reader, const std::string& device,
           const std::string& port, int lossless_priority) {
  const std::string prio = std::to_string(lossless_priority);
  CcState state = CcState::kUnknown;
  for (const std::string& nd :
       ReadPortNetdevs(reader, device, port, "Ethernet").All()) {
    for (const char* point : {"roce_np", "roce_rp"}) {
      auto v = reader.Read("class/net/" + nd,
                           std::string("ecn/") + point + "/enable/" + prio);
      if (!v.ok()) continue;
      if (TrimValue(*v) != "1") return CcState::kOff;
      state = CcState::kOn;
    }
  }
  return state;
}

std::string IbFabric(SysfsReader& reader, const std::string& pdir,
                     const FabricClassSettings& settings) {
  if (!settings.ib_fabric.empty()) return settings.ib_fabric;
  auto gid = reader.Read(pdir, "gids/0");
  auto prefix = gid.ok() ? IbSubnetPrefix(*gid) : std::nullopt;
  return "ib:" + prefix.value_or("unknown");
}

std::string RoceFabric(SysfsReader& reader, const std::string& pdir,
                       const FabricClassSettings& settings) {
  if (!settings.roce_fabric.empty()) return settings.roce_fabric;
  std::optional<std::string> first;
  for (int i = 0; i < kGidSlots; ++i) {
    const std::string n = std::to_string(i);
    auto type = reader.Read(pdir, "gid_attrs/types/" + n);
    if (!type.ok() || TrimValue(*type) != "RoCE v2") continue;
    auto gid = reader.Read(pdir, "gids/" + n);
    if (!gid.ok()) continue;
    auto net = RoceNetwork(*gid, settings.roce_prefix_length);
    if (!net) continue;
    // An IPv4 network names the fabric better than a link-local /64.
    if (net->find('.') != std::string::npos) return "roce:" + *net;
    if (!first) first = net;
  }
  return "roce:" + first.value_or("unknown");
}

}  // namespace

bool IsSuperNicClass(std::string_view model) {
  return model == "BlueField-3" || model == "BlueField-4" ||
         model == "ConnectX-8";
}

std::string_view CcLabel(CcState cc) {
  switch (cc) {
    case CcState::kOn:
      return "on";
    case CcState::kOff:
      return "off";
    case CcState::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<RailClass> ClassifyRail(const RailFacts& f) {
  // Rule 1: the port's link layer. IB needs no more: every IB port is on
  // an InfiniBand subnet whatever the HCA.
  if (f.link_layer == "InfiniBand") {
    return RailClass{"infiniband", "link_layer_infiniband"};
  }
  if (f.link_layer != "Ethernet") return std::nullopt;
  // Rule 2: Spectrum-X's congestion control and adaptive routing need a
  // SuperNIC-class endpoint; anything else is plain RoCE whatever its
  // configuration.
  if (f.model.empty()) return RailClass{"roce", "nic_unknown"};
  if (!IsSuperNicClass(f.model)) return RailClass{"roce", "nic_not_supernic"};
  // Rule 3: the firmware's RoCE acceleration (adaptive retransmission,
  // tolerating the out-of-order arrival adaptive routing causes).
  if (!f.adaptive_retransmission) {
    return RailClass{"roce", "no_adaptive_retransmission"};
  }
  // Rule 4: congestion control on the lossless priority. Not visible (no
  // ecn/ tree: upstream driver, recorded tree) is not proof: plain RoCE.
  if (f.cc == CcState::kOff) return RailClass{"roce", "cc_off"};
  if (f.cc == CcState::kUnknown) return RailClass{"roce", "cc_not_visible"};
  return RailClass{"roce_spectrum_x", "supernic_cc_adaptive_retransmission"};
}

std::optional<std::string> IbSubnetPrefix(std::string_view gid) {
  if (!ParseGid(gid)) return std::nullopt;
  return std::string(TrimValue(gid).substr(0, 19));
}

std::optional<std::string> RoceNetwork(std::string_view gid,
                                       int ipv4_prefix_length) {
  auto g = ParseGid(gid);
  if (!g) return std::nullopt;
  const auto& w = *g;
  if (w == std::array<std::uint16_t, 8>{}) return std::nullopt;
  const bool v4 = w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == 0 &&
                  w[4] == 0 && w[5] == 0xffff;
  if (!v4) return std::string(TrimValue(gid).substr(0, 19)) + "::/64";
  std::uint32_t addr = (std::uint32_t{w[6]} << 16) | w[7];
  const int len = ipv4_prefix_length;
  const std::uint32_t mask =
      len <= 0 ? 0 : (len >= 32 ? ~0u : ~((1u << (32 - len)) - 1));
  addr &= mask;
  return std::to_string(addr >> 24) + "." + std::to_string((addr >> 16) & 255) +
         "." + std::to_string((addr >> 8) & 255) + "." +
         std::to_string(addr & 255) + "/" + std::to_string(len);
}

RailList ClassifyRails(SysfsReader& reader, const DeviceFilter& devices,
                       const FabricClassSettings& settings, MetricSink* skips) {
  RailList out;
  const IbPortList walk = ListIbPorts(reader, devices, skips);
  out.error = walk.error;
  if (walk.error) return out;
  for (const IbDevicePorts& dev : walk.devices) {
    auto model = IdentifyDevice(reader, dev.device, nullptr);
    const std::string fw = Attr(reader, dev.dir, "fw_ver");
    std::string guid;
    if (auto g = reader.ReadFixed(dev.dir, "node_guid"); g.ok()) {
      if (auto parsed = ParseGuid(*g); parsed.ok()) {
        guid = FormatGuid(parsed.value);
      }
    }
    for (const std::string& port : dev.ports) {
      const std::string pdir = dev.dir + "/ports/" + port;
      Rail rail;
      rail.device = dev.device;
      rail.port = port;
      RailFacts& facts = rail.facts;
      facts.link_layer = Attr(reader, pdir, "link_layer");
      if (model) facts.model = model->model;
      const bool ib = facts.link_layer == "InfiniBand";
      if (!ib) {
        facts.adaptive_retransmission =
            reader.Read(pdir, "hw_counters/roce_adp_retrans").ok();
        facts.cc = Cc(reader, dev.device, port, settings.lossless_priority);
      }
      auto cls = ClassifyRail(facts);
      if (!cls) {
        if (skips) {
          skips->Skip(pdir + "/link_layer: neither InfiniBand nor Ethernet");
        }
        continue;
      }
      rail.rail_class = std::move(*cls);
      rail.fabric = ib ? IbFabric(reader, pdir, settings)
                       : RoceFabric(reader, pdir, settings);
      rail.fw_ver = fw;
      rail.node_guid = guid;
      out.rails.push_back(std::move(rail));
    }
  }
  return out;
}

std::vector<RailSummary> ReadRailSummaries(const Sysfs& sysfs) {
  std::vector<RailSummary> out;
  try {
    const auto reader = sysfs.NewReader();
    reader->Begin();
    for (Rail& r : ClassifyRails(*reader, {}, {}, nullptr).rails) {
      out.push_back({std::move(r.device), std::move(r.port),
                     std::move(r.rail_class.fabric_class),
                     std::move(r.fabric)});
    }
  } catch (const std::exception&) {
    out.clear();  // an unreadable tree: no rails (the caller says unknown)
  }
  return out;
}

}  // namespace fabric
