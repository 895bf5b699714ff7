#include "simulator/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "simulator/cluster_routes.h"

namespace fabric::sim {
namespace {

// The H100 host of tests/fixtures/real/sysfs-gpud-h100: 8 ConnectX-7 NDR
// HCAs (no mlx5_2/3: those are the BlueField-3's PFs, bonded) + BlueField-3.
const std::vector<std::string> kIbDevices = {"mlx5_0", "mlx5_1", "mlx5_4",
                                             "mlx5_5", "mlx5_6", "mlx5_7",
                                             "mlx5_8", "mlx5_9"};
constexpr const char* kRoceDevice = "mlx5_bond_0";

// Default targets of the fault scenarios (docs/simulator.md).
constexpr int kTargetHost = 0;
constexpr const char* kHotspotDevice = "mlx5_0";
constexpr const char* kFlapDevice = "mlx5_1";
constexpr const char* kSymbolDevice = "mlx5_4";
constexpr const char* kDegradedDevice = "mlx5_5";
constexpr const char* kSaturationDevice = "mlx5_6";
constexpr const char* kRemovedDevice = "mlx5_9";

// link-flap: each 6 s cycle the link is down for the first second.
constexpr double kFlapCycleSeconds = 6;
constexpr double kFlapDownSeconds = 1;
// sm-failover: the standby takes over this long after the master dies.
constexpr double kSmTakeoverSeconds = 2;
// pfc-storm: the stalled NIC leaves its switch port this fraction of line
// rate; mlx5 raises a storm warning after 100 ms and gives up pausing (error
// event) after 8 s (device_stall_{minor,critical}_watermark defaults).
constexpr double kStormResidualCapacity = 0.02;
constexpr double kStormWarningSeconds = 0.1;
constexpr double kStormCriticalSeconds = 8;
// congestion-hotspot: the external flow into the hot egress port offers
// this fraction of its line rate.
constexpr double kHotspotExternalLoad = 1.0;
// symbol-errors: per second on the target port.
constexpr std::int64_t kSymbolErrorsPerSecond = 200;
constexpr std::int64_t kRcvErrorsPerSecond = 10;
// dying-cable (simulated time compressed: one second of the scenario stands
// for about a minute of a real cable's decline). The pre-FEC BER grows ten
// times every kDyingBerDecadeSeconds from the healthy ratio, to at most
// kDyingBerMax (past what RS-FEC corrects); the module warms by
// kDyingTempPerSecond from its healthy temperature (past its 70 °C warning
// at 50 s); from kDyingFlapStartSeconds the link flaps (down for the first
// kFlapDownSeconds of every kFlapCycleSeconds), and from
// kDyingDownStartSeconds it stays down. The errors ride one lane (lane 1):
// a bad fibre or connector, as the per-lane view shows.
constexpr double kDyingBerDecadeSeconds = 10;
constexpr double kDyingBerMax = 1e-4;
constexpr double kDyingTempPerSecond = 0.5;
constexpr double kDyingTempMaxCelsius = 80;
constexpr double kDyingFlapStartSeconds = 60;
constexpr double kDyingDownStartSeconds = 90;
constexpr int kDyingErrorLane = 1;
// Minimum spacing of CNPs (ecn/roce_np/min_time_between_cnps, µs).
constexpr double kMinTimeBetweenCnpsSeconds = 4e-6;

std::uint64_t Guid(std::uint32_t oui_high, int a, int b) {
  return (std::uint64_t{oui_high} << 32) | (std::uint64_t(a & 0xffff) << 16) |
         std::uint64_t(b & 0xffff);
}

}  // namespace

std::string Port::RateString() const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%d Gb/sec (%dX NDR)",
                static_cast<int>(lanes * lane_gbps), lanes);
  return buf;
}

const std::vector<std::string>& Cluster::HostDeviceNames() {
  static const std::vector<std::string> names = [] {
    auto n = kIbDevices;
    n.push_back(kRoceDevice);
    return n;
  }();
  return names;
}

Cluster::Cluster(SimConfig config) : config_(std::move(config)) {
  config_.hosts = std::max(1, config_.hosts);
  if (config_.tick.count() <= 0) config_.tick = std::chrono::milliseconds(100);
  BuildTopology();
  fired_.assign(config_.timeline.events.size(), false);
  storm_error_fired_.assign(config_.timeline.events.size(), false);
  device_was_present_.assign(devices_.size(), true);
}

int Cluster::AddPort(Port port) {
  ports_.push_back(std::move(port));
  return static_cast<int>(ports_.size()) - 1;
}

void Cluster::Connect(int a, int b) {
  ports_[a].peer = b;
  ports_[b].peer = a;
}

