// The product of an NVIDIA/Mellanox RDMA device (ConnectX, BlueField), by
// these keys, in order (counters-and-probes.md B.5; kernel mlx5 main.c PCI
// table):
//   1. the PCI device id in class/infiniband/<dev>/device/device (vendor
//      0x15b3 in device/vendor), when the tree has it;
//   2. hca_type ("MT%d" of the PCI device id in decimal, mlx5 hca_type_show).
// A bond device (mlx5_bond_N, RoCE LAG) reports the first PF's hca_type, so
// it identifies like its PFs. Used by the nic_identity collector and the
// rail classification (sources/rail_class.h).
//
// Thread-safety: pure functions (IdentifyDevice reads through the caller's
// SysfsReader).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/metric_sink.h"
#include "sources/sysfs.h"

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
// `skips`, when not null, counts a PCI id file that is not one. Shared by the
// nic_identity collector and the rail classification
// (sources/rail_class.h).
std::optional<DeviceModel> IdentifyDevice(SysfsReader& reader,
                                          const std::string& device,
                                          MetricSink* skips);

}  // namespace fabric
