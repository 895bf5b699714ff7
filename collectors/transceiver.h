// transceiver collector: the optical/copper module in each port's cage, read
// from its EEPROM (sources/module_eeprom.h, parsed by
// sources/transceiver_parse.h): temperature, supply voltage, per-lane Tx/Rx
// optical power and Tx bias, the module's own alarm/warning thresholds and
// latched flags, and its identity as an info series.
//
// Which netdevs: those backing Ethernet (RoCE) RDMA ports (the roce
// collector's discovery, without its config extras), and for InfiniBand
// ports their IPoIB netdevs by the port map's rule (sources/port_map.h;
// mlx5 answers module EEPROM requests there on kernels that route them;
// others answer EOPNOTSUPP: absent). Only netdevs in the tree's
// class/net whose kernel address (ModuleEepromSource::HwAddress) is the
// tree's class/net/<if>/address; a collector whose ethtool is not the
// kernel's (config `ethtool_dir`, --simulate) reads nothing, as DCB and FEC,
// unless `eeprom_dir` names module images to read instead.
//
// Module EEPROM reads are slow I2C behind firmware (tens of ms a page, up to
// five pages a module): default interval 60 s, and the collection stops
// starting new modules once `budget` has passed (the rest are skipped with
// reason "deadline", read next time), so it ends before the poller's
// deadline. The latched flags clear when read: a flag is seen by one
// reading.
//
// Skipped modules (truncated lower page, unknown identifier, not ready,
// read error, deadline) count in fabric_transceiver_modules_skipped_total
// {reason} (exported once a collection found a netdev to read) and
// fabric_collector_skipped_inputs.
//
// Thread-safety: one Collect() at a time per instance (collector.h); the
// source is owned by the instance.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/roce.h"
#include "sources/module_eeprom.h"
#include "sources/transceiver_parse.h"

namespace fabric {

struct TransceiverOptions {
  DeviceFilter devices;
  // Tests: replaces discovery when set.
  std::optional<std::vector<RoceNetdev>> netdevs;
  // No new module is started after this much of a collection has passed.
  std::chrono::microseconds budget = std::chrono::seconds(20);
};

// Reads one module: the lower page, then the upper pages
// ModulePagesToRead names. The error of the lower page's read, if it
// failed; upper pages that fail are left out (`*page_errors` counts them).
Result<ModulePages> ReadModulePages(ModuleEepromSource& source,
                                    const std::string& netdev,
                                    std::size_t* page_errors);

// Writes one module's samples. Pure: exposed for tests.
void EmitTransceiverMetrics(const ModuleReading& reading,
                            const RoceNetdev& where, MetricSink& sink);

// A null source reads nothing (success, no samples).
std::unique_ptr<Collector> MakeTransceiverCollector(
    const CollectorEnv& env, TransceiverOptions options,
    std::unique_ptr<ModuleEepromSource> source);

struct TransceiverSettings {
  // `eeprom_dir`: absolute directory of module images, one file per netdev
  // (MakeFileModuleEepromSource), read instead of the kernel's module
  // EEPROM: for simulated or recorded trees, whose netdevs are not this
  // kernel's. fabricmon-sim writes them to `<host>/eeprom/`. Empty = the
  // kernel (only when the statistics come from it too).
  std::string eeprom_dir;
  bool operator==(const TransceiverSettings&) const = default;
};

// The registry row: interval 60 s, timeout 30 s; key eeprom_dir.
CollectorSpec TransceiverCollectorSpec();

}  // namespace fabric
