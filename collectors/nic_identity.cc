#include "collectors/nic_identity.h"

#include <cstdio>

#include "sources/ib_walk.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

std::string Hex4(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

class NicIdentityCollector final : public Collector {
 public:
  NicIdentityCollector(CollectorEnv env, DeviceFilter devices)
      : env_(std::move(env)), devices_(std::move(devices)) {}
  std::string_view Name() const override { return "nic_identity"; }

  bool Collect(MetricSink& sink) override { return CollectImpl(sink); }

 private:
  bool CollectImpl(MetricSink& sink) {
    if (!reader_) reader_ = env_.sysfs->NewReader();
    reader_->Begin();
    // Only the devices: nothing here is per port.
    const IbDeviceList list = ListIbDevices(*reader_, devices_);
    if (list.error) return list.error == std::errc::no_such_file_or_directory;
    for (const std::string& dev : list.devices) {
      auto model = IdentifyDevice(*reader_, dev, &sink);
      if (!model) continue;  // not a device we know: no info, no error
      sink.Gauge(
          "fabric_device_model_info",
          "Product identified from the PCI device id (device/device) "
          "or hca_type; mode is nic, dpu (eswitch in switchdev, the "
          "BlueField Arm side) or unknown (BlueField seen from the "
          "host).",
          {{"device", dev},
           {"model", model->model},
           {"family", model->family},
           {"pci_device_id", Hex4(model->pci_device_id)},
           {"mode", Mode(dev, *model)},
           {"bond", dev.find("_bond_") != std::string::npos ? "1" : "0"}},
          1);
    }
    return true;
  }

  std::string Mode(const std::string& dev, const DeviceModel& model) const {
    if (model.family != "bluefield") return "nic";
    // Not stable: netdevs are renamed and come and go with their driver.
    const auto* nets =
        reader_->List(IbDevicePath(dev) + "/device/net", false, nullptr);
    if (nets) {
      for (const std::string& nd : *nets) {
        const std::string net = "class/net/" + nd;
        // The eswitch mode changes at run time (devlink): read every time.
        auto mode = reader_->Read(net, "compat/devlink/mode");
        if (mode.ok() && TrimValue(*mode) == "switchdev") return "dpu";
        // The host-PF representor (pf0hpf, pf1hpf) exists only on the Arm
        // side of a DPU; upstream kernels have no compat/devlink/mode file.
        auto name = reader_->Read(net, "phys_port_name");
        std::string_view pn = name.ok() ? TrimValue(*name) : "";
        if (pn.starts_with("pf") && pn.ends_with("hpf")) return "dpu";
      }
    }
    return "unknown";
  }

  CollectorEnv env_;
  DeviceFilter devices_;
  // Created on the first Collect(); every sysfs read of a collection goes
  // through it (sources/sysfs.h).
  std::unique_ptr<SysfsReader> reader_;
};

}  // namespace

std::unique_ptr<Collector> MakeNicIdentityCollector(
    const CollectorEnv& env, const CollectorConfig& config) {
  return std::make_unique<NicIdentityCollector>(env, config.devices);
}

CollectorSpec NicIdentityCollectorSpec() {
  CollectorSpec spec;
  spec.name = "nic_identity";
  // A device's product never changes while it exists: reading it every
  // second only costs CPU and wake-ups on a GPU node. A new device gets
  // its model series within a minute.
  spec.interval = std::chrono::minutes(1);
  spec.make = MakeNicIdentityCollector;
  return spec;
}

}  // namespace fabric
