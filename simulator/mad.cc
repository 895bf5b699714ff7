#include "simulator/mad.h"

#include <iba/ib_types.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "simulator/cluster_routes.h"
#include "simulator/routing.h"
#include "simulator/runner.h"

namespace fabric::sim {
namespace {

// Attributes opensm's ib_types.h has no name for (network order): PMA
// PortExtendedSpeedsCounters and SMP PortInfoExtended.
constexpr std::uint16_t kAttrPortExtendedSpeedsCounters = CL_HTON16(0x001f);
constexpr std::uint16_t kAttrPortInfoExtended = CL_HTON16(0x0033);

// PortInfo LinkWidthActive encoding (IBA 14.2.5.6): 1x=1, 4x=2, 8x=4,
// 12x=8, 2x=16.
std::uint8_t WidthCode(int lanes) {
  switch (lanes) {
    case 1:
      return 1;
    case 2:
      return 16;
    case 8:
      return 4;
    case 12:
      return 8;
    default:
      return 2;
  }
}

// LinkSpeedExtActive code (IBA 14.2.5.6, extended speeds: FDR 1, EDR 2,
// HDR 4, NDR 8) of a lane rate in Gb/s as the model has it.
std::uint8_t SpeedExtCode(double lane_gbps) {
  if (lane_gbps >= 100) return 8;
  if (lane_gbps >= 50) return 4;
  if (lane_gbps >= 25) return 2;
  return 1;
}

// Switch ports advertise PESC (PortInfo:CapabilityMask
// IsExtendedSpeedsSupported, bit 14) and a valid CapabilityMask2 (bit 15)
// naming PortInfoExtended (CapabilityMask2 bit 1), as Quantum switches do:
// the sweep reads PortExtendedSpeedsCounters in the RS-FEC layout there.
constexpr std::uint32_t kSwitchCapabilityMask = 0x00004000 | 0x00008000;
constexpr std::uint16_t kCapabilityMask2PortInfoExtended = 0x0002;

std::uint32_t Cap32(std::uint64_t v) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 0xffffffffu));
}

// Ports of the node owning `lid` (an HCA has one port; a switch many).
std::vector<const Port*> NodePorts(const Cluster& c, std::uint16_t lid) {
  std::vector<const Port*> out;
  for (const auto& p : c.ports()) {
    if (p.lid == lid && lid != 0) out.push_back(&p);
  }
  return out;
}

const Port* SelectPort(const std::vector<const Port*>& ports, int num) {
  if (ports.size() == 1 && ports[0]->host >= 0) return ports[0];
  for (const Port* p : ports) {
    if (p->port_num == num) return p;
  }
  return nullptr;
}

void SetStatus(Mad& response, ib_net16_t status) {
  auto* hdr = reinterpret_cast<ib_mad_t*>(response.data());
  hdr->status = status;
}

// `p`: the port the request came in by.
void FillNodeInfo(const Cluster& c, const std::vector<const Port*>& ports,
                  const Port& p, std::uint8_t* data) {
  ib_node_info_t ni{};
  const bool hca = p.host >= 0;
  ni.base_version = 1;
  ni.class_version = 1;
  ni.node_type = hca ? IB_NODE_TYPE_CA : IB_NODE_TYPE_SWITCH;
  ni.num_ports = static_cast<std::uint8_t>(hca ? 1 : ports.size());
  ni.sys_guid = cl_hton64(p.guid);
  ni.node_guid = cl_hton64(p.guid);
  ni.port_guid = cl_hton64(p.guid);
  ni.partition_cap = cl_hton16(128);
  // Quantum-2, or a switch whose PortXmitWait tick fabricmon does not know
  // (Timeline::quantum_switches).
  std::uint16_t device_id =
      c.config().timeline.quantum_switches ? 0xd2f2 : 0xb924;
  if (hca) {
    const Device& d = c.devices()[p.device_index];
    device_id = d.hca_type == "MT41692" ? 0xa2dc : 0x1021;  // BF-3 / CX-7
  }
  ni.device_id = cl_hton16(device_id);
  ni.revision = cl_hton32(0);
  // PortNum (local port the MAD came in on) in the top byte, VendorID 0x02c9.
  ni.port_num_vendor_id =
      cl_hton32((static_cast<std::uint32_t>(p.port_num) << 24) | 0x02c9u);
  std::memcpy(data, &ni, sizeof(ni));
}

