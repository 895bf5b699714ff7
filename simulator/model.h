// The simulated fabric: hosts with HCAs, leaf/spine switches, links, two
// subnet managers and all-reduce traffic, advanced by a deterministic
// tick-based engine.
//
// Topology (rail-optimised, like an H100 pod): every host has 8 ConnectX-7
// NDR InfiniBand HCAs (mlx5_0,1,4..9, one per rail) and one BlueField-3
// RoCE port (mlx5_bond_0, netdev bond0). Rail r's HCAs all plug into leaf
// switch `ib-leaf<r>` (port h+1 for host h); every IB leaf has an uplink
// (port N+1) to `ib-spine` (port r+1). The RoCE ports plug into `eth-leaf`.
// Traffic is a ring all-reduce per rail: host h sends to host (h+1) mod N
// through its leaf. See docs/simulator.md for every scenario's target.
//
// Time is simulated: Step() advances by exactly one tick, so tests drive it
// with a stepped clock and get bit-identical results; the live runner calls
// Step() in real time.
//
// Thread-safety: none; one thread owns a Cluster (the runner serialises
// access with its own mutex).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "simulator/counters.h"
#include "simulator/timeline.h"

namespace fabric::sim {

// One port_xmit_wait tick of an HCA port: 256 ns (64 × the 4 ns SDR symbol
// time, a PortSamplesControl Tick of 63; NVIDIA documents no tick for
// ConnectX, fabricmon assumes this one). See docs/simulator.md.
inline constexpr double kXmitWaitTickSeconds = 256e-9;
// The simulated IB switches are Quantum-2 (NodeInfo DeviceID 54002), whose
// PortXmitWait counts one tick per 8 bytes the port could have sent
// (ibdiagnet's congestion assessment: Tick = 7), whatever the width.
inline constexpr double kQuantumXmitWaitBytesPerTick = 8;
// Bytes per packet (IB MTU 4096) for the packet counters.
inline constexpr std::uint64_t kBytesPerPacket = 4096;
// One RDMA write request per 64 KiB received (hw_counters rx_write_requests).
inline constexpr std::uint64_t kBytesPerWriteRequest = 65536;
// A PFC pause frame is refreshed every 100 µs while a port is paused.
inline constexpr double kPauseFrameSeconds = 100e-6;
// RoCE priority carrying the RDMA traffic (PFC and ECN enabled on it).
inline constexpr int kRocePriority = 3;
// probe-loss: the share of the pair's probes dropped (1 in 5: well past
// the 1 % FabricProbeLoss threshold, and most probes still answered, as on
// a path that drops rather than one that is cut).
inline constexpr double kProbeLossFraction = 0.2;
// Physical layer (issue 28). A healthy link's pre-FEC bit error ratio: the
// FEC corrects a few bits a second, far below fabricmon's 1e-6 high_ber
// threshold (fabric:threshold:pre_fec_ber), so counters move on healthy
// links too, as on real PAM4 links.
inline constexpr double kHealthyPreFecBer = 1e-9;
// A RoCE port's transceiver: its temperature when healthy, and the high
// warning / alarm thresholds its EEPROM carries (simulator/transceiver.h).
inline constexpr double kModuleTemperatureCelsius = 45;
inline constexpr double kModuleTempHighWarningCelsius = 70;
inline constexpr double kModuleTempHighAlarmCelsius = 75;
// PESC carries up to 12 lanes.
inline constexpr int kMaxLanes = 12;
// Congestion trees (issue 42). Credit backpressure: a port upstream of the
// one that cannot drain waits for the blocked share of its traffic, less
// this factor per hop away from it (each hop's input buffer still takes
// some of the stalled data), so victims wait a little less than their root.
inline constexpr double kCreditSpreadPerHop = 0.9;
// slow-receiver: the HCA drains this fraction of its line rate (a receiver
// whose PCIe or memory cannot keep up); each source offers kIncastLoad.
inline constexpr double kSlowReceiverDrain = 0.1;
inline constexpr double kIncastLoad = 0.5;
// oversubscribed-uplink: each source's offered load. unbalanced-links: 1.6
// line rates in all, spread over the sources (at most 0.8 each): more than
// one cable carries, less than two do.
inline constexpr double kOversubscribedLoad = 0.8;
inline constexpr double kUnbalancedTotalLoad = 1.6;
// pfc-storm: a host paused by the switch relays pauses of its own (its
// receive buffer backs up while it cannot send) for this share of the time
// it is paused, from the tick after it is paused: hop by hop, each relay
// later and weaker than the NIC that started the storm.
inline constexpr double kPfcRelayShare = 0.5;

struct SimConfig {
  int hosts = 4;
  Duration tick = std::chrono::milliseconds(100);
  Timeline timeline;
};

enum class LinkLayer { kInfiniBand, kEthernet };

struct Port {
  std::string node;    // host or switch name
  std::string device;  // HCA name (mlx5_0) or switch name
  int port_num = 1;
  int host = -1;          // host index, -1 for switch ports
  int device_index = -1;  // into Cluster::devices(), -1 for switches
  LinkLayer link_layer = LinkLayer::kInfiniBand;
  std::uint16_t lid = 0;
  std::uint64_t guid = 0;
  int peer = -1;  // port at the other end of the link

