#include "sources/ib_walk.h"

#include <algorithm>
#include <string_view>

namespace fabric {
namespace {

constexpr std::string_view kClassDir = "class/infiniband";
constexpr std::string_view kPorts = "/ports";

// A port directory's name: the port number in decimal ("%u" in the
// kernel). A plain digit check: this runs for every port of every poll of
// the congestion collector.
bool IsPortNumber(std::string_view name) {
  return !name.empty() && name.size() <= 19 &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool IsAbsent(const std::error_code& error) {
  return error == std::errc::no_such_file_or_directory ||
         error == std::errc::not_a_directory;
}

// Lists class/infiniband; sets `ok` and `error` as IbDeviceList says.
const std::vector<std::string>* ListClass(SysfsReader& reader,
                                          MetricSink* skips, bool& ok,
                                          std::error_code& error) {
  error.clear();
  ok = true;
  // Not stable: devices come and go without class/infiniband changing.
  const auto* names = reader.List(kClassDir, /*stable=*/false, &error);
  if (names) {
    error.clear();
  } else if (!IsAbsent(error)) {
    if (skips) skips->Skip(std::string(kClassDir) + ": " + error.message());
    ok = false;
  }
  return names;
}

}  // namespace

std::string IbDevicePath(const std::string& device) {
  std::string out;
  out.reserve(kClassDir.size() + 1 + device.size());
  out.append(kClassDir);
  out.push_back('/');
  out.append(device);
  return out;
}

IbDeviceList ListIbDevices(SysfsReader& reader, const DeviceFilter& filter,
                           MetricSink* skips) {
  IbDeviceList out;
  const auto* names = ListClass(reader, skips, out.ok, out.error);
  if (!names) return out;
  for (const auto& name : *names) {
    if (filter.Allows(name)) out.devices.push_back(name);
  }
  return out;
}

IbPortList ListIbPorts(SysfsReader& reader, const DeviceFilter& filter,
                       MetricSink* skips) {
  IbPortList out;
  ListIbPorts(reader, filter, skips, out);
  return out;
}

void ListIbPorts(SysfsReader& reader, const DeviceFilter& filter,
                 MetricSink* skips, IbPortList& out) {
  // Entries are overwritten in place (assign() keeps a string's buffer),
  // and only those past the last device found are dropped.
  std::size_t used = 0;
  const auto* names = ListClass(reader, skips, out.ok, out.error);
  if (!names) {
    out.devices.clear();
    return;
  }
  for (const auto& name : *names) {
    if (!filter.Allows(name)) continue;
    if (used == out.devices.size()) out.devices.emplace_back();
    IbDevicePorts& device = out.devices[used];
    if (device.device != name) {  // else `dir` is still this device's
      device.device.assign(name);
      device.dir.assign(kClassDir);
      device.dir.push_back('/');
      device.dir.append(name);
    }
    device.dir.append(kPorts);
    // ports/<n> exist from the device's registration to its removal.
    const auto* entries = reader.List(device.dir, /*stable=*/true, nullptr);
    device.dir.resize(device.dir.size() - kPorts.size());
    if (!entries) {
      if (skips) skips->Skip(device.dir + ": ports/ not listable");
      continue;
    }
    device.ports.clear();
    for (const auto& entry : *entries) {
      if (IsPortNumber(entry)) device.ports.push_back(entry);
    }
    std::sort(device.ports.begin(), device.ports.end(),
              [](const auto& a, const auto& b) {
                return a.size() != b.size() ? a.size() < b.size() : a < b;
              });
    ++used;
  }
  out.devices.resize(used);
}

}  // namespace fabric
