#include "collectors/fabric_class.h"

#include "collectors/fabric_class_rules.h"
#include "collectors/nic_identity.h"
#include "config/yaml_keys.h"
#include "sources/ib_walk.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// GID table slots looked at for the RoCE network: the kernel fills the
// table from index 0 and a port's addresses sit in the first few.
constexpr int kGidSlots = 16;

class FabricClassCollector final : public Collector {
 public:
  FabricClassCollector(CollectorEnv env, DeviceFilter devices,
                       FabricClassSettings settings)
      : env_(std::move(env)),
        devices_(std::move(devices)),
        settings_(std::move(settings)) {}
  std::string_view Name() const override { return "fabric_class"; }

  bool Collect(MetricSink& sink) override {
    if (!reader_) reader_ = env_.sysfs->NewReader();
    reader_->Begin();
    const IbPortList walk = ListIbPorts(*reader_, devices_, &sink);
    if (walk.error) return walk.error == std::errc::no_such_file_or_directory;
    for (const IbDevicePorts& dev : walk.devices) {
      auto model = IdentifyDevice(*reader_, dev.device, nullptr);
      const std::string fw = Attr(dev.dir, "fw_ver");
      std::string guid;
      if (auto g = reader_->ReadFixed(dev.dir, "node_guid"); g.ok()) {
        if (auto parsed = ParseGuid(*g); parsed.ok()) {
          guid = FormatGuid(parsed.value);
        }
      }
      for (const std::string& port : dev.ports) {
        const std::string pdir = dev.dir + "/ports/" + port;
        RailFacts facts;
        facts.link_layer = Attr(pdir, "link_layer");
        if (model) facts.model = model->model;
        const bool ib = facts.link_layer == "InfiniBand";
        if (!ib) {
          facts.adaptive_retransmission =
              reader_->Read(pdir, "hw_counters/roce_adp_retrans").ok();
          facts.cc = Cc(dev.dir, pdir);
        }
        auto cls = ClassifyRail(facts);
        if (!cls) {
          sink.Skip(pdir + "/link_layer: neither InfiniBand nor Ethernet");
          continue;
        }
        sink.Gauge(
            "fabric_port_fabric_class",
            "The fabric class of the rail (infiniband, roce_spectrum_x, "
            "roce), the rule that decided it (reason), the fabric it is on "
            "and the facts behind it; always 1 (docs/fabric-class.md).",
            {{"device", dev.device},
             {"port", port},
             {"class", cls->fabric_class},
             {"reason", cls->reason},
             {"fabric", ib ? IbFabric(pdir) : RoceFabric(pdir)},
             {"model", facts.model},
             {"fw_ver", fw},
             {"node_guid", guid},
             {"cc", ib ? "" : std::string(CcLabel(facts.cc))},
             {"adaptive_retransmission",
              ib ? "" : (facts.adaptive_retransmission ? "1" : "0")}},
            1);
      }
    }
    return true;
  }

 private:
  std::string Attr(std::string_view dir, std::string_view name) {
    auto text = reader_->Read(dir, name);
    return text.ok() ? std::string(TrimValue(*text)) : std::string();
  }

  // The port's netdevs (gid_attrs/ndevs/0, else the device's device/net/*)
  // and, for a bonding master (RoCE LAG), its slaves: MLNX_OFED puts the
  // ecn/ tree on the physical functions.
  std::vector<std::string> Netdevs(const std::string& ddir,
                                   const std::string& pdir) {
    std::vector<std::string> out;
    if (auto nd = reader_->Read(pdir, "gid_attrs/ndevs/0"); nd.ok()) {
      out.emplace_back(TrimValue(*nd));
    } else if (const auto* nets =
                   reader_->List(ddir + "/device/net", false, nullptr)) {
      out = *nets;
    }
    const std::size_t own = out.size();
    for (std::size_t i = 0; i < own; ++i) {
      auto slaves = reader_->Read("class/net/" + out[i], "bonding/slaves");
      if (!slaves.ok()) continue;
      std::string_view rest = TrimValue(*slaves);
      while (!rest.empty()) {
        const auto sp = rest.find(' ');
        out.emplace_back(rest.substr(0, sp));
        rest = sp == std::string_view::npos ? "" : rest.substr(sp + 1);
      }
    }
    return out;
  }