  // Link state, recomputed every tick from the scenarios.
  int nominal_lanes = 4;
  int lanes = 4;
  double lane_gbps = 100;  // NDR
  bool up = true;

  // Physical layer, recomputed every tick from the scenarios: the pre-FEC
  // bit error ratio and the lane that carries the errors (-1: every lane
  // alike). The FEC's corrected bits accumulate at that ratio of the bits
  // the link carries at its line rate (idle symbols are bits too), exact
  // totals: RoCE rx_corrected_bits_phy and, one bit per symbol, IB PESC
  // corrected symbols.
  double pre_fec_ber = kHealthyPreFecBer;
  int error_lane = -1;
  std::uint64_t fec_corrected_bits = 0;
  std::array<std::uint64_t, kMaxLanes> lane_corrected_bits{};
  double fec_accumulator = 0;  // fractional bits
  // The transceiver's temperature (rendered for RoCE host ports).
  double module_temperature_celsius = kModuleTemperatureCelsius;

  PortCounters counters;
  std::map<std::string, std::uint64_t> hw_counters;  // hw_counters/ files
  std::map<std::string, std::uint64_t> ethtool;      // RoCE ports only

  // Exact byte totals (not wrapped) driving the derived counters.
  std::uint64_t tx_bytes = 0;
  std::uint64_t rx_bytes = 0;
  double wait_accumulator = 0;  // fractional xmit_wait ticks
  bool wait_in_bytes = false;   // a Quantum-2 switch port
  bool was_up = true;

  // Observables of the last tick (for tests and the MAD/ethtool views).
  double offered_bps = 0;    // bytes/s offered to this port's transmitter
  double delivered_bps = 0;  // bytes/s actually sent

  double RateBytesPerSecond() const { return lanes * lane_gbps * 1e9 / 8; }
  // port_xmit_wait ticks per second of waiting: a Quantum-2 switch port
  // counts bytes it could have sent, other ports time.
  double XmitWaitTicksPerSecond() const {
    return wait_in_bytes ? RateBytesPerSecond() / kQuantumXmitWaitBytesPerTick
                         : 1 / kXmitWaitTickSeconds;
  }
  double NominalBytesPerSecond() const {
    return nominal_lanes * lane_gbps * 1e9 / 8;
  }
  // sysfs `rate`, e.g. "400 Gb/sec (4X NDR)".
  std::string RateString() const;
};

struct Device {
  std::string name;  // mlx5_0
  int host = 0;
  std::string hca_type, fw_ver, board_id;
  std::uint64_t node_guid = 0;
  std::string node_desc;
  std::string netdev;  // RoCE only
  std::vector<int> ports;
  bool present = true;
  // RoCE congestion control (ECN notification and reaction points) on
  // kRocePriority, as rendered in class/net/<netdev>/ecn/; off while a
  // roce-cc-off event targets the device (a host set up as plain RoCE).
  bool roce_cc = true;
};

struct Host {
  std::string name;  // host0
  std::vector<int> devices;
};

struct SubnetManager {
  std::string node;
  std::uint16_t lid = 0;
  std::uint64_t guid = 0;
  std::uint8_t priority = 0;
  std::uint8_t state =
      0;  // SMInfo SMState: 0 off, 1 discovering, 2 standby, 3 master
  std::uint32_t act_count = 0;
  bool alive = true;  // answers SMInfo
};

struct Flow {
  std::vector<int> hops;  // transmitting port of each link on the path
  int src_host = -1;      // -1: traffic from outside the simulated hosts
  double offered_bps = 0;
  double delivered_bps = 0;
};

class Cluster {
 public:
  explicit Cluster(SimConfig config);