void Cluster::BuildTopology() {
  const int n = config_.hosts;
  const int rails = static_cast<int>(kIbDevices.size());
  const int uplinks = std::clamp(config_.timeline.uplinks, 1, kMaxUplinks);
  // Switches first: spine (LID 1), IB leaves (LID 2..9), Ethernet leaf.
  // Leaf r's uplink u (port n+1+u) is spine port r*uplinks+u+1.
  spine_first_port_ = static_cast<int>(ports_.size());
  for (int r = 0; r < rails * uplinks; ++r) {
    Port p;
    p.node = p.device = "ib-spine";
    p.port_num = r + 1;
    p.lid = 1;
    p.guid = Guid(0xb83fd203, 0xffff, 1);
    AddPort(p);
  }
  for (int r = 0; r < rails; ++r) {
    leaf_first_port_.push_back(static_cast<int>(ports_.size()));
    for (int i = 1; i <= n + uplinks; ++i) {
      Port p;
      p.node = p.device = "ib-leaf" + std::to_string(r);
      p.port_num = i;
      p.lid = static_cast<std::uint16_t>(2 + r);
      p.guid = Guid(0xb83fd203, 0xfffe, r);
      AddPort(p);
    }
    for (int u = 0; u < uplinks; ++u) {
      Connect(spine_first_port_ + r * uplinks + u, leaf_first_port_[r] + n + u);
    }
  }
  eth_leaf_first_port_ = static_cast<int>(ports_.size());
  for (int i = 1; i <= n; ++i) {
    Port p;
    p.node = p.device = "eth-leaf";
    p.port_num = i;
    p.link_layer = LinkLayer::kEthernet;
    p.nominal_lanes = p.lanes = 2;
    p.guid = Guid(0x9c63c003, 0xfffd, 0);
    AddPort(p);
  }

  for (int h = 0; h < n; ++h) {
    Host host;
    host.name = "host" + std::to_string(h);
    for (int d = 0; d <= rails; ++d) {
      const bool roce = d == rails;
      Device dev;
      dev.name = roce ? kRoceDevice : kIbDevices[d];
      dev.host = h;
      dev.hca_type = roce ? "MT41692" : "MT4129";
      dev.fw_ver = roce ? "32.38.3056" : "28.41.1000";
      dev.board_id = roce ? "MT_0000000884" : "MT_0000000838";
      dev.node_guid = Guid(roce ? 0x9c63c003 : 0xa088c203, h, d);
      dev.node_desc = host.name + " " + dev.name;
      if (roce) dev.netdev = "bond0";
      Port p;
      p.node = host.name;
      p.device = dev.name;
      p.host = h;
      p.device_index = static_cast<int>(devices_.size());
      p.guid = dev.node_guid;
      if (roce) {
        p.link_layer = LinkLayer::kEthernet;
        p.nominal_lanes = p.lanes = 2;
      } else {
        p.lid = static_cast<std::uint16_t>(16 + h * rails + d);
      }
      for (auto name : kQCounters) p.hw_counters[std::string(name)] = 0;
      if (roce) {
        for (auto name : kCongestionCounters) {
          p.hw_counters[std::string(name)] = 0;
        }
        for (int prio = 0; prio < 8; ++prio) {
          for (const char* dir : {"rx", "tx"}) {
            const std::string base =
                std::string(dir) + "_prio" + std::to_string(prio);
            p.ethtool[base + "_pause"] = 0;
            p.ethtool[base + "_pause_duration"] = 0;
            p.ethtool[base + "_pause_transition"] = 0;
            p.ethtool[base + "_bytes"] = 0;
            p.ethtool[base + "_packets"] = 0;
          }
        }
        p.ethtool["tx_pause_storm_warning_events"] = 0;
        p.ethtool["tx_pause_storm_error_events"] = 0;
        p.ethtool["rx_ecn_mark"] = 0;
      }
      const int idx = AddPort(p);
      dev.ports.push_back(idx);
      Connect(idx, roce ? eth_leaf_first_port_ + h : leaf_first_port_[d] + h);
      host.devices.push_back(static_cast<int>(devices_.size()));
      devices_.push_back(std::move(dev));
    }
    hosts_.push_back(std::move(host));
  }
  // Switch ports take the link speed of the HCA they face.
  for (auto& p : ports_) {
    p.wait_in_bytes = config_.timeline.quantum_switches && p.host < 0 &&
                      p.link_layer == LinkLayer::kInfiniBand;
    if (p.peer >= 0 && p.host < 0 && ports_[p.peer].host >= 0) {
      p.nominal_lanes = p.lanes = ports_[p.peer].nominal_lanes;
    }
  }

  // Ring all-reduce flows: host h -> host (h+1) mod n on every rail.
  for (int d = 0; d <= rails; ++d) {
    for (int h = 0; h < n; ++h) {
      const int dst = (h + 1) % n;
      Flow f;
      f.src_host = h;
      const int src_port = devices_[hosts_[h].devices[d]].ports[0];
      const int dst_port = devices_[hosts_[dst].devices[d]].ports[0];
      f.hops = {src_port, ports_[dst_port].peer};
      flows_.push_back(f);
    }
  }
  // The hotspot's external flow enters rail 0 from the spine and leaves by
  // the same egress port as host 0 mlx5_0's ring traffic.
  Flow ext;
  const int victim_egress = flows_[0].hops[1];
  ext.hops = {spine_first_port_ + 0, victim_egress};
  flows_.push_back(ext);
  hotspot_flow_ = static_cast<int>(flows_.size()) - 1;
  base_flows_ = flows_.size();
  pfc_relay_.assign(ports_.size(), 0);

  // Subnet managers: master on the spine, standby on ib-leaf0.
  SubnetManager master;
  master.node = "ib-spine";
  master.lid = 1;
  master.guid = ports_[spine_first_port_].guid;
  master.priority = 15;
  master.state = 3;
  master.act_count = 1000;
  SubnetManager standby;
  standby.node = "ib-leaf0";
  standby.lid = 2;
  standby.guid = ports_[leaf_first_port_[0]].guid;
  standby.priority = 14;
  standby.state = 2;
  standby.act_count = 10;
  sms_ = {master, standby};
  master_ = 0;
}

