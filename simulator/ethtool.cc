#include "simulator/ethtool.h"

#include <algorithm>
#include <functional>

#include "simulator/runner.h"

namespace fabric::sim {
namespace {

class SimEthtoolSource : public EthtoolSource {
 public:
  using Access =
      std::function<void(const std::function<void(const Cluster&)>&)>;
  SimEthtoolSource(Access access, int host)
      : access_(std::move(access)), host_(host) {}
  EthtoolResult Stats(const std::string& netdev) override {
    EthtoolResult r = std::errc::no_such_device;
    access_([&](const Cluster& c) { r = SimEthtoolStats(c, host_, netdev); });
    return r;
  }

 private:
  Access access_;
  int host_;
};

}  // namespace

EthtoolResult SimEthtoolStats(const Cluster& c, int host,
                              const std::string& netdev) {
  const Port* port = c.FindNetdevPort(host, netdev);
  if (!port) return std::errc::no_such_device;
  EthtoolStats s;
  s.driver = "mlx5_core";
  auto add = [&](const std::string& name, std::uint64_t value) {
    s.names.push_back(name);
    s.values.push_back(value);
  };
  auto stat = [&](const std::string& name) -> std::uint64_t {
    auto it = port->ethtool.find(name);
    return it == port->ethtool.end() ? 0 : it->second;
  };
  // mlx5_core order: software counters, per-priority traffic, per-priority
  // PFC, pause-storm events.
  add("rx_packets", port->rx_bytes / kBytesPerPacket);
  add("rx_bytes", port->rx_bytes);
  add("tx_packets", port->tx_bytes / kBytesPerPacket);
  add("tx_bytes", port->tx_bytes);
  add("rx_ecn_mark", stat("rx_ecn_mark"));
  // Drops and link-level (802.3x) pause: all 0 on the simulated lossless
  // fabric, but present as on a real mlx5 NIC, so the rules reading them
  // see their series.
  add("rx_out_of_buffer", stat("rx_out_of_buffer"));
  add("rx_discards_phy", stat("rx_discards_phy"));
  add("tx_discards_phy", stat("tx_discards_phy"));
  add("rx_global_pause", stat("rx_global_pause"));
  add("rx_global_pause_duration", stat("rx_global_pause_duration"));
  add("tx_global_pause", stat("tx_global_pause"));
  add("tx_global_pause_duration", stat("tx_global_pause_duration"));
  for (int p = 0; p < 8; ++p) {
    const std::string n = std::to_string(p);
    add("rx_prio" + n + "_bytes", stat("rx_prio" + n + "_bytes"));
    add("rx_prio" + n + "_packets", stat("rx_prio" + n + "_packets"));
    add("rx_prio" + n + "_discards", 0);
    add("tx_prio" + n + "_bytes", stat("tx_prio" + n + "_bytes"));
    add("tx_prio" + n + "_packets", stat("tx_prio" + n + "_packets"));
  }
  for (int p = 0; p < 8; ++p) {
    const std::string n = std::to_string(p);
    add("rx_prio" + n + "_pause", stat("rx_prio" + n + "_pause"));
    add("rx_prio" + n + "_pause_duration",
        stat("rx_prio" + n + "_pause_duration"));
    add("tx_prio" + n + "_pause", stat("tx_prio" + n + "_pause"));
    add("tx_prio" + n + "_pause_duration",
        stat("tx_prio" + n + "_pause_duration"));
    add("rx_prio" + n + "_pause_transition",
        stat("rx_prio" + n + "_pause_transition"));
  }
  add("tx_pause_storm_warning_events", stat("tx_pause_storm_warning_events"));
  add("tx_pause_storm_error_events", stat("tx_pause_storm_error_events"));
  // mlx5 physical-layer counters (issue 28): the bits the FEC corrected,
  // per lane and in total, PCS symbol errors and link-down events.
  add("rx_pcs_symbol_err_phy", port->counters.Get(Ctr::kSymbolError));
  add("rx_corrected_bits_phy", port->fec_corrected_bits);
  for (int l = 0; l < port->nominal_lanes && l < kMaxLanes; ++l) {
    add("rx_err_lane_" + std::to_string(l) + "_phy",
        port->lane_corrected_bits[l]);
  }
  add("link_down_events_phy", port->counters.Get(Ctr::kLinkDowned));
  return s;
}

namespace {

// "<speed>baseCR<lanes>/Full" modes of a port: its nominal width at its lane
// rate, and half of that.
std::string Modes(const Port& p) {
  const int lanes = std::max(1, p.nominal_lanes);
  const auto mbps = static_cast<std::uint64_t>(lanes * p.lane_gbps * 1000);
  std::string out;
  for (const std::uint64_t m : {mbps / 2, mbps}) {
    if (m == 0) continue;
    out += (out.empty() ? "" : " ") + std::to_string(m) + "baseCR" +
           std::to_string(lanes) + "/Full";
  }
  return out;
}

}  // namespace

std::optional<std::string> SimEthtoolLinkText(const Cluster& c, int host,
                                              const std::string& netdev) {
  const Port* port = c.FindNetdevPort(host, netdev);
  if (!port) return std::nullopt;
  const Port* peer = port->peer >= 0
                         ? &c.ports()[static_cast<std::size_t>(port->peer)]
                         : nullptr;
  std::string text = "Settings for " + netdev + ":\n";
  text += "\tSupported link modes:   " + Modes(*port) + "\n";
  text += "\tAdvertised link modes:  " + Modes(*port) + "\n";
  text += "\tLink partner advertised link modes:  " +
          (peer && port->up ? Modes(*peer) : std::string("Not reported")) +
          "\n";
  text += "\tSpeed: " +
          (port->up ? std::to_string(static_cast<std::uint64_t>(
                          port->lanes * port->lane_gbps * 1000)) +
                          "Mb/s"
                    : std::string("Unknown!")) +
          "\n";
  text += "\tDuplex: Full\n\tAuto-negotiation: on\n";
  return text;
}

std::string EthtoolText(const EthtoolStats& stats) {
  std::string out = "NIC statistics:\n";
  const std::size_t n = std::min(stats.names.size(), stats.values.size());
  for (std::size_t i = 0; i < n; ++i) {
    out += "     " + stats.names[i] + ": " + std::to_string(stats.values[i]) +
           "\n";
  }
  return out;
}

std::unique_ptr<EthtoolSource> MakeSimEthtoolSource(const Cluster& cluster,
                                                    int host) {
  return std::make_unique<SimEthtoolSource>(
      [&cluster](const std::function<void(const Cluster&)>& fn) {
        fn(cluster);
      },
      host);
}

std::unique_ptr<EthtoolSource> MakeSimEthtoolSource(const LiveRunner& runner,
                                                    int host) {
  return std::make_unique<SimEthtoolSource>(
      [&runner](const std::function<void(const Cluster&)>& fn) {
        runner.WithCluster(fn);
      },
      host);
}

}  // namespace fabric::sim