  // Advances the simulation by one tick.
  void Step();

  Duration now() const { return now_; }
  Duration tick() const { return config_.tick; }
  const SimConfig& config() const { return config_; }
  const std::vector<Host>& hosts() const { return hosts_; }
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<Port>& ports() const { return ports_; }
  // The ring flows, the hotspot's external flow, then this tick's flows of
  // the active congestion-tree scenarios (routed by the LFTs).
  const std::vector<Flow>& flows() const { return flows_; }
  const std::vector<SubnetManager>& sms() const { return sms_; }
  const SubnetManager& master_sm() const { return sms_[master_]; }

  // Port `port_num` of HCA `device` on host `host`, or nullptr.
  const Port* FindPort(int host, std::string_view device,
                       int port_num = 1) const;
  // The port of the present device whose netdev is `netdev` on `host`, or
  // nullptr (no such host or netdev, or its device removed).
  const Port* FindNetdevPort(int host, const std::string& netdev) const;
  // Port by LID (switch ports: any port of the switch with that LID and
  // number `port_num`), or nullptr.
  const Port* FindPortByLid(std::uint16_t lid, int port_num) const;

  // The fraction of host `from`'s probe packets to host `to` that the
  // fabric drops now: kProbeLossFraction while a probe-loss event on that
  // pair is on, else 0. The model carries no packets; fabricmon-sim's probe
  // relay (simulator/probe_relay.h) drops that share of what it forwards.
  double ProbeLoss(int from, int to) const;
  // Every pair that loses probes now, with its share (ProbeLoss of the
  // others is 0): one per probe-loss event that is on.
  struct LossyPair {
    int from, to;
    double loss;
  };
  std::vector<LossyPair> LossyProbePairs() const;
  // The share of `pairs` for (from, to), 0 when it is not among them.
  static double LossOf(const std::vector<LossyPair>& pairs, int from, int to);

  // Long-run average bytes/s each host port offers in `steady`.
  double AverageOfferedBytesPerSecond(const Port& port) const;

  // Device names of one H100-like host, in sysfs order.
  static const std::vector<std::string>& HostDeviceNames();

 private:
  int AddPort(Port port);
  void Connect(int a, int b);
  void BuildTopology();
  void ApplyScenarios();
  void RunTraffic(double dt);
  // This tick's congestion-tree flows (appended to flows_) and the slow
  // receivers' drain limits (on `capacity`); sets cross_rail_.
  void AddCongestionFlows(std::vector<double>* capacity);
  // Shares every transmitter among its flows; sets the flows' delivered
  // rates and returns each flow's last throttled hop (-1: none).
  std::vector<int> ShareCapacity(const std::vector<double>& capacity);
  void InjectErrors(double dt);
  void UpdatePhy(double dt);
  // dying-cable: the two links it degrades (the ports at one end).
  std::vector<Port*> DyingCablePorts(const Event& event);
  void UpdateSubnetManagers(double dt);
  bool DefaultTarget(const Event& event, int* host, std::string* device) const;
  Port* TargetPort(const Event& event);

  SimConfig config_;
  Duration now_{0};
  std::vector<Host> hosts_;
  std::vector<Device> devices_;
  std::vector<Port> ports_;
  std::vector<Flow> flows_;  // ring flows, then the hotspot's external flow
  std::vector<SubnetManager> sms_;
  int master_ = 0;
  int hotspot_flow_ = -1;
  std::size_t base_flows_ = 0;  // flows_ before the congestion flows
  // This tick, per rail: its ring all-reduce is the cross-rail traffic of
  // an oversubscribed-uplink or unbalanced-links event (both the sending
  // and the receiving rail), so the rail's own ring flows carry nothing.
  std::vector<bool> cross_rail_;
  // pfc-storm: per port, the share of the last tick a host relayed pauses.
  std::vector<double> pfc_relay_;
  int spine_first_port_ = -1;
  std::vector<int> leaf_first_port_;  // per rail, port 1 of ib-leaf<r>
  int eth_leaf_first_port_ = -1;
  // Per event: whether its one-shot effects (counter-saturation preset,
  // pause-storm events) already fired in the current on-phase.
  std::vector<bool> fired_;
  std::vector<bool> storm_error_fired_;
  std::vector<bool> device_was_present_;
};

}  // namespace fabric::sim