const Port* Cluster::FindPort(int host, std::string_view device,
                              int port_num) const {
  if (host < 0 || host >= static_cast<int>(hosts_.size())) return nullptr;
  for (int d : hosts_[host].devices) {
    if (devices_[d].name != device) continue;
    for (int p : devices_[d].ports) {
      if (ports_[p].port_num == port_num) return &ports_[p];
    }
  }
  return nullptr;
}

const Port* Cluster::FindNetdevPort(int host, const std::string& netdev) const {
  if (host < 0 || host >= static_cast<int>(hosts_.size())) return nullptr;
  const Port* port = nullptr;
  for (int d : hosts_[host].devices) {
    const Device& dev = devices_[d];
    if (!dev.netdev.empty() && dev.netdev == netdev && dev.present) {
      port = &ports_[dev.ports.at(0)];
    }
  }
  return port;
}

const Port* Cluster::FindPortByLid(std::uint16_t lid, int port_num) const {
  if (lid == 0) return nullptr;
  for (const auto& p : ports_) {
    if (p.lid != lid) continue;
    // HCAs answer for their one port whatever port_num says (port 0/1).
    if (p.host >= 0 || p.port_num == port_num) return &p;
  }
  return nullptr;
}

double Cluster::AverageOfferedBytesPerSecond(const Port& port) const {
  const Traffic& t = config_.timeline.traffic;
  const double burst_seconds =
      std::chrono::duration<double>(t.period).count() * t.duty_cycle;
  double rate = t.load * port.NominalBytesPerSecond();
  if (t.size_bytes > 0 && burst_seconds > 0) {
    rate = std::min(port.NominalBytesPerSecond(), t.size_bytes / burst_seconds);
  }
  return rate * t.duty_cycle;
}

bool Cluster::DefaultTarget(const Event& event, int* host,
                            std::string* device) const {
  *host = event.host >= 0 ? event.host : kTargetHost;
  if (!event.device.empty()) {
    *device = event.device;
    return true;
  }
  switch (event.scenario) {
    case Scenario::kCongestionHotspot:
    case Scenario::kSlowReceiver:
    case Scenario::kOversubscribedUplink:
    case Scenario::kUnbalancedLinks:
      *device = kHotspotDevice;
      break;
    case Scenario::kPfcStorm:
    case Scenario::kRoceCcOff:
      *device = kRoceDevice;
      break;
    case Scenario::kLinkFlap:
      *device = kFlapDevice;
      break;
    case Scenario::kSymbolErrors:
      *device = kSymbolDevice;
      break;
    case Scenario::kLinkDegraded:
      *device = kDegradedDevice;
      break;
    case Scenario::kCounterSaturation:
      *device = kSaturationDevice;
      break;
    case Scenario::kDeviceRemoved:
      *device = kRemovedDevice;
      break;
    default:
      return false;
  }
  return true;
}

std::vector<Cluster::LossyPair> Cluster::LossyProbePairs() const {
  std::vector<LossyPair> out;
  const int hosts = static_cast<int>(hosts_.size());
  if (hosts < 2) return out;
  for (const Event& e : config_.timeline.events) {
    if (e.scenario != Scenario::kProbeLoss || !e.ActiveAt(now_)) continue;
    // The pair is the event's host and the next one on the ring.
    const int src = e.host >= 0 ? e.host : kTargetHost;
    out.push_back({src, (src + 1) % hosts, kProbeLossFraction});
  }
  return out;
}

double Cluster::LossOf(const std::vector<LossyPair>& pairs, int from, int to) {
  for (const LossyPair& p : pairs) {
    if (p.from == from && p.to == to) return p.loss;
  }
  return 0;
}

