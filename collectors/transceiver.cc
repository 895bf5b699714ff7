#include "collectors/transceiver.h"

#include <array>
#include <cstdio>

#include "config/yaml_keys.h"
#include "sources/ib_walk.h"
#include "sources/port_map.h"
#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// Skip reasons, all exported from the first collection on so that
// increase() sees the first skip.
constexpr std::array<const char*, 5> kSkipReasons = {
    "truncated", "unknown_identifier", "not_ready", "read_error", "deadline"};

Labels Base(const RoceNetdev& w) {
  return {{"device", w.device}, {"port", w.port}, {"netdev", w.netdev}};
}

Labels With(Labels l, std::initializer_list<Labels::value_type> extra) {
  l.insert(l.end(), extra.begin(), extra.end());
  return l;
}

std::string Number(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%g", v);
  return b;
}

// Errors that say "no module EEPROM here" rather than "the read failed".
bool Absent(std::error_code e) {
  return e == std::errc::operation_not_supported ||
         e == std::errc::no_such_device || e == std::errc::invalid_argument ||
         e == std::errc::no_such_file_or_directory ||
         e == std::errc::protocol_not_supported;
}

// The netdevs of the allowed devices' InfiniBand ports, by the port map's
// rule (sources/port_map.h).
void AddIbNetdevs(SysfsReader& reader, PortMap& ports, const IbPortList& walk,
                  std::vector<RoceNetdev>& out) {
  for (const IbDevicePorts& dev : walk.devices) {
    for (const std::string& port : dev.ports) {
      auto ll = reader.ReadFixed(PortPath(dev.device, port), "link_layer");
      if (!ll.ok() || TrimValue(*ll) != "InfiniBand") continue;
      for (std::string& n :
           ports.Netdevs(reader, dev.device, port, "InfiniBand").All()) {
        out.push_back({dev.device, port, std::move(n)});
      }
    }
  }
}

class TransceiverCollector final : public Collector {
 public:
  TransceiverCollector(CollectorEnv env, TransceiverOptions options,
                       std::unique_ptr<ModuleEepromSource> source)
      : env_(std::move(env)),
        options_(std::move(options)),
        source_(std::move(source)) {}

  std::string_view Name() const override { return "transceiver"; }

  bool Collect(MetricSink& sink) override {
    if (!source_) return true;
    const double start = env_.clock();
    std::vector<RoceNetdev> targets;
    if (options_.netdevs) {
      targets = *options_.netdevs;
    } else {
      if (!reader_) reader_ = env_.sysfs->NewReader();
      reader_->Begin();
      const IbPortList walk = ListIbPorts(*reader_, options_.devices);
      targets = DiscoverRoceNetdevs(*reader_, options_.devices);
      AddIbNetdevs(*reader_, port_map_, walk, targets);
      std::erase_if(targets, [&](const RoceNetdev& t) {
        if (!reader_->IsDirectory("class/net/" + t.netdev)) return true;
        // Same name, another interface: the tree is a recording or a
        // simulation, not this host (as the roce collector checks).
        const std::string kernel = source_->HwAddress(t.netdev);
        auto tree = reader_->Read("class/net/" + t.netdev, "address");
        return !kernel.empty() && tree.ok() && TrimValue(*tree) != kernel;
      });
    }
    if (!targets.empty()) seen_modules_ = true;
    const double budget =
        std::chrono::duration<double>(options_.budget).count();
    std::size_t failed = 0;
    for (const RoceNetdev& t : targets) {
      if (env_.clock() - start > budget) {
        Skipped(sink, "deadline", t.netdev);
        continue;
      }
      std::size_t page_errors = 0;
      Result<ModulePages> pages =
          ReadModulePages(*source_, t.netdev, &page_errors);
      if (!pages.ok()) {
        if (!Absent(pages.error())) {
          ++failed;
          Skipped(sink, "read_error",
                  t.netdev + ": " + pages.error().message());
        }
        continue;
      }
      for (std::size_t i = 0; i < page_errors; ++i) {
        sink.Skip("transceiver " + t.netdev + ": a page could not be read");
      }
      ModuleParse parsed = ParseModuleEeprom(*pages);
      if (!parsed.reading) {
        Skipped(sink, parsed.skip, t.netdev);
        continue;
      }
      for (std::size_t i = 0; i < parsed.reading->bad_pages; ++i) {
        sink.Skip("transceiver " + t.netdev + ": short page");
      }
      EmitTransceiverMetrics(*parsed.reading, t, sink);
    }
    // Only on hosts with module cages to read: a node without RoCE or
    // IPoIB netdevs shows no transceiver series at all.
    for (std::size_t i = 0; seen_modules_ && i < kSkipReasons.size(); ++i) {
      sink.Counter("fabric_transceiver_modules_skipped_total",
                   "Modules whose EEPROM was not exported, by reason: "
                   "truncated lower page, unknown_identifier (not SFF-8636 "
                   "or CMIS), not_ready, read_error, deadline (collection "
                   "budget spent).",
                   {{"reason", kSkipReasons[i]}},
                   static_cast<double>(skipped_[i]));
    }
    // The source failed as a whole only when every module read failed.
    return targets.empty() || failed < targets.size();
  }