void FillPortInfo(const Cluster& c, const Port& p, std::uint8_t* data) {
  ib_port_info_t pi{};
  pi.base_lid = cl_hton16(p.lid);
  pi.master_sm_base_lid = cl_hton16(c.master_sm().lid);
  pi.capability_mask =
      cl_hton32(p.host >= 0 ? 0xa751e848u : kSwitchCapabilityMask);
  // ConnectX-7 and Quantum-2 both report PortInfoExtended (FEC mode): the
  // node's own port reads PESC in the RS-FEC layout too (collector ib_link).
  pi.capability_mask2 = cl_hton16(kCapabilityMask2PortInfoExtended);
  pi.local_port_num = static_cast<std::uint8_t>(p.port_num);
  // Width: 1x always, up to the port's nominal width (Supported = Enabled);
  // Active: what the link trained to.
  pi.link_width_enabled = pi.link_width_supported =
      static_cast<std::uint8_t>(WidthCode(p.nominal_lanes) | 1u);
  pi.link_width_active = WidthCode(p.lanes);
  // LinkSpeedSupported (high nibble: SDR|DDR|QDR) | PortState (low nibble).
  const std::uint8_t state = p.up ? IB_LINK_ACTIVE : IB_LINK_DOWN;
  pi.state_info1 = static_cast<std::uint8_t>((7u << 4) | state);
  // PortPhysicalState (high nibble, 5 LinkUp / 2 Polling) | LinkDownDefault.
  pi.state_info2 = static_cast<std::uint8_t>(((p.up ? 5u : 2u) << 4) | 2u);
  // LinkSpeedActive (high nibble; QDR, overridden by the extended speed)
  // | LinkSpeedEnabled (SDR|DDR|QDR).
  pi.link_speed = static_cast<std::uint8_t>((4u << 4) | 7u);
  // LinkSpeedExtActive (high nibble) | LinkSpeedExtSupported (low: every
  // extended speed up to the port's own).
  const std::uint8_t ext = SpeedExtCode(p.lane_gbps);
  const auto ext_supported = static_cast<std::uint8_t>((ext << 1) - 1);
  pi.link_speed_ext = static_cast<std::uint8_t>((ext << 4) | ext_supported);
  pi.link_speed_ext_enabled = ext_supported;
  pi.mtu_smsl = static_cast<std::uint8_t>(IB_MTU_LEN_4096 << 4);
  pi.mtu_cap = IB_MTU_LEN_4096;
  std::memcpy(data, &pi, sizeof(pi));
}

// A switch's port 0 (the model has only its external ports): the switch
// LID, always active, IsSM while a live SM runs on the switch.
void FillSwitchPort0(const Cluster& c, const Port& any, std::uint8_t* data) {
  ib_port_info_t pi{};
  pi.base_lid = cl_hton16(any.lid);
  pi.master_sm_base_lid = cl_hton16(c.master_sm().lid);
  std::uint32_t caps = kSwitchCapabilityMask;
  pi.capability_mask2 = cl_hton16(kCapabilityMask2PortInfoExtended);
  for (const auto& sm : c.sms()) {
    if (sm.node == any.node && sm.alive) caps |= 0x2;  // IsSM
  }
  pi.capability_mask = cl_hton32(caps);
  pi.state_info1 = static_cast<std::uint8_t>((1u << 4) | IB_LINK_ACTIVE);
  pi.state_info2 = static_cast<std::uint8_t>((5u << 4) | 2u);
  pi.mtu_cap = IB_MTU_LEN_4096;
  std::memcpy(data, &pi, sizeof(pi));
}