double Cluster::ProbeLoss(int from, int to) const {
  return LossOf(LossyProbePairs(), from, to);
}

Port* Cluster::TargetPort(const Event& event) {
  int host = 0;
  std::string device;
  if (!DefaultTarget(event, &host, &device)) return nullptr;
  return const_cast<Port*>(FindPort(host, device));
}

void Cluster::Step() {
  const double dt = std::chrono::duration<double>(config_.tick).count();
  now_ += config_.tick;  // the tick covers (now - tick, now]
  ApplyScenarios();
  RunTraffic(dt);
  InjectErrors(dt);
  UpdatePhy(dt);
  UpdateSubnetManagers(dt);
}

void Cluster::UpdatePhy(double dt) {
  for (auto& p : ports_) {
    if (!p.up || p.lanes <= 0) continue;
    p.fec_accumulator += p.pre_fec_ber * p.lanes * p.lane_gbps * 1e9 * dt;
    const double whole = std::floor(p.fec_accumulator);
    p.fec_accumulator -= whole;
    const auto bits = static_cast<std::uint64_t>(whole);
    p.fec_corrected_bits += bits;
    const int lanes = std::min(p.lanes, kMaxLanes);
    if (p.error_lane >= 0 && p.error_lane < lanes) {
      p.lane_corrected_bits[p.error_lane] += bits;
      continue;
    }
    // Spread evenly; the remainder on the first lanes.
    for (int l = 0; l < lanes; ++l) {
      p.lane_corrected_bits[l] +=
          bits / lanes + (static_cast<std::uint64_t>(l) < bits % lanes ? 1 : 0);
    }
  }
}

std::vector<Port*> Cluster::DyingCablePorts(const Event& event) {
  // The RoCE link of the event's host (default host0's mlx5_bond_0) and the
  // IB switch-to-switch link ib-leaf0 port N+1 -- ib-spine port 1.
  std::vector<Port*> out;
  const int host = event.host >= 0 ? event.host : kTargetHost;
  const std::string device =
      event.device.empty() ? std::string(kRoceDevice) : event.device;
  if (const Port* p = FindPort(host, device)) {
    out.push_back(const_cast<Port*>(p));
  }
  if (!leaf_first_port_.empty()) {
    out.push_back(&ports_[leaf_first_port_[0] + config_.hosts]);
  }
  return out;
}

void Cluster::ApplyScenarios() {
  for (auto& p : ports_) {
    p.lanes = p.nominal_lanes;
    p.up = true;
    p.pre_fec_ber = kHealthyPreFecBer;
    p.error_lane = -1;
    p.module_temperature_celsius = kModuleTemperatureCelsius;
  }
  for (auto& d : devices_) {
    d.present = true;
    d.roce_cc = true;
  }
  for (size_t i = 0; i < config_.timeline.events.size(); ++i) {
    const Event& e = config_.timeline.events[i];
    Duration local{0};
    if (!e.ActiveAt(now_, &local)) continue;
    const double t = std::chrono::duration<double>(local).count();
    if (e.scenario == Scenario::kDyingCable) {
      const double ber = std::min(
          kDyingBerMax,
          kHealthyPreFecBer * std::pow(10.0, t / kDyingBerDecadeSeconds));
      const double temp =
          std::min(kDyingTempMaxCelsius,
                   kModuleTemperatureCelsius + kDyingTempPerSecond * t);
      const bool down = t >= kDyingDownStartSeconds ||
                        (t >= kDyingFlapStartSeconds &&
                         std::fmod(t - kDyingFlapStartSeconds,
                                   kFlapCycleSeconds) < kFlapDownSeconds);
      for (Port* end : DyingCablePorts(e)) {
        for (Port* p : {end, &ports_[end->peer]}) {
          p->pre_fec_ber = ber;
          p->error_lane = kDyingErrorLane;
          p->module_temperature_celsius = temp;
          if (down) p->up = false;
        }
      }
      continue;
    }
    Port* target = TargetPort(e);
    if (!target) continue;
    switch (e.scenario) {
      case Scenario::kLinkFlap:
        if (std::fmod(t, kFlapCycleSeconds) < kFlapDownSeconds) {
          target->up = false;
          ports_[target->peer].up = false;
        }
        break;
      case Scenario::kLinkDegraded:
        target->lanes = ports_[target->peer].lanes =
            std::max(1, target->nominal_lanes / 2);
        break;
      case Scenario::kRoceCcOff:
        devices_[target->device_index].roce_cc = false;
        break;
      case Scenario::kDeviceRemoved:
        devices_[target->device_index].present = false;
        target->up = false;
        ports_[target->peer].up = false;
        break;
      default:
        break;
    }
  }
  // A device that comes back was re-probed by the driver: counters restart
  // from zero, as after a real driver reload.
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (devices_[d].present && !device_was_present_[d]) {
      for (int pi : devices_[d].ports) {
        Port& p = ports_[pi];
        p.counters.Clear();
        p.fec_corrected_bits = 0;
        p.lane_corrected_bits.fill(0);
        for (auto& [name, v] : p.hw_counters) v = 0;
        for (auto& [name, v] : p.ethtool) v = 0;
        p.tx_bytes = p.rx_bytes = 0;
        p.wait_accumulator = 0;
      }
    }
    device_was_present_[d] = devices_[d].present;
  }
  // Link transitions to down count on both ends.
  for (auto& p : ports_) {
    if (p.was_up && !p.up) {
      p.counters.Add(Ctr::kLinkDowned, 1);
      p.counters.Add(Ctr::kLinkErrorRecovery, 1);
    }
    p.was_up = p.up;
  }
}