 private:
  void Skipped(MetricSink& sink, std::string_view reason,
               const std::string& what) {
    for (std::size_t i = 0; i < kSkipReasons.size(); ++i) {
      if (reason == kSkipReasons[i]) ++skipped_[i];
    }
    sink.Skip("transceiver " + what + ": " + std::string(reason));
  }

  CollectorEnv env_;
  TransceiverOptions options_;
  std::unique_ptr<ModuleEepromSource> source_;
  std::unique_ptr<SysfsReader> reader_;
  PortMap port_map_;  // IB ports' netdevs (sources/port_map.h)
  std::array<std::uint64_t, kSkipReasons.size()> skipped_{};
  bool seen_modules_ = false;
};

void Lanes(MetricSink& sink, const char* name, const char* help,
           const Labels& base, const std::vector<double>& values) {
  for (std::size_t l = 0; l < values.size(); ++l) {
    sink.Gauge(name, help, With(base, {{"lane", std::to_string(l)}}),
               values[l]);
  }
}

void Limits(MetricSink& sink, const char* name, const char* help,
            const Labels& base, const std::optional<Thresholds>& t) {
  if (!t) return;
  const std::pair<const char*, const std::optional<double>&> levels[] = {
      {"high_alarm", t->high_alarm},
      {"low_alarm", t->low_alarm},
      {"high_warning", t->high_warning},
      {"low_warning", t->low_warning}};
  for (const auto& [level, v] : levels) {
    if (v) sink.Gauge(name, help, With(base, {{"level", level}}), *v);
  }
}

}  // namespace

Result<ModulePages> ReadModulePages(ModuleEepromSource& source,
                                    const std::string& netdev,
                                    std::size_t* page_errors) {
  ModulePages pages;
  EepromBytesResult lower =
      source.Read(netdev, {.page = 0, .offset = 0, .length = 128});
  if (!lower.ok()) return lower.error();
  pages.lower = std::move(*lower);
  for (int page : ModulePagesToRead(pages.lower)) {
    EepromBytesResult upper =
        source.Read(netdev, {.page = static_cast<std::uint8_t>(page),
                             .offset = 128,
                             .length = 128});
    if (upper.ok()) {
      pages.upper[page] = std::move(*upper);
    } else {
      ++*page_errors;
    }
  }
  return pages;
}

