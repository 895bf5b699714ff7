#include "collectors/fabric_class.h"

#include "config/yaml_keys.h"
#include "sources/rail_class.h"

namespace fabric {
namespace {

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
    const RailList list = ClassifyRails(*reader_, devices_, settings_, &sink);
    if (list.error) return list.error == std::errc::no_such_file_or_directory;
    for (const Rail& r : list.rails) {
      const bool ib = r.facts.link_layer == "InfiniBand";
      sink.Gauge(
          "fabric_port_fabric_class",
          "The fabric class of the rail (infiniband, roce_spectrum_x, "
          "roce), the rule that decided it (reason), the fabric it is on "
          "and the facts behind it; always 1 (docs/fabric-class.md).",
          {{"device", r.device},
           {"port", r.port},
           {"class", r.rail_class.fabric_class},
           {"reason", r.rail_class.reason},
           {"fabric", r.fabric},
           {"model", r.facts.model},
           {"fw_ver", r.fw_ver},
           {"node_guid", r.node_guid},
           {"cc", ib ? "" : std::string(CcLabel(r.facts.cc))},
           {"adaptive_retransmission",
            ib ? "" : (r.facts.adaptive_retransmission ? "1" : "0")}},
          1);
    }
    return true;
  }

 private:
  CollectorEnv env_;
  DeviceFilter devices_;
  FabricClassSettings settings_;
  std::unique_ptr<SysfsReader> reader_;
};

}  // namespace

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