void Cluster::RunTraffic(double dt) {
  const Traffic& traffic = config_.timeline.traffic;
  const Duration phase = now_ % traffic.period;
  const bool burst = phase < std::chrono::duration_cast<Duration>(
                                 traffic.period * traffic.duty_cycle);

  // Per transmitting port: capacity factor (PFC-paused ports send less).
  std::vector<double> capacity(ports_.size());
  for (size_t i = 0; i < ports_.size(); ++i) {
    const Port& p = ports_[i];
    const bool peer_up = p.peer >= 0 && ports_[p.peer].up;
    capacity[i] = (p.up && peer_up) ? p.RateBytesPerSecond() : 0;
  }
  bool hotspot = false;
  std::vector<double> paused(ports_.size(), 0);  // fraction paused by PFC
  std::vector<bool> storm_origin(ports_.size(), false);
  for (size_t i = 0; i < config_.timeline.events.size(); ++i) {
    const Event& e = config_.timeline.events[i];
    Duration local{0};
    if (!e.ActiveAt(now_, &local)) {
      storm_error_fired_[i] = false;
      continue;
    }
    const double t = std::chrono::duration<double>(local).count();
    if (e.scenario == Scenario::kCongestionHotspot) hotspot = true;
    if (e.scenario == Scenario::kPfcStorm) {
      Port* nic = TargetPort(e);
      if (!nic) continue;
      if (t < kStormCriticalSeconds) {
        // The stalled NIC pauses its switch port continuously.
        const int sw = nic->peer;
        capacity[sw] *= kStormResidualCapacity;
        paused[sw] = 1 - kStormResidualCapacity;
        storm_origin[nic - ports_.data()] = true;
        const std::string prio = std::to_string(kRocePriority);
        nic->ethtool["tx_prio" + prio + "_pause"] +=
            static_cast<std::uint64_t>(std::llround(dt / kPauseFrameSeconds));
        nic->ethtool["tx_prio" + prio + "_pause_duration"] +=
            static_cast<std::uint64_t>(std::llround(dt * 1e6));
        if (t >= kStormWarningSeconds && t - dt < kStormWarningSeconds) {
          nic->ethtool["tx_pause_storm_warning_events"] += 1;
        }
      } else if (!storm_error_fired_[i]) {
        nic->ethtool["tx_pause_storm_error_events"] += 1;
        storm_error_fired_[i] = true;
      }
    }
  }

  // pfc-storm relays: a host that was paused last tick pauses its own
  // switch port now, for kPfcRelayShare of that time.
  const std::string prio = std::to_string(kRocePriority);
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const double relay = pfc_relay_[i];
    if (relay <= 0) continue;
    Port& host = ports_[i];
    capacity[host.peer] *= 1 - relay;
    paused[host.peer] = std::max(paused[host.peer], relay);
    host.ethtool["tx_prio" + prio + "_pause"] += static_cast<std::uint64_t>(
        std::llround(relay * dt / kPauseFrameSeconds));
    host.ethtool["tx_prio" + prio + "_pause_duration"] +=
        static_cast<std::uint64_t>(std::llround(relay * dt * 1e6));
  }
  std::vector<double> relay(ports_.size(), 0);

  // Offered load of every ring flow and the hotspot's; the congestion-tree
  // flows come with theirs.
  AddCongestionFlows(&capacity);
  // Ring flows are built rail by rail, one per host (BuildTopology).
  auto cross_rail = [&](std::size_t f) {
    const std::size_t rail = f / hosts_.size();
    return rail < cross_rail_.size() && cross_rail_[rail];
  };
  for (size_t f = 0; f < flows_.size(); ++f) {
    Flow& flow = flows_[f];
    if (f < base_flows_) flow.offered_bps = 0;
    if (static_cast<int>(f) == hotspot_flow_) {
      if (hotspot) {
        flow.offered_bps =
            kHotspotExternalLoad * ports_[flow.hops[1]].NominalBytesPerSecond();
      }
    } else if (burst && f < base_flows_ && !cross_rail(f)) {
      const Port& src = ports_[flow.hops[0]];
      const double burst_seconds =
          std::chrono::duration<double>(traffic.period).count() *
          traffic.duty_cycle;
      flow.offered_bps = traffic.load * src.NominalBytesPerSecond();
      if (traffic.size_bytes > 0 && burst_seconds > 0) {
        flow.offered_bps = std::min(src.NominalBytesPerSecond(),
                                    traffic.size_bytes / burst_seconds);
      }
    }
    // A flow across a dead link stalls (the collective waits).
    for (int hop : flow.hops) {
      if (capacity[hop] <= 0 && paused[hop] == 0) flow.offered_bps = 0;
    }
  }

  const std::vector<int> throttled = ShareCapacity(capacity);
  // Per transmitter: the rate of data that had to wait there.
  std::vector<double> blocked(ports_.size(), 0);
  for (auto& p : ports_) p.offered_bps = p.delivered_bps = 0;
  for (size_t f = 0; f < flows_.size(); ++f) {
    Flow& flow = flows_[f];
    const int last = throttled[f];
    const int bottleneck = last >= 0 ? flow.hops[last] : -1;
    const double s =
        flow.offered_bps > 0 ? flow.delivered_bps / flow.offered_bps : 1;
    // Whole 4-byte words: port_*_data counts words, so both ends of every
    // link see exactly the same number.
    const auto bytes =
        static_cast<std::uint64_t>(flow.delivered_bps * dt / 4) * 4;
    for (int i = 0; i < static_cast<int>(flow.hops.size()); ++i) {
      const int hop = flow.hops[i];
      Port& tx = ports_[hop];
      Port& rx = ports_[tx.peer];
      // Credit backpressure: up to the last port that throttles the flow,
      // its data queues (the port waits); past it, only what got through
      // arrives.
      if (i <= last) {
        tx.offered_bps += flow.offered_bps;
        blocked[hop] += (flow.offered_bps - flow.delivered_bps) *
                        std::pow(kCreditSpreadPerHop, last - i);
      } else {
        tx.offered_bps += flow.delivered_bps;
      }
      tx.delivered_bps += flow.delivered_bps;
      const auto tx_pkts_before = tx.tx_bytes / kBytesPerPacket;
      const auto rx_pkts_before = rx.rx_bytes / kBytesPerPacket;
      const auto rx_writes_before = rx.rx_bytes / kBytesPerWriteRequest;
      tx.tx_bytes += bytes;
      rx.rx_bytes += bytes;
      const auto tx_pkts = tx.tx_bytes / kBytesPerPacket - tx_pkts_before;
      const auto rx_pkts = rx.rx_bytes / kBytesPerPacket - rx_pkts_before;
      tx.counters.Add(Ctr::kPortXmitData, bytes / 4);
      tx.counters.Add(Ctr::kPortXmitPackets, tx_pkts);
      tx.counters.Add(Ctr::kUnicastXmitPackets, tx_pkts);
      rx.counters.Add(Ctr::kPortRcvData, bytes / 4);
      rx.counters.Add(Ctr::kPortRcvPackets, rx_pkts);
      rx.counters.Add(Ctr::kUnicastRcvPackets, rx_pkts);
      if (rx.host >= 0) {
        auto& w = rx.hw_counters["rx_write_requests"];
        w = AddWrapping(w,
                        rx.rx_bytes / kBytesPerWriteRequest - rx_writes_before,
                        kQCounterBits);
      }
      if (tx.link_layer == LinkLayer::kEthernet && tx.host >= 0) {
        tx.ethtool["tx_prio" + prio + "_bytes"] += bytes;
        tx.ethtool["tx_prio" + prio + "_packets"] += tx_pkts;
      }
      if (rx.link_layer == LinkLayer::kEthernet && rx.host >= 0) {
        rx.ethtool["rx_prio" + prio + "_bytes"] += bytes;
        rx.ethtool["rx_prio" + prio + "_packets"] += rx_pkts;
      }
    }
    // RoCE congestion: the switch marks CE on the share of packets that
    // met a congested queue; the receiver (NP) answers with CNPs, spaced by
    // min_time_between_cnps, which the sender (RP) handles. Upstream of a
    // PFC-paused port the switch pauses the sender.
    if (bottleneck >= 0 && s < 1 && flow.src_host >= 0 &&
        ports_[flow.hops[0]].link_layer == LinkLayer::kEthernet) {
      Port& sender = ports_[flow.hops[0]];
      Port& receiver = ports_[ports_[flow.hops.back()].peer];
      const auto pkts =
          static_cast<std::uint64_t>(flow.delivered_bps * dt / kBytesPerPacket);
      const auto marked = static_cast<std::uint64_t>(pkts * (1 - s));
      const auto cnps = std::min<std::uint64_t>(
          marked, static_cast<std::uint64_t>(dt / kMinTimeBetweenCnpsSeconds));
      receiver.hw_counters["np_ecn_marked_roce_packets"] += marked;
      receiver.hw_counters["np_cnp_sent"] += cnps;
      receiver.ethtool["rx_ecn_mark"] += marked;
      sender.hw_counters["rp_cnp_handled"] += cnps;
      if (paused[bottleneck] > 0) {
        const double fraction = 1 - s;
        sender.ethtool["rx_prio" + prio + "_pause"] +=
            static_cast<std::uint64_t>(
                std::llround(fraction * dt / kPauseFrameSeconds));
        sender.ethtool["rx_prio" + prio + "_pause_duration"] +=
            static_cast<std::uint64_t>(std::llround(fraction * dt * 1e6));
        const int at = flow.hops[0];
        if (!storm_origin[at]) {
          relay[at] = std::max(relay[at], kPfcRelayShare * fraction);
        }
      }
    }
  }
  pfc_relay_ = std::move(relay);
  // port_xmit_wait: the share of the tick a transmitter had data it could
  // not send.
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    if (p.offered_bps <= 0) continue;
    const double share = blocked[i] / p.offered_bps;
    if (share <= 1e-12) continue;
    p.wait_accumulator += share * dt * p.XmitWaitTicksPerSecond();
    const auto whole = static_cast<std::uint64_t>(p.wait_accumulator);
    p.wait_accumulator -= static_cast<double>(whole);
    p.counters.Add(Ctr::kPortXmitWait, whole);
  }
}