// PortInfoExtended (IBA 14.2.5.19): FEC modes supported (CapabilityMask
// bit 0), RS-FEC active, as an NDR port runs.
void FillPortInfoExtended(std::uint8_t* data) {
  ib_port_info_ext_t e{};
  e.cap_mask = cl_hton32(1);
  e.fec_mode_active = IB_PORT_EXT_RS_FEC_MODE_ACTIVE;
  std::memcpy(data, &e, sizeof(e));
}

// The ports of the IB node `p` belongs to: the HCA's own port, or every
// port of its switch.
std::vector<const Port*> NodeOf(const Cluster& c, const Port& p) {
  std::vector<const Port*> out;
  for (const auto& q : c.ports()) {
    if (p.host >= 0 ? q.device_index == p.device_index
                    : (q.host < 0 && q.device == p.device)) {
      out.push_back(&q);
    }
  }
  return out;
}

// SwitchInfo and LinearForwardingTable at the switch of port `sw`: false
// for other attributes.
bool FillSwitchTables(const Cluster& c, const Port& sw, ib_net16_t attr,
                      std::uint32_t attr_mod, std::uint8_t* data) {
  if (sw.host >= 0 ||
      (attr != IB_MAD_ATTR_SWITCH_INFO && attr != IB_MAD_ATTR_LIN_FWD_TBL)) {
    return false;
  }
  const ClusterRoutes routes(c.ports());
  if (attr == IB_MAD_ATTR_SWITCH_INFO) {
    FillSwitchInfo(routes.routing(), data);
  } else {
    FillLftBlock(routes.routing(), routes.SwitchIndex(sw.device), attr_mod,
                 data);
  }
  return true;
}

