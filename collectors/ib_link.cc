#include "collectors/ib_link.h"

#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "collectors/link_phy.h"
#include "collectors/mad_ports.h"
#include "config/yaml_keys.h"
#include "sources/mad/codec.h"
#include "sources/mad/mad_transport.h"
#include "sources/mad/pesc.h"
#include "sources/mad/sweep.h"

namespace fabric {
namespace {

constexpr char kRemoteLanesHelp[] =
    "The port at the other end of this port's cable: widest link width it "
    "supports and has enabled (its PortInfo LinkWidthSupported & Enabled, "
    "one hop by directed route), in lanes.";
constexpr char kRemoteSpeedHelp[] =
    "The port at the other end of this port's cable: fastest lane speed it "
    "supports and has enabled (its PortInfo LinkSpeed[Ext]Supported & "
    "Enabled), bytes per second per lane.";
constexpr char kUnsupportedHelp[] =
    "ACTIVE local IB ports whose PMA has no PortExtendedSpeedsCounters "
    "(0x1F): no FEC/PHY counters are exported for them.";

using Support = mad::PescSwitchState::Support;

// What one port's PMA said about PESC, for as long as the port keeps its
// LID (a new LID is a new SM assignment: asked again).
struct PescMemory {
  std::uint16_t lid = 0;
  Support support = Support::kUnknown;
  mad::PescLayout layout = mad::PescLayout::kNone;
};

class IbLinkCollector : public Collector {
 public:
  IbLinkCollector(const CollectorEnv& env, IbLinkSettings settings,
                  mad::LocalPortLister ports)
      : settings_(settings),
        ports_("ib_link", env, settings.mad, std::move(ports)) {}

  std::string_view Name() const override { return "ib_link"; }

  bool Collect(MetricSink& sink) override {
    if (!ports_.available()) return true;
    MadPorts::Found found = ports_.Find(sink);
    bool ok = found.error.empty();
    mad::LivePorts& live = found.live;
    const MadOptions options = ports_.options();
    if (!live.unopenable.empty()) {
      if (!open_failed_) {
        spdlog::warn("ib_link: cannot open MAD port {}",
                     live.unopenable.front());
      }
      ok = false;
    }
    open_failed_ = !live.unopenable.empty();
    int unsupported = 0;
    std::map<std::pair<std::string, int>, PescMemory> kept;
    for (auto& [port, transport] : live.active) {
      const Labels labels = {{"device", port.ca},
                             {"port", std::to_string(port.port)}};
      // Named, not the binding: clang 14 cannot capture a structured
      // binding (scripts/thread_safety.sh compiles with it).
      const std::string where =
          "ib_link: " + port.ca + " port " + std::to_string(port.port) + ": ";
      auto skip = [&sink, &where](const char* what, const std::string& why) {
        sink.Skip(where + what + ": " + why);
      };
      // The one PortInfo/PESC reader (sources/mad/pesc.h).
      mad::PortReader r(*transport, options,
                        static_cast<std::uint8_t>(port.port), port.lid, skip);
      const auto info = r.OwnPortInfo();
      if (!info) continue;
      EmitLinkSpeed(sink, kHostPortFamilies, labels, info->info);
      if (const auto remote = r.RemotePortInfo()) {
        EmitRemote(sink, labels, *remote);
      }
      if (!settings_.pesc) continue;
      PescMemory& m = kept[{port.ca, port.port}];
      m = pesc_[{port.ca, port.port}];
      if (m.lid != port.lid) m = PescMemory{.lid = port.lid};
      if (m.support == Support::kUnknown) {
        // Unsupported when the port or its PMA says so; else the first
        // PESC read decides.
        const auto layout = r.ChooseLayout(*info);
        m.layout = layout.value_or(mad::PescLayout::kNone);
        if (!layout) m.support = Support::kUnsupported;
      }
      std::optional<mad::PortExtendedSpeedsCounters> c;
      if (m.support != Support::kUnsupported) c = r.Pesc(m.layout);
      if (m.support == Support::kSupported && !c) {
        skip("PortExtendedSpeedsCounters", "no answer or a MAD status");
      }
      if (m.support == Support::kUnknown) {
        m.support = c ? Support::kSupported : Support::kUnsupported;
      }
      if (m.support == Support::kUnsupported) ++unsupported;
      if (c) {
        EmitPesc(sink, kHostPortFamilies, labels, *c, PescLanes(&info->info));
      }
    }
    pesc_ = std::move(kept);
    if (settings_.pesc && !live.active.empty()) {
      sink.Gauge("fabric_ib_link_pesc_unsupported_ports", kUnsupportedHelp, {},
                 unsupported);
    }
    return ok;
  }

 private:
  static void EmitRemote(MetricSink& sink, const Labels& labels,
                         const mad::PortInfo& remote) {
    if (const int lanes = mad::CapableLanes(remote); lanes > 0) {
      sink.Gauge("fabric_port_remote_link_width_capable_lanes",
                 kRemoteLanesHelp, labels, lanes);
    }
    if (const double gbps = mad::CapableLaneGbps(remote); gbps > 0) {
      sink.Gauge("fabric_port_remote_lane_rate_capable_bytes_per_second",
                 kRemoteSpeedHelp, labels, gbps * 1e9 / 8);
    }
  }

  IbLinkSettings settings_;
  MadPorts ports_;
  std::map<std::pair<std::string, int>, PescMemory> pesc_;  // ca, port
  bool open_failed_ = false;
};

}  // namespace

std::unique_ptr<Collector> MakeIbLinkCollector(const CollectorEnv& env,
                                               const CollectorConfig& config,
                                               mad::LocalPortLister ports) {
  return std::make_unique<IbLinkCollector>(
      env, SettingsAs<IbLinkSettings>(config), std::move(ports));
}

CollectorSpec IbLinkCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "ib_link";
  spec.interval = std::chrono::seconds(30);
  spec.timeout = std::chrono::seconds(10);
  spec.keys = {kMadTimeoutKey, kMadRetriesKey, "pesc"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    IbLinkSettings s;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark&) {
                 if (ReadMadKey(key, value, key_path, s.mad)) return;
                 if (key == "pesc") s.pesc = Bool(value, key_path);
               });
    return std::make_shared<SettingsOf<IbLinkSettings>>(s);
  };
  spec.make = [](const CollectorEnv& env, const CollectorConfig& config) {
    return MakeIbLinkCollector(env, config);
  };
  return spec;
}

}  // namespace fabric