void Cluster::AddCongestionFlows(std::vector<double>* capacity) {
  flows_.resize(base_flows_);
  std::unique_ptr<ClusterRoutes> routes;  // once per tick, when needed
  const int rails = static_cast<int>(kIbDevices.size());
  cross_rail_.assign(rails, false);
  for (const Event& e : config_.timeline.events) {
    if ((e.scenario != Scenario::kSlowReceiver &&
         e.scenario != Scenario::kOversubscribedUplink &&
         e.scenario != Scenario::kUnbalancedLinks) ||
        !e.ActiveAt(now_)) {
      continue;
    }
    const Port* target = TargetPort(e);
    if (!target || target->link_layer != LinkLayer::kInfiniBand) continue;
    const std::string& device = devices_[target->device_index].name;
    const int rail = static_cast<int>(
        std::find(kIbDevices.begin(), kIbDevices.end(), device) -
        kIbDevices.begin());
    const std::string& next = kIbDevices[(rail + 1) % rails];
    if (!routes) routes = std::make_unique<ClusterRoutes>(ports_);
    auto add = [&](const Port* src, const Port* dst, double load) {
      if (!src || !dst) return;
      Flow f;
      f.src_host = src->host;
      f.hops = routes->Route(static_cast<int>(src - ports_.data()),
                             static_cast<int>(dst - ports_.data()));
      if (f.hops.empty()) return;  // not routed: nothing can flow
      f.offered_bps = load * src->NominalBytesPerSecond();
      flows_.push_back(std::move(f));
    };
    const int hosts = static_cast<int>(hosts_.size());
    if (e.scenario == Scenario::kSlowReceiver) {
      // Every host's HCA on the next rail sends to the slow HCA: through
      // its leaf, the spine and the slow HCA's leaf.
      for (int h = 0; h < hosts; ++h)
        add(FindPort(h, next), target, kIncastLoad);
      double& edge = (*capacity)[target->peer];
      edge = std::min(edge, kSlowReceiverDrain * target->RateBytesPerSecond());
      continue;
    }
    // Every host on the target's leaf sends to its HCA on the next rail:
    // all of it up the leaf's uplinks, and the LFT puts every destination
    // of that rail on the same one (their LIDs are alike modulo the
    // uplinks: static routing that does not spread). This is the job's
    // traffic on both rails: their ring flows stop meanwhile, or under the
    // demo tour's 0.8-line-rate all-reduce each receiver would take more
    // than its link carries and be a root of its own (a second fault).
    cross_rail_[rail] = cross_rail_[(rail + 1) % rails] = true;
    const double load =
        e.scenario == Scenario::kOversubscribedUplink
            ? kOversubscribedLoad
            : std::min(kOversubscribedLoad, kUnbalancedTotalLoad / hosts);
    for (int h = 0; h < hosts; ++h) {
      add(FindPort(h, device), FindPort(h, next), load);
    }
  }
}