  // On when every ecn/roce_{np,rp}/enable/<prio> file found says 1, off when
  // one says 0, unknown when there is none.
  CcState Cc(const std::string& ddir, const std::string& pdir) {
    const std::string prio = std::to_string(settings_.lossless_priority);
    CcState state = CcState::kUnknown;
    for (const std::string& nd : Netdevs(ddir, pdir)) {
      for (const char* point : {"roce_np", "roce_rp"}) {
        auto v = reader_->Read("class/net/" + nd,
                               std::string("ecn/") + point + "/enable/" + prio);
        if (!v.ok()) continue;
        if (TrimValue(*v) != "1") return CcState::kOff;
        state = CcState::kOn;
      }
    }
    return state;
  }

  std::string IbFabric(const std::string& pdir) {
    if (!settings_.ib_fabric.empty()) return settings_.ib_fabric;
    auto gid = reader_->Read(pdir, "gids/0");
    auto prefix = gid.ok() ? IbSubnetPrefix(*gid) : std::nullopt;
    return "ib:" + prefix.value_or("unknown");
  }

  std::string RoceFabric(const std::string& pdir) {
    if (!settings_.roce_fabric.empty()) return settings_.roce_fabric;
    std::optional<std::string> first;
    for (int i = 0; i < kGidSlots; ++i) {
      const std::string n = std::to_string(i);
      auto type = reader_->Read(pdir, "gid_attrs/types/" + n);
      if (!type.ok() || TrimValue(*type) != "RoCE v2") continue;
      auto gid = reader_->Read(pdir, "gids/" + n);
      if (!gid.ok()) continue;
      auto net = RoceNetwork(*gid, settings_.roce_prefix_length);
      if (!net) continue;
      // An IPv4 network names the fabric better than a link-local /64.
      if (net->find('.') != std::string::npos) return "roce:" + *net;
      if (!first) first = net;
    }
    return "roce:" + first.value_or("unknown");
  }

  CollectorEnv env_;
  DeviceFilter devices_;
  FabricClassSettings settings_;
  std::unique_ptr<SysfsReader> reader_;
};

}  // namespace

std::vector<RailSummary> ReadRailClasses(const CollectorEnv& env) {
  std::vector<RailSummary> out;
  FabricClassCollector c(env, {}, {});
  MetricSink sink;
  try {
    c.Collect(sink);
  } catch (const std::exception&) {
    return out;  // an unreadable tree: no rails (the caller says unknown)
  }
  for (const auto& f : sink.Take()) {
    for (const auto& m : f.metric) {
      RailSummary r;
      for (const auto& l : m.label) {
        if (l.name == "device") r.device = l.value;
        if (l.name == "port") r.port = l.value;
        if (l.name == "class") r.fabric_class = l.value;
        if (l.name == "fabric") r.fabric = l.value;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::unique_ptr<Collector> MakeFabricClassCollector(
    const CollectorEnv& env, const CollectorConfig& config) {
  return std::make_unique<FabricClassCollector>(
      env, config.devices, SettingsAs<FabricClassSettings>(config));
}

CollectorSpec FabricClassCollectorSpec() {
  CollectorSpec spec;
  spec.name = "fabric_class";
  // What decides a class changes with a driver reload or an administrator's
  // configuration, not by the second.
  spec.interval = std::chrono::minutes(1);
  spec.keys = {"lossless_priority", "ib_fabric", "roce_fabric",
               "roce_prefix_length"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    FabricClassSettings s;
    config_keys::ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark&) {
          if (key == "lossless_priority") {
            s.lossless_priority = static_cast<int>(config_keys::Integer(
                value, key_path, 0, 7, "a priority (0-7, e.g. 3)"));
          } else if (key == "ib_fabric") {
            s.ib_fabric =
                value.IsNull() ? "" : config_keys::Scalar(value, key_path);
          } else if (key == "roce_fabric") {
            s.roce_fabric =
                value.IsNull() ? "" : config_keys::Scalar(value, key_path);
          } else if (key == "roce_prefix_length") {
            s.roce_prefix_length = static_cast<int>(
                config_keys::Integer(value, key_path, 0, 32,
                                     "an IPv4 prefix length (0-32, e.g. 24)"));
          }
        });
    return std::make_shared<SettingsOf<FabricClassSettings>>(std::move(s));
  };
  spec.make = MakeFabricClassCollector;
  return spec;
}

}  // namespace fabric