// A directed-route SMP from `local_port`: walks initial_path over the
// model's links and answers at the node it reaches.
MadResult AnswerDirected(const Cluster& c, const Mad& request, int local_port) {
  if (local_port < 0 || local_port >= static_cast<int>(c.ports().size())) {
    return std::errc::host_unreachable;
  }
  const auto* smp = reinterpret_cast<const ib_smp_t*>(request.data());
  if (smp->hop_count >= IB_SUBNET_PATH_HOPS_MAX) {
    return std::errc::invalid_argument;
  }
  const Port* at = &c.ports()[local_port];  // the port the SMP is at
  for (int hop = 1; hop <= smp->hop_count; ++hop) {
    const Port* out = nullptr;
    for (const Port* q : NodeOf(c, *at)) {
      if (q->port_num == smp->initial_path[hop]) out = q;
    }
    // No such port, or no link there: the SMP is dropped (a timeout).
    if (!out || !out->up || out->peer < 0) return std::errc::timed_out;
    at = &c.ports()[out->peer];
    if (!at->up) return std::errc::timed_out;
  }
  Mad response = request;
  auto* r = reinterpret_cast<ib_smp_t*>(response.data());
  r->method = IB_MAD_METHOD_GET_RESP;
  r->status = CL_HTON16(0x8000);  // D bit: returning
  std::memset(r->data, 0, sizeof(r->data));
  auto status = [&](ib_net16_t s) {
    r->status = static_cast<ib_net16_t>(CL_HTON16(0x8000) | s);
    return response;
  };
  if (smp->method != IB_MAD_METHOD_GET) {
    return status(IB_MAD_STATUS_UNSUP_METHOD);
  }
  const auto ports = NodeOf(c, *at);
  const int num = static_cast<int>(cl_ntoh32(smp->attr_mod) & 0xff);
  if (FillSwitchTables(c, *at, smp->attr_id, cl_ntoh32(smp->attr_mod),
                       r->data)) {
    return response;
  }
  switch (smp->attr_id) {
    case IB_MAD_ATTR_NODE_INFO:
      FillNodeInfo(c, ports, *at, r->data);
      return response;
    case IB_MAD_ATTR_NODE_DESC: {
      const std::string desc =
          at->host >= 0 ? c.devices()[at->device_index].node_desc : at->node;
      std::memcpy(r->data, desc.data(),
                  std::min(desc.size(), sizeof(ib_node_desc_t)));
      return response;
    }
    case IB_MAD_ATTR_PORT_INFO: {
      if (at->host < 0 && num == 0) {
        FillSwitchPort0(c, *at, r->data);
        return response;
      }
      const Port* p = at->host >= 0 ? at : SelectPort(ports, num);
      if (!p || (at->host >= 0 && num != 0 && num != at->port_num)) {
        return status(IB_MAD_STATUS_INVALID_FIELD);
      }
      FillPortInfo(c, *p, r->data);
      return response;
    }
    case kAttrPortInfoExtended: {
      const Port* p = at->host >= 0 ? at : SelectPort(ports, num);
      if (!p) return status(IB_MAD_STATUS_INVALID_FIELD);
      FillPortInfoExtended(r->data);
      return response;
    }
    default:
      return status(IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  }
}

void FillPortCounters(const Port& p, std::uint8_t port_select,
                      std::uint8_t* data) {
  const PortCounters& k = p.counters;
  ib_port_counters_t pc{};
  pc.port_select = port_select;
  pc.counter_select = cl_hton16(0xffff);
  pc.symbol_err_cnt =
      cl_hton16(static_cast<std::uint16_t>(k.Get(Ctr::kSymbolError)));
  pc.link_err_recover =
      static_cast<std::uint8_t>(k.Get(Ctr::kLinkErrorRecovery));
  pc.link_downed = static_cast<std::uint8_t>(k.Get(Ctr::kLinkDowned));
  pc.rcv_err =
      cl_hton16(static_cast<std::uint16_t>(k.Get(Ctr::kPortRcvErrors)));
  pc.rcv_rem_phys_err = cl_hton16(
      static_cast<std::uint16_t>(k.Get(Ctr::kPortRcvRemotePhysicalErrors)));
  pc.rcv_switch_relay_err = cl_hton16(
      static_cast<std::uint16_t>(k.Get(Ctr::kPortRcvSwitchRelayErrors)));
  pc.xmit_discards =
      cl_hton16(static_cast<std::uint16_t>(k.Get(Ctr::kPortXmitDiscards)));
  pc.xmit_constraint_err =
      static_cast<std::uint8_t>(k.Get(Ctr::kPortXmitConstraintErrors));
  pc.rcv_constraint_err =
      static_cast<std::uint8_t>(k.Get(Ctr::kPortRcvConstraintErrors));
  pc.link_int_buffer_overrun =
      static_cast<std::uint8_t>((k.Get(Ctr::kLocalLinkIntegrityErrors) << 4) |
                                k.Get(Ctr::kExcessiveBufferOverrunErrors));
  pc.vl15_dropped =
      cl_hton16(static_cast<std::uint16_t>(k.Get(Ctr::kVL15Dropped)));
  pc.xmit_data = cl_hton32(Cap32(k.Get(Ctr::kPortXmitData)));
  pc.rcv_data = cl_hton32(Cap32(k.Get(Ctr::kPortRcvData)));
  pc.xmit_pkts = cl_hton32(Cap32(k.Get(Ctr::kPortXmitPackets)));
  pc.rcv_pkts = cl_hton32(Cap32(k.Get(Ctr::kPortRcvPackets)));
  pc.xmit_wait = cl_hton32(Cap32(k.Get(Ctr::kPortXmitWait)));
  std::memcpy(data, &pc, sizeof(pc));
}

void FillPortCountersExt(const Port& p, std::uint8_t port_select,
                         std::uint8_t* data) {
  const PortCounters& k = p.counters;
  ib_port_counters_ext_t e{};
  e.port_select = port_select;
  e.counter_select = cl_hton16(0xff);
  e.xmit_data = cl_hton64(k.Get(Ctr::kPortXmitData));
  e.rcv_data = cl_hton64(k.Get(Ctr::kPortRcvData));
  e.xmit_pkts = cl_hton64(k.Get(Ctr::kPortXmitPackets));
  e.rcv_pkts = cl_hton64(k.Get(Ctr::kPortRcvPackets));
  e.unicast_xmit_pkts = cl_hton64(k.Get(Ctr::kUnicastXmitPackets));
  e.unicast_rcv_pkts = cl_hton64(k.Get(Ctr::kUnicastRcvPackets));
  e.multicast_xmit_pkts = cl_hton64(k.Get(Ctr::kMulticastXmitPackets));
  e.multicast_rcv_pkts = cl_hton64(k.Get(Ctr::kMulticastRcvPackets));
  // The additional counters (ClassPortInfo advertises them): the model's
  // error counters as they are (it keeps them at their PortCounters
  // widths), PortXmitWait whole (never capped, unlike PortCounters').
  e.counter_select2 = cl_hton32(0xffffffff);
  e.symbol_err_cnt = cl_hton64(k.Get(Ctr::kSymbolError));
  e.link_err_recover = cl_hton64(k.Get(Ctr::kLinkErrorRecovery));
  e.link_downed = cl_hton64(k.Get(Ctr::kLinkDowned));
  e.rcv_err = cl_hton64(k.Get(Ctr::kPortRcvErrors));
  e.rcv_rem_phys_err = cl_hton64(k.Get(Ctr::kPortRcvRemotePhysicalErrors));
  e.rcv_switch_relay_err = cl_hton64(k.Get(Ctr::kPortRcvSwitchRelayErrors));
  e.xmit_discards = cl_hton64(k.Get(Ctr::kPortXmitDiscards));
  e.xmit_constraint_err = cl_hton64(k.Get(Ctr::kPortXmitConstraintErrors));
  e.rcv_constraint_err = cl_hton64(k.Get(Ctr::kPortRcvConstraintErrors));
  e.link_integrity_err = cl_hton64(k.Get(Ctr::kLocalLinkIntegrityErrors));
  e.buffer_overrun = cl_hton64(k.Get(Ctr::kExcessiveBufferOverrunErrors));
  e.vl15_dropped = cl_hton64(k.Get(Ctr::kVL15Dropped));
  e.xmit_wait = cl_hton64(k.Get(Ctr::kPortXmitWait));
  std::memcpy(data, &e, sizeof(e));
}

void Put16(std::uint8_t* at, std::uint64_t v) {
  const auto x = static_cast<std::uint16_t>(std::min<std::uint64_t>(v, 0xffff));
  at[0] = static_cast<std::uint8_t>(x >> 8);
  at[1] = static_cast<std::uint8_t>(x);
}
void Put32(std::uint8_t* at, std::uint64_t v) {
  const std::uint32_t x = Cap32(v);
  for (int i = 0; i < 4; ++i) {
    at[i] = static_cast<std::uint8_t>(x >> (24 - 8 * i));
  }
}

// PerfMgt ClassPortInfo: BaseVersion, ClassVersion, and CapabilityMask
// bit 9 (IsExtendedWidthSupported: PortCountersExtended) and bit 14
// (IsPMRSFECCountersSupported: the RS-FEC PESC layout exists);
// CapabilityMask2 bit 1 (IsAddlPortCountersExtendedSupported: the 64-bit
// error counters and PortXmitWait in PortCountersExtended, which
// FillPortCountersExt fills).
void FillPmaClassPortInfo(std::uint8_t* data) {
  ib_class_port_info_t cpi{};
  cpi.base_ver = 1;
  cpi.class_ver = 1;
  cpi.cap_mask = cl_hton16((1u << 9) | (1u << 14));
  ib_class_set_cap_mask2(&cpi, 1u << 1);
  std::memcpy(data, &cpi, sizeof(cpi));
}

// PortExtendedSpeedsCounters (PMA 0x1F) in the RS-FEC layout. opensm's
// ib_types.h has no struct for it, so the fields go at the offsets of
// libibmad's IB_PESC_RSFEC_* (byte offsets in the PerfMgt data):
// PortSelect 1, CounterSelect 4-11, SyncHeaderErrorCounter 16-17,
// UnknownBlockCounter 18-19, FECCorrectedSymbolCounterLane[l] 44+4l,
// PortFECCorrectableBlockCounter 140, PortFECUncorrectableBlockCounter 144,
// PortFECCorrectedSymbolCounter 148; 32-bit counters saturate.
// sim_mad_test checks them against fabricmon's libibmad-based decoder.
void FillPesc(const Port& p, std::uint8_t port_select, std::uint8_t* data) {
  data[1] = port_select;
  for (int i = 4; i < 12; ++i) data[i] = 0xff;  // every counter selected
  Put16(data + 16, 0);
  Put16(data + 18, 0);
  for (int l = 0; l < kMaxLanes; ++l) {
    Put32(data + 44 + 4 * l, p.lane_corrected_bits[l]);
  }
  // A corrected codeword per 10 corrected symbols (errors come in bursts).
  Put32(data + 140, p.fec_corrected_bits / 10);
  Put32(data + 144, 0);
  Put32(data + 148, p.fec_corrected_bits);
}

// The wire of every simulated responder: `answer` computes the response and
// names the node that serves it (for the per-node limit).
class SimMadTransport : public MadTransport {
 public:
  using Answerer = std::function<MadResult(std::uint16_t dlid, const Mad& mad,
                                           std::uint32_t* node)>;
  SimMadTransport(Answerer answer, SimMadOptions options)
      : answer_(std::move(answer)), options_(options) {}

 protected:
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds) override {
    std::uint32_t node = dlid;
    const MadResult r = answer_(dlid, mad, &node);
    if (!r.ok()) return true;  // sent; nobody answers
    int& busy = in_flight_[node];
    if (options_.per_node_limit > 0 && busy >= options_.per_node_limit) {
      return true;  // dropped by the overloaded node
    }
    ++busy;
    queue_.push_back(
        {std::chrono::steady_clock::now() + options_.service_time, node, *r});
    return true;
  }

  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override {
    const auto now = std::chrono::steady_clock::now();
    auto until = now + wait;
    if (!queue_.empty()) until = std::min(until, queue_.front().due);
    if (until > now) std::this_thread::sleep_until(until);
    const auto after = std::chrono::steady_clock::now();
    // Constant service time: answers fall due in request order.
    while (!queue_.empty() && queue_.front().due <= after) {
      answers->push_back(Answer::Of(queue_.front().response));
      --in_flight_[queue_.front().node];
      queue_.pop_front();
    }
  }

 private:
  struct Due {
    std::chrono::steady_clock::time_point due;
    std::uint32_t node;
    Mad response;
  };
  Answerer answer_;
  SimMadOptions options_;
  std::deque<Due> queue_;
  std::unordered_map<std::uint32_t, int> in_flight_;
};

}  // namespace