std::vector<int> Cluster::ShareCapacity(const std::vector<double>& capacity) {
  // Every transmitter shares its capacity among its flows in proportion to
  // what reaches it; a flow keeps what survives every hop (lossless: its
  // rate is the same on every link). A port's share depends only on the
  // ports upstream of it, so each round settles one more hop.
  std::vector<double> scale(ports_.size(), 1);
  std::size_t longest = 0;
  for (const Flow& f : flows_) longest = std::max(longest, f.hops.size());
  for (std::size_t round = 0; round <= longest; ++round) {
    std::vector<double> load(ports_.size(), 0);
    for (const Flow& f : flows_) {
      double r = f.offered_bps;
      for (int hop : f.hops) {
        load[hop] += r;
        r *= scale[hop];
      }
    }
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      scale[i] = load[i] > capacity[i] ? capacity[i] / load[i] : 1;
    }
  }
  std::vector<int> last(flows_.size(), -1);
  for (std::size_t f = 0; f < flows_.size(); ++f) {
    Flow& flow = flows_[f];
    double r = flow.offered_bps;
    for (int i = 0; i < static_cast<int>(flow.hops.size()); ++i) {
      if (scale[flow.hops[i]] < 1 && r > 0) last[f] = i;
      r *= scale[flow.hops[i]];
    }
    flow.delivered_bps = r;
  }
  return last;
}

