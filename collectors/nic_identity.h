// Identifies NVIDIA/Mellanox ConnectX and BlueField devices, and the
// nic_identity collector that exports the result as
// fabric_device_model_info{device,model,family,pci_device_id,mode,bond}.
//
// Keys, in order (counters-and-probes.md B.5; kernel mlx5 main.c PCI table):
//   1. the PCI device id in class/infiniband/<dev>/device/device (vendor
//      0x15b3 in device/vendor), when the tree has it;
//   2. hca_type ("MT%d" of the PCI device id in decimal, mlx5 hca_type_show).
// A bond device (mlx5_bond_N, RoCE LAG) reports the first PF's hca_type, so
// it identifies like its PFs; bond="1" marks it.
//
// DPU vs NIC mode: mode="dpu" only when a netdev of the device
// (device/net/*) has its eswitch in switchdev (class/net/<if>/compat/devlink/
// mode == "switchdev", MLNX_OFED) or is the host-PF representor
// (phys_port_name pf<N>hpf): both exist only on the Arm (ECPF) side of a
// BlueField in DPU mode. From the host, a
// BlueField in NIC mode and one in DPU mode expose the same PCI id and
// sysfs, so mode="unknown" there; ConnectX devices are mode="nic".
//
// Thread-safety: IdentifyDevice is pure; the collector follows Collector.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/collector.h"

namespace fabric {

struct DeviceModel {
  std::string model;   // "ConnectX-7", "BlueField-3", ...
  std::string family;  // "connectx" or "bluefield"
  std::uint32_t pci_device_id = 0;
};

// Parses "MT4129" (hca_type) -> 4129, tolerating whitespace/newline.
std::optional<std::uint32_t> ParseHcaType(std::string_view text);
// Parses "0xa2dc\n" (PCI sysfs `device`) -> 0xa2dc.
std::optional<std::uint32_t> ParsePciId(std::string_view text);

// The model for a Mellanox/NVIDIA PCI device id, or nullopt when unknown.
std::optional<DeviceModel> ModelForPciId(std::uint32_t device_id);

// The model of RDMA device `device` by the keys above (PCI id, then
// hca_type), read through `reader`; nullopt for a device we do not know.
// `skips`, when not null, counts a PCI id file that is not one. Shared with
// the fabric_class collector.
std::optional<DeviceModel> IdentifyDevice(SysfsReader& reader,
                                          const std::string& device,
                                          MetricSink* skips);

std::unique_ptr<Collector> MakeNicIdentityCollector(
    const CollectorEnv& env, const CollectorConfig& config);
// The registry row: no settings of its own.
CollectorSpec NicIdentityCollectorSpec();

}  // namespace fabric