MadResult AnswerMad(const Cluster& c, std::uint16_t dlid, const Mad& request,
                    int local_port) {
  const auto* hdr = reinterpret_cast<const ib_mad_t*>(request.data());
  if (hdr->base_ver != 1) {
    return std::errc::invalid_argument;
  }
  if (hdr->mgmt_class == IB_MCLASS_SUBN_DIR) {
    return AnswerDirected(c, request, local_port);
  }
  const auto ports = NodePorts(c, dlid);
  if (ports.empty()) {
    return std::errc::host_unreachable;
  }
  Mad response = request;
  auto* rhdr = reinterpret_cast<ib_mad_t*>(response.data());
  rhdr->method = IB_MAD_METHOD_GET_RESP;
  rhdr->status = 0;
  if (hdr->method != IB_MAD_METHOD_GET) {
    // fabricmon's simulator, like fabricmon, never changes the fabric.
    SetStatus(response, IB_MAD_STATUS_UNSUP_METHOD);
    return response;
  }
  const std::uint32_t attr_mod = cl_ntoh32(hdr->attr_mod);
  if (hdr->mgmt_class == IB_MCLASS_SUBN_LID) {
    auto* smp = reinterpret_cast<ib_smp_t*>(response.data());
    std::memset(smp->data, 0, sizeof(smp->data));
    if (hdr->attr_id == IB_MAD_ATTR_SM_INFO) {
      const SubnetManager* sm = nullptr;
      for (const auto& s : c.sms()) {
        if (s.lid == dlid) sm = &s;
      }
      if (!sm) {
        SetStatus(response, IB_MAD_STATUS_UNSUP_METHOD_ATTR);
        return response;
      }
      if (!sm->alive) {
        return std::errc::timed_out;
      }
      ib_sm_info_t si{};
      si.guid = cl_hton64(sm->guid);
      si.act_count = cl_hton32(sm->act_count);
      si.pri_state =
          static_cast<std::uint8_t>((sm->priority << 4) | (sm->state & 0x0f));
      std::memcpy(smp->data, &si, sizeof(si));
      return response;
    }
    if (hdr->attr_id == IB_MAD_ATTR_NODE_INFO) {
      FillNodeInfo(c, ports, *ports[0], smp->data);
      return response;
    }
    if (hdr->attr_id == IB_MAD_ATTR_NODE_DESC) {
      const Port& p = *ports[0];
      const std::string desc =
          p.host >= 0 ? c.devices()[p.device_index].node_desc : p.node;
      std::memcpy(smp->data, desc.data(),
                  std::min(desc.size(), sizeof(ib_node_desc_t)));
      return response;
    }
    if (hdr->attr_id == IB_MAD_ATTR_PORT_INFO) {
      const int num = attr_mod == 0 ? ports[0]->port_num
                                    : static_cast<int>(attr_mod & 0xff);
      const Port* p = SelectPort(ports, num);
      if (!p) {
        SetStatus(response, IB_MAD_STATUS_INVALID_FIELD);
        return response;
      }
      FillPortInfo(c, *p, smp->data);
      return response;
    }
    if (hdr->attr_id == kAttrPortInfoExtended) {
      FillPortInfoExtended(smp->data);
      return response;
    }
    if (FillSwitchTables(c, *ports[0], hdr->attr_id, attr_mod, smp->data)) {
      return response;
    }
  } else if (hdr->mgmt_class == IB_MCLASS_PERF) {
    auto* pm = reinterpret_cast<ib_perfmgt_mad_t*>(response.data());
    const std::uint8_t port_select = pm->data[1];
    std::memset(pm->data, 0, sizeof(pm->data));
    const Port* p = SelectPort(ports, port_select);
    if (hdr->attr_id == IB_MAD_ATTR_CLASS_PORT_INFO) {
      FillPmaClassPortInfo(pm->data);
      return response;
    }
    if (hdr->attr_id == kAttrPortExtendedSpeedsCounters) {
      if (!p) {
        SetStatus(response, IB_MAD_STATUS_INVALID_FIELD);
        return response;
      }
      FillPesc(*p, port_select, pm->data);
      return response;
    }
    if (hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS ||
        hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS_EXT) {
      if (!p) {
        SetStatus(response, IB_MAD_STATUS_INVALID_FIELD);
        return response;
      }
      if (hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS) {
        FillPortCounters(*p, port_select, pm->data);
      } else {
        FillPortCountersExt(*p, port_select, pm->data);
      }
      return response;
    }
  }
  SetStatus(response, IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  return response;
}

std::unique_ptr<MadTransport> MakeSimMadTransport(const Cluster& cluster,
                                                  SimMadOptions options) {
  return std::make_unique<SimMadTransport>(
      [&cluster, from = options.local_port](std::uint16_t dlid, const Mad& mad,
                                            std::uint32_t*) {
        return AnswerMad(cluster, dlid, mad, from);
      },
      options);
}

std::unique_ptr<MadTransport> MakeSimMadTransport(const LiveRunner& runner,
                                                  SimMadOptions options) {
  return std::make_unique<SimMadTransport>(
      [&runner, from = options.local_port](std::uint16_t dlid, const Mad& mad,
                                           std::uint32_t*) {
        MadResult r = std::errc::host_unreachable;
        runner.WithCluster(
            [&](const Cluster& c) { r = AnswerMad(c, dlid, mad, from); });
        return r;
      },
      options);
}

std::uint16_t SwitchFarm::Lid(int index) {
  return static_cast<std::uint16_t>(index + 1);
}

std::vector<std::uint8_t> SwitchFarm::Path(int index) {
  return {1, static_cast<std::uint8_t>(index / 64 + 1),
          static_cast<std::uint8_t>(index % 64 + 1)};
}

std::uint64_t SwitchFarm::Guid(int index) {
  return 0x0002c90300000000ULL + static_cast<std::uint64_t>(index);
}

std::uint64_t SwitchFarm::XmitData(int index, int port) {
  return 1000000ULL * static_cast<std::uint64_t>(index) +
         static_cast<std::uint64_t>(port);
}

MadResult SwitchFarm::Answer(std::uint16_t dlid, const Mad& request,
                             std::uint32_t* node) const {
  const auto* hdr = reinterpret_cast<const ib_mad_t*>(request.data());
  int index = -1;
  if (hdr->mgmt_class == IB_MCLASS_SUBN_DIR) {
    const auto* smp = reinterpret_cast<const ib_smp_t*>(request.data());
    if (smp->hop_count == 3 && smp->initial_path[1] == 1) {
      index = (smp->initial_path[2] - 1) * 64 + (smp->initial_path[3] - 1);
    }
  } else {
    index = static_cast<int>(dlid) - 1;
  }
  if (index < 0 || index >= switches_) {
    return std::errc::host_unreachable;
  }
  *node = static_cast<std::uint32_t>(index);
  Mad response = request;
  auto* rhdr = reinterpret_cast<ib_mad_t*>(response.data());
  rhdr->method = IB_MAD_METHOD_GET_RESP;
  if (hdr->mgmt_class == IB_MCLASS_SUBN_DIR) {
    auto* smp = reinterpret_cast<ib_smp_t*>(response.data());
    smp->status = CL_HTON16(0x8000);  // D bit: returning
    const int port = static_cast<int>(cl_ntoh32(hdr->attr_mod));
    ib_port_info_t pi{};
    pi.base_lid = cl_hton16(Lid(index));
    pi.local_port_num = static_cast<std::uint8_t>(port);
    pi.state_info1 = static_cast<std::uint8_t>((1u << 4) | IB_LINK_ACTIVE);
    pi.state_info2 = static_cast<std::uint8_t>((5u << 4) | 2u);
    std::memset(smp->data, 0, sizeof(smp->data));
    std::memcpy(smp->data, &pi, sizeof(pi));
    return response;
  }
  auto* pm = reinterpret_cast<ib_perfmgt_mad_t*>(response.data());
  const std::uint8_t port = pm->data[1];
  std::memset(pm->data, 0, sizeof(pm->data));
  if (hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS_EXT) {
    ib_port_counters_ext_t e{};
    e.port_select = port;
    e.xmit_data = cl_hton64(XmitData(index, port));
    std::memcpy(pm->data, &e, sizeof(e));
  } else {
    ib_port_counters_t pc{};
    pc.port_select = port;
    pc.symbol_err_cnt = cl_hton16(static_cast<std::uint16_t>(port));
    std::memcpy(pm->data, &pc, sizeof(pc));
  }
  return response;
}

std::unique_ptr<MadTransport> MakeAnsweringMadTransport(
    std::function<MadResult(std::uint16_t, const Mad&, std::uint32_t*)> answer,
    SimMadOptions options) {
  return std::make_unique<SimMadTransport>(std::move(answer), options);
}

std::unique_ptr<MadTransport> MakeSwitchFarmMadTransport(
    std::shared_ptr<const SwitchFarm> farm, SimMadOptions options) {
  return std::make_unique<SimMadTransport>(
      [farm](std::uint16_t dlid, const Mad& mad, std::uint32_t* node) {
        return farm->Answer(dlid, mad, node);
      },
      options);
}

}  // namespace fabric::sim