void Cluster::InjectErrors(double) {
  for (size_t i = 0; i < config_.timeline.events.size(); ++i) {
    const Event& e = config_.timeline.events[i];
    Duration local{0};
    const bool active = e.ActiveAt(now_, &local);
    if (!active) {
      fired_[i] = false;
      continue;
    }
    Port* target = TargetPort(e);
    if (!target) continue;
    switch (e.scenario) {
      case Scenario::kSymbolErrors: {
        // Whole counts per tick from a running total, so any tick length
        // gives the same rate.
        // Integer µs so the split into ticks is exact.
        const std::int64_t now_us = now_.count() / 1000;
        const std::int64_t before_us = (now_ - config_.tick).count() / 1000;
        auto count = [&](std::int64_t per_second) {
          return static_cast<std::uint64_t>(now_us * per_second / 1'000'000 -
                                            before_us * per_second / 1'000'000);
        };
        target->counters.Add(Ctr::kSymbolError, count(kSymbolErrorsPerSecond));
        target->counters.Add(Ctr::kPortRcvErrors, count(kRcvErrorsPerSecond));
        break;
      }
      case Scenario::kCounterSaturation:
        if (!fired_[i]) {
          // Preset just below the top so the counters reach it within a
          // second: errors saturate, the 32-bit Q-counter wraps.
          for (Ctr c : {Ctr::kSymbolError, Ctr::kLinkErrorRecovery,
                        Ctr::kLinkDowned, Ctr::kPortRcvErrors,
                        Ctr::kPortXmitDiscards, Ctr::kLocalLinkIntegrityErrors,
                        Ctr::kExcessiveBufferOverrunErrors}) {
            const int bits = Spec(c).bits;
            target->counters.Set(c, (std::uint64_t{1} << bits) - 3);
          }
          target->hw_counters["rx_write_requests"] =
              (std::uint64_t{1} << kQCounterBits) - 1000;
          target->hw_counters["out_of_sequence"] =
              (std::uint64_t{1} << kQCounterBits) - 5;
        }
        for (Ctr c : {Ctr::kSymbolError, Ctr::kLinkErrorRecovery,
                      Ctr::kLinkDowned, Ctr::kPortRcvErrors,
                      Ctr::kPortXmitDiscards, Ctr::kLocalLinkIntegrityErrors,
                      Ctr::kExcessiveBufferOverrunErrors}) {
          target->counters.Add(c, 1);
        }
        {
          auto& v = target->hw_counters["out_of_sequence"];
          v = AddWrapping(v, 1, kQCounterBits);
        }
        break;
      default:
        break;
    }
    fired_[i] = true;
  }
}

void Cluster::UpdateSubnetManagers(double dt) {
  bool failover = false, hung = false;
  double failover_t = 0;
  for (const Event& e : config_.timeline.events) {
    Duration local{0};
    if (!e.ActiveAt(now_, &local)) continue;
    if (e.scenario == Scenario::kSmFailover) {
      failover = true;
      failover_t = std::chrono::duration<double>(local).count();
    }
    if (e.scenario == Scenario::kSmHung) hung = true;
  }
  SubnetManager& first = sms_[0];
  SubnetManager& second = sms_[1];
  if (failover) {
    first.alive = false;
    first.state = 0;
    if (failover_t >= kSmTakeoverSeconds && master_ == 0) {
      master_ = 1;
      second.state = 3;
    }
  } else if (!first.alive) {
    // The old master comes back and, with the new master already running,
    // stays standby (OpenSM does not preempt unless configured to).
    first.alive = true;
    first.state = master_ == 0 ? 3 : 2;
  }
  // OpenSM's ActCount counts its QP0 MADs: a live master keeps sending
  // (light sweeps), a hung one does not.
  SubnetManager& master = sms_[master_];
  if (master.alive && !hung) {
    master.act_count += static_cast<std::uint32_t>(std::llround(100 * dt));
  }
}

}  // namespace fabric::sim