void EmitTransceiverMetrics(const ModuleReading& r, const RoceNetdev& w,
                            MetricSink& sink) {
  const Labels base = Base(w);
  sink.Gauge(
      "fabric_transceiver_info",
      "Transceiver module identity from its EEPROM: SFF-8024 "
      "identifier, management spec and revision, vendor, part number, "
      "serial, vendor revision, media, cable assembly length.",
      With(base,
           {{"identifier", r.type},
            {"spec", r.spec == ModuleSpec::kCmis ? "cmis" : "sff8636"},
            {"spec_revision", r.revision},
            {"vendor", r.vendor},
            {"part_number", r.part_number},
            {"serial", r.serial},
            {"revision", r.vendor_revision},
            {"media", r.media},
            {"cable_length_meters",
             r.cable_length_meters ? Number(*r.cable_length_meters) : ""}}),
      1);
  if (r.temperature_celsius) {
    sink.Gauge("fabric_transceiver_temperature_celsius",
               "Module temperature (its internal monitor).", base,
               *r.temperature_celsius);
  }
  if (r.supply_voltage_volts) {
    sink.Gauge("fabric_transceiver_supply_voltage_volts",
               "Module supply voltage (its internal monitor).", base,
               *r.supply_voltage_volts);
  }
  Lanes(sink, "fabric_transceiver_tx_power_watts",
        "Transmitted optical power per lane.", base, r.tx_power_watts);
  Lanes(sink, "fabric_transceiver_rx_power_watts",
        "Received optical power per lane.", base, r.rx_power_watts);
  Lanes(sink, "fabric_transceiver_tx_bias_amperes",
        "Laser bias current per lane.", base, r.tx_bias_amperes);
  Limits(sink, "fabric_transceiver_temperature_threshold_celsius",
         "The module's own temperature alarm and warning thresholds.", base,
         r.temperature_thresholds);
  Limits(sink, "fabric_transceiver_supply_voltage_threshold_volts",
         "The module's own supply voltage alarm and warning thresholds.", base,
         r.voltage_thresholds);
  Limits(sink, "fabric_transceiver_tx_power_threshold_watts",
         "The module's own Tx optical power alarm and warning thresholds.",
         base, r.tx_power_thresholds);
  Limits(sink, "fabric_transceiver_rx_power_threshold_watts",
         "The module's own Rx optical power alarm and warning thresholds.",
         base, r.rx_power_thresholds);
  Limits(sink, "fabric_transceiver_tx_bias_threshold_amperes",
         "The module's own Tx bias alarm and warning thresholds.", base,
         r.tx_bias_thresholds);
  for (const ModuleFlag& f : r.flags) {
    sink.Gauge("fabric_transceiver_flag",
               "1 if the module's latched flag is set (cleared by the read): "
               "quantity temperature, voltage, tx_power, rx_power, tx_bias "
               "with level high/low alarm/warning; tx_los, rx_los, tx_fault "
               "with level fault. lane empty for module-wide flags.",
               With(base, {{"quantity", f.quantity},
                           {"level", f.level},
                           {"lane", f.lane < 0 ? "" : std::to_string(f.lane)}}),
               f.set ? 1 : 0);
  }
}

std::unique_ptr<Collector> MakeTransceiverCollector(
    const CollectorEnv& env, TransceiverOptions options,
    std::unique_ptr<ModuleEepromSource> source) {
  return std::make_unique<TransceiverCollector>(env, std::move(options),
                                                std::move(source));
}

CollectorSpec TransceiverCollectorSpec() {
  CollectorSpec spec;
  spec.name = "transceiver";
  // EEPROM reads are I2C behind firmware; temperature and power move over
  // minutes, and the flags latch in between.
  spec.interval = std::chrono::minutes(1);
  spec.timeout = std::chrono::seconds(30);
  spec.keys = {"eeprom_dir"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    TransceiverSettings settings;
    config_keys::ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark&) {
          if (key != "eeprom_dir") return;
          settings.eeprom_dir =
              value.IsNull() ? "" : config_keys::Scalar(value, key_path);
          if (!settings.eeprom_dir.empty() && settings.eeprom_dir[0] != '/') {
            config_keys::Fail(
                key_path, value.Mark(),
                config_keys::Quote(settings.eeprom_dir) +
                    " is not an absolute directory path (e.g. "
                    "\"/dev/shm/sim/host0/eeprom\"; empty = the kernel)");
          }
        });
    return std::make_shared<SettingsOf<TransceiverSettings>>(
        std::move(settings));
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    TransceiverOptions options;
    options.devices = config.devices;
    // Stop starting modules with a quarter of the deadline left.
    options.budget = config.timeout * 3 / 4;
    // Module images from files when configured; else module EEPROM asks
    // the kernel about a netdev by name: only when the statistics come from
    // the same kernel (as DCB and FEC in roce).
    const std::string& dir = SettingsAs<TransceiverSettings>(config).eeprom_dir;
    std::unique_ptr<ModuleEepromSource> source;
    if (!dir.empty()) {
      source = MakeFileModuleEepromSource(dir);
    } else if (env.ethtool_is_kernel) {
      source = MakeRealModuleEepromSource();
    }
    return MakeTransceiverCollector(env, std::move(options), std::move(source));
  };
  return spec;
}

}  // namespace fabric
