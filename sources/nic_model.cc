#include "sources/nic_model.h"

#include <charconv>

#include "sources/ib_walk.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

struct KnownDevice {
  std::uint32_t id;
  const char* model;
  const char* family;
};

// Mellanox/NVIDIA (vendor 0x15b3) PCI device ids, from the mlx5 and mlx4
// PCI tables in the kernel (drivers/net/ethernet/mellanox/mlx{4,5}/main.c).
constexpr KnownDevice kDevices[] = {
    {0x673c, "ConnectX-2", "connectx"},
    {0x1003, "ConnectX-3", "connectx"},
    {0x1004, "ConnectX-3 VF", "connectx"},
    {0x1007, "ConnectX-3 Pro", "connectx"},
    {0x1011, "Connect-IB", "connectx"},
    {0x1012, "Connect-IB VF", "connectx"},
    {0x1013, "ConnectX-4", "connectx"},
    {0x1014, "ConnectX-4 VF", "connectx"},
    {0x1015, "ConnectX-4 Lx", "connectx"},
    {0x1016, "ConnectX-4 Lx VF", "connectx"},
    {0x1017, "ConnectX-5", "connectx"},
    {0x1018, "ConnectX-5 VF", "connectx"},
    {0x1019, "ConnectX-5 Ex", "connectx"},
    {0x101a, "ConnectX-5 Ex VF", "connectx"},
    {0x101b, "ConnectX-6", "connectx"},
    {0x101c, "ConnectX-6 VF", "connectx"},
    {0x101d, "ConnectX-6 Dx", "connectx"},
    {0x101e, "ConnectX VF", "connectx"},  // mlx5 Gen VF (CX-6 Dx and later)
    {0x101f, "ConnectX-6 Lx", "connectx"},
    {0x1021, "ConnectX-7", "connectx"},
    {0x1023, "ConnectX-8", "connectx"},
    {0xa2d2, "BlueField", "bluefield"},
    {0xa2d3, "BlueField VF", "bluefield"},
    {0xa2d6, "BlueField-2", "bluefield"},
    {0xa2dc, "BlueField-3", "bluefield"},
    {0xa2df, "BlueField-4", "bluefield"},
};

std::optional<std::uint32_t> ParseNumber(std::string_view s, int base) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<std::uint32_t> ParseHcaType(std::string_view text) {
  text = TrimValue(text);
  if (!text.starts_with("MT")) return std::nullopt;
  return ParseNumber(text.substr(2), 10);
}

std::optional<std::uint32_t> ParsePciId(std::string_view text) {
  text = TrimValue(text);
  if (!text.starts_with("0x") && !text.starts_with("0X")) return std::nullopt;
  text.remove_prefix(2);
  if (text.size() > 4) return std::nullopt;
  return ParseNumber(text, 16);
}

std::optional<DeviceModel> IdentifyDevice(SysfsReader& reader,
                                          const std::string& device,
                                          MetricSink* skips) {
  const std::string base = IbDevicePath(device);
  std::optional<std::uint32_t> id;
  // PCI ids and hca_type are fixed when the device is created.
  auto vendor = reader.ReadFixed(base, "device/vendor");
  auto pci = reader.ReadFixed(base, "device/device");
  if (pci.ok() && (!vendor.ok() || ParsePciId(*vendor) == 0x15b3u)) {
    id = ParsePciId(*pci);
    if (!id && skips) skips->Skip(base + "/device/device: not a PCI id");
  }
  if (!id) {
    auto hca = reader.ReadFixed(base, "hca_type");
    if (hca.ok()) id = ParseHcaType(*hca);
  }
  if (!id) return std::nullopt;
  return ModelForPciId(*id);
}

std::optional<DeviceModel> ModelForPciId(std::uint32_t device_id) {
  for (const KnownDevice& d : kDevices) {
    if (d.id == device_id) return DeviceModel{d.model, d.family, d.id};
  }
  return std::nullopt;
}

}  // namespace fabric
