#include "sources/mad/codec.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace fabric::mad {
namespace {

// libibmad's accessors take a non-const buffer; they only read here.
std::uint8_t* Raw(Bytes mad) { return const_cast<std::uint8_t*>(mad.data()); }

Mad Encode(int mgtclass, std::uint16_t attr, std::uint32_t attr_mod,
           const DrPath* path, const std::uint8_t* data, int dataoffs,
           int datasz) {
  Mad mad{};
  ib_rpc_t rpc{};
  rpc.mgtclass = mgtclass;
  rpc.method = IB_MAD_METHOD_GET;
  rpc.attr.id = attr;
  rpc.attr.mod = attr_mod;
  rpc.trid = 1;  // the transport's engine sets the real one
  rpc.dataoffs = dataoffs;
  rpc.datasz = datasz;
  ib_dr_path_t dr{};
  if (path) {
    dr.cnt = static_cast<int>(
        std::min<std::size_t>(path->size(), IB_SUBNET_PATH_HOPS_MAX - 1));
    for (int i = 0; i < dr.cnt; ++i) dr.p[i + 1] = (*path)[i];
  }
  mad_encode(mad.data(), &rpc, path ? &dr : nullptr,
             data ? const_cast<std::uint8_t*>(data) : nullptr);
  return mad;
}

// IBA 13.4.7: bit 0 busy, bit 1 redirect, bits 2-4 an invalid-field code.
const char* StatusText(std::uint16_t status) {
  switch ((status >> 2) & 0x7) {
    case 1:
      return "bad class version";
    case 2:
      return "unsupported method";
    case 3:
      return "unsupported method/attribute";
    case 7:
      return "invalid attribute or modifier";
    default:
      break;
  }
  if (status & 1) return "busy";
  if (status & 2) return "redirect required";
  return "error";
}

// Shared checks; the class may be either SMP class for SMP attributes.
bool Check(Bytes mad, bool smp, std::uint16_t attr, std::string* error) {
  if (mad.size() < IB_MAD_SIZE) {
    *error = "truncated MAD (" + std::to_string(mad.size()) + " bytes)";
    return false;
  }
  std::uint8_t* b = Raw(mad);
  if (mad_get_field(b, 0, IB_MAD_BASEVER_F) != 1) {
    *error = "bad MAD base version";
    return false;
  }
  const unsigned mclass = mad_get_field(b, 0, IB_MAD_MGMTCLASS_F);
  const bool class_ok =
      smp ? (mclass == IB_SMI_CLASS || mclass == IB_SMI_DIRECT_CLASS)
          : mclass == IB_PERFORMANCE_CLASS;
  // libibmad splits the method byte into the R (response) bit and the rest.
  if (!class_ok || mad_get_field(b, 0, IB_MAD_RESPONSE_F) != 1 ||
      mad_get_field(b, 0, IB_MAD_METHOD_F) != IB_MAD_METHOD_GET) {
    *error = "not a GetResp of the expected class";
    return false;
  }
  if (mad_get_field(b, 0, IB_MAD_ATTRID_F) != attr) {
    *error = "unexpected attribute";
    return false;
  }
  const auto status = MadStatus(mad);
  if (status && *status != 0) {
    char text[96];
    std::snprintf(text, sizeof(text), "MAD status 0x%04x (%s)", *status,
                  StatusText(*status));
    *error = text;
    return false;
  }
  return true;
}

}  // namespace

Mad SmpGet(std::uint16_t attr, std::uint32_t attr_mod) {
  return Encode(IB_SMI_CLASS, attr, attr_mod, nullptr, nullptr,
                IB_SMP_DATA_OFFS, 0);
}

Mad DrSmpGet(std::uint16_t attr, std::uint32_t attr_mod, const DrPath& path) {
  return Encode(IB_SMI_DIRECT_CLASS, attr, attr_mod, &path, nullptr,
                IB_SMP_DATA_OFFS, 0);
}

Mad PerfGet(std::uint16_t attr, std::uint8_t port) {
  std::uint8_t data[IB_PC_DATA_SZ] = {};
  mad_set_field(data, 0, IB_PC_PORT_SELECT_F, port);
  return Encode(IB_PERFORMANCE_CLASS, attr, 0, nullptr, data, IB_PC_DATA_OFFS,
                IB_PC_DATA_SZ);
}

std::optional<std::uint16_t> MadStatus(Bytes mad) {
  if (mad.size() < IB_MAD_SIZE) return std::nullopt;
  std::uint8_t* b = Raw(mad);
  if (mad_get_field(b, 0, IB_MAD_MGMTCLASS_F) == IB_SMI_DIRECT_CLASS) {
    return static_cast<std::uint16_t>(mad_get_field(b, 0, IB_DRSMP_STATUS_F));
  }
  return static_cast<std::uint16_t>(mad_get_field(b, 0, IB_MAD_STATUS_F));
}

std::optional<SmInfo> DecodeSmInfo(Bytes mad, std::string* error) {
  if (!Check(mad, true, kAttrSmInfo, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_SMP_DATA_OFFS;
  SmInfo s;
  s.guid = mad_get_field64(d, 0, IB_SMINFO_GUID_F);
  s.act_count = mad_get_field(d, 0, IB_SMINFO_ACT_F);
  s.priority = static_cast<int>(mad_get_field(d, 0, IB_SMINFO_PRIO_F));
  s.state = static_cast<int>(mad_get_field(d, 0, IB_SMINFO_STATE_F));
  return s;
}

std::optional<NodeInfo> DecodeNodeInfo(Bytes mad, std::string* error) {
  if (!Check(mad, true, kAttrNodeInfo, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_SMP_DATA_OFFS;
  NodeInfo n;
  n.node_type = static_cast<int>(mad_get_field(d, 0, IB_NODE_TYPE_F));
  n.num_ports = static_cast<int>(mad_get_field(d, 0, IB_NODE_NPORTS_F));
  n.system_guid = mad_get_field64(d, 0, IB_NODE_SYSTEM_GUID_F);
  n.node_guid = mad_get_field64(d, 0, IB_NODE_GUID_F);
  n.port_guid = mad_get_field64(d, 0, IB_NODE_PORT_GUID_F);
  n.local_port = static_cast<int>(mad_get_field(d, 0, IB_NODE_LOCAL_PORT_F));
  n.device_id =
      static_cast<std::uint16_t>(mad_get_field(d, 0, IB_NODE_DEVID_F));
  if (n.node_type < 1 || n.node_type > 4) {
    *error = "bad NodeInfo node type " + std::to_string(n.node_type);
    return std::nullopt;
  }
  return n;
}

std::optional<std::string> DecodeNodeDescription(Bytes mad,
                                                 std::string* error) {
  if (!Check(mad, true, kAttrNodeDescription, error)) return std::nullopt;
  char desc[IB_SMP_DATA_SIZE + 1] = {};
  mad_decode_field(Raw(mad) + IB_SMP_DATA_OFFS, IB_NODE_DESC_F, desc);
  desc[64] = '\0';
  std::string out(desc, strnlen(desc, 64));
  // Only printable ASCII survives into a label.
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) > 0x7e) {
      c = '?';
    }
  }
  return out;
}

std::optional<PortInfo> DecodePortInfo(Bytes mad, std::string* error) {
  if (!Check(mad, true, kAttrPortInfo, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_SMP_DATA_OFFS;
  PortInfo p;
  p.lid = static_cast<std::uint16_t>(mad_get_field(d, 0, IB_PORT_LID_F));
  p.sm_lid = static_cast<std::uint16_t>(mad_get_field(d, 0, IB_PORT_SMLID_F));
  p.capability_mask = mad_get_field(d, 0, IB_PORT_CAPMASK_F);
  p.state = static_cast<int>(mad_get_field(d, 0, IB_PORT_STATE_F));
  p.phys_state = static_cast<int>(mad_get_field(d, 0, IB_PORT_PHYS_STATE_F));
  p.local_port = static_cast<int>(mad_get_field(d, 0, IB_PORT_LOCAL_PORT_F));
  p.lmc = static_cast<int>(mad_get_field(d, 0, IB_PORT_LMC_F));
  auto get = [&](MAD_FIELDS f) {
    return static_cast<int>(mad_get_field(d, 0, f));
  };
  p.link_width_supported = get(IB_PORT_LINK_WIDTH_SUPPORTED_F);
  p.link_width_enabled = get(IB_PORT_LINK_WIDTH_ENABLED_F);
  p.link_width_active = get(IB_PORT_LINK_WIDTH_ACTIVE_F);
  p.link_speed_supported = get(IB_PORT_LINK_SPEED_SUPPORTED_F);
  p.link_speed_enabled = get(IB_PORT_LINK_SPEED_ENABLED_F);
  p.link_speed_active = get(IB_PORT_LINK_SPEED_ACTIVE_F);
  p.link_speed_ext_supported = get(IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
  p.link_speed_ext_enabled = get(IB_PORT_LINK_SPEED_EXT_ENABLED_F);
  p.link_speed_ext_active = get(IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
  return p;
}

int WidthLanes(int width_code) {
  switch (width_code) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

namespace {

double BaseGbps(int code) {
  switch (code) {
    case 1:
      return 2.5;
    case 2:
      return 5;
    case 4:
      return 10;
    default:
      return 0;
  }
}

double ExtGbps(int code) {
  switch (code) {
    case 1:
      return 14;
    case 2:
      return 25;
    case 4:
      return 50;
    case 8:
      return 100;
    default:
      return 0;
  }
}

// Supported & Enabled, where an Enabled that names nothing Supported (0,
// or a PMA that does not fill it) means "as supported".
int Usable(int supported, int enabled) {
  const int both = supported & enabled;
  return both != 0 ? both : supported;
}

}  // namespace

double LaneGbps(int speed_code, int speed_ext_code) {
  if (speed_ext_code != 0) return ExtGbps(speed_ext_code);
  return BaseGbps(speed_code);
}

int CapableLanes(const PortInfo& p) {
  const int mask = Usable(p.link_width_supported, p.link_width_enabled);
  int best = 0;
  for (int bit = 0; bit < 5; ++bit) {
    if (mask & (1 << bit)) best = std::max(best, WidthLanes(1 << bit));
  }
  return best;
}

double CapableLaneGbps(const PortInfo& p) {
  double best = 0;
  // Extended speeds count only where the port names them supported: a PMA
  // without them leaves the fields 0.
  const int ext = p.link_speed_ext_supported & p.link_speed_ext_enabled;
  for (int bit = 0; bit < 4; ++bit) {
    if (ext & (1 << bit)) best = std::max(best, ExtGbps(1 << bit));
  }
  const int base = Usable(p.link_speed_supported, p.link_speed_enabled);
  for (int bit = 0; bit < 3; ++bit) {
    if (base & (1 << bit)) best = std::max(best, BaseGbps(1 << bit));
  }
  return best;
}

std::optional<SwitchInfo> DecodeSwitchInfo(Bytes mad, std::string* error) {
  if (!Check(mad, true, kAttrSwitchInfo, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_SMP_DATA_OFFS;
  SwitchInfo s;
  s.linear_fdb_cap = mad_get_field(d, 0, IB_SW_LINEAR_FDB_CAP_F);
  s.linear_fdb_top = mad_get_field(d, 0, IB_SW_LINEAR_FDB_TOP_F);
  s.mcast_fdb_cap = mad_get_field(d, 0, IB_SW_MCAST_FDB_CAP_F);
  s.default_port = static_cast<int>(mad_get_field(d, 0, IB_SW_DEF_PORT_F));
  s.enhanced_port0 = mad_get_field(d, 0, IB_SW_ENHANCED_PORT0_F) != 0;
  return s;
}

std::optional<LftBlock> DecodeLftBlock(Bytes mad, std::string* error) {
  if (!Check(mad, true, kAttrLinearForwardingTable, error)) {
    return std::nullopt;
  }
  LftBlock b;
  b.block = mad_get_field(Raw(mad), 0, IB_MAD_ATTRMOD_F);
  if (b.block > kLftMaxBlock) {
    *error = "LFT block " + std::to_string(b.block) + " out of range";
    return std::nullopt;
  }
  // IB_LINEAR_FORW_TBL_F is the whole 64-byte block; libibmad copies it.
  mad_decode_field(Raw(mad) + IB_SMP_DATA_OFFS, IB_LINEAR_FORW_TBL_F,
                   b.ports.data());
  return b;
}

std::optional<PortCounters> DecodePortCounters(Bytes mad, std::string* error) {
  if (!Check(mad, false, kAttrPortCounters, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_PC_DATA_OFFS;
  PortCounters c;
  // Field widths as IBA PortCounters (attr 0x12) has them (the host side,
  // collectors/ib_port.cc, uses the same): a field at 2^bits-1 is stuck.
  struct Field {
    const char* name;
    MAD_FIELDS field;
    unsigned bits;
  };
  static const Field kErrors[] = {
      {"symbol_error", IB_PC_ERR_SYM_F, 16},
      {"link_error_recovery", IB_PC_LINK_RECOVERS_F, 8},
      {"link_downed", IB_PC_LINK_DOWNED_F, 8},
      {"port_rcv_errors", IB_PC_ERR_RCV_F, 16},
      {"port_rcv_remote_physical_errors", IB_PC_ERR_PHYSRCV_F, 16},
      {"port_rcv_switch_relay_errors", IB_PC_ERR_SWITCH_REL_F, 16},
      {"port_xmit_discards", IB_PC_XMT_DISCARDS_F, 16},
      {"port_xmit_constraint_errors", IB_PC_ERR_XMTCONSTR_F, 8},
      {"port_rcv_constraint_errors", IB_PC_ERR_RCVCONSTR_F, 8},
      {"local_link_integrity_errors", IB_PC_ERR_LOCALINTEG_F, 4},
      {"excessive_buffer_overrun_errors", IB_PC_ERR_EXCESS_OVR_F, 4},
      {"VL15_dropped", IB_PC_VL15_DROPPED_F, 16},
  };
  auto at_max = [](std::uint64_t v, unsigned bits) {
    return v == (std::uint64_t{1} << bits) - 1;
  };
  for (const auto& [name, field, bits] : kErrors) {
    c.errors[name] = mad_get_field(d, 0, field);
    if (at_max(c.errors[name], bits)) c.saturated.push_back(name);
  }
  c.xmit_data = mad_get_field(d, 0, IB_PC_XMT_BYTES_F);
  c.rcv_data = mad_get_field(d, 0, IB_PC_RCV_BYTES_F);
  c.xmit_pkts = mad_get_field(d, 0, IB_PC_XMT_PKTS_F);
  c.rcv_pkts = mad_get_field(d, 0, IB_PC_RCV_PKTS_F);
  c.xmit_wait = mad_get_field(d, 0, IB_PC_XMT_WAIT_F);
  // Sticks under long congestion; the 64-bit one is in PortCountersExtended
  // where the PMA advertises it (DecodePortCountersExtended, additional).
  if (at_max(c.xmit_wait, 32)) c.saturated.push_back("port_xmit_wait");
  return c;
}

std::optional<PortCountersExtended> DecodePortCountersExtended(
    Bytes mad, std::string* error, bool additional) {
  if (!Check(mad, false, kAttrPortCountersExtended, error)) {
    return std::nullopt;
  }
  std::uint8_t* d = Raw(mad) + IB_PC_DATA_OFFS;
  PortCountersExtended e;
  e.xmit_data = mad_get_field64(d, 0, IB_PC_EXT_XMT_BYTES_F);
  e.rcv_data = mad_get_field64(d, 0, IB_PC_EXT_RCV_BYTES_F);
  e.xmit_pkts = mad_get_field64(d, 0, IB_PC_EXT_XMT_PKTS_F);
  e.rcv_pkts = mad_get_field64(d, 0, IB_PC_EXT_RCV_PKTS_F);
  if (additional) e.xmit_wait = mad_get_field64(d, 0, IB_PC_EXT_XMT_WAIT_F);
  return e;
}

std::string GuidString(std::uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(guid));
  return text;
}

// --- PortExtendedSpeedsCounters -------------------------------------------

Mad PmaClassPortInfoGet() {
  return Encode(IB_PERFORMANCE_CLASS, kAttrClassPortInfo, 0, nullptr, nullptr,
                IB_PC_DATA_OFFS, 0);
}

Mad PescGet(std::uint8_t port) {
  std::uint8_t data[IB_PC_DATA_SZ] = {};
  mad_set_field(data, 0, IB_PESC_PORT_SELECT_F, port);
  return Encode(IB_PERFORMANCE_CLASS, kAttrPortExtendedSpeedsCounters, 0,
                nullptr, data, IB_PC_DATA_OFFS, IB_PC_DATA_SZ);
}

std::optional<std::uint16_t> DecodePortInfoCapabilityMask2(Bytes mad,
                                                           std::string* error) {
  if (!Check(mad, true, kAttrPortInfo, error)) return std::nullopt;
  return static_cast<std::uint16_t>(
      mad_get_field(Raw(mad) + IB_SMP_DATA_OFFS, 0, IB_PORT_CAPMASK2_F));
}

bool PescNeedsPortInfoExtended(std::uint32_t port_capability_mask,
                               std::uint16_t port_capability_mask2,
                               const PmaClassPortInfo& pma) {
  return (port_capability_mask & kCapabilityHasExtendedSpeeds) &&
         pma.RsFecCountersSupported() &&
         (port_capability_mask & kCapabilityHasCapabilityMask2) &&
         (port_capability_mask2 & kCapability2PortInfoExtended);
}

PescLayout ChoosePescLayout(std::uint32_t port_capability_mask,
                            const PmaClassPortInfo& pma,
                            const std::optional<PortInfoExtended>& ext) {
  if (!(port_capability_mask & kCapabilityHasExtendedSpeeds)) {
    return PescLayout::kNone;
  }
  // perfquery's is_rsfec_mode_active(): RS-FEC (2) or its low-latency
  // variant (3), and only when the port says it reports FEC modes at all.
  if (pma.RsFecCountersSupported() && ext && (ext->capability_mask & 1) &&
      (ext->fec_mode_active == 2 || ext->fec_mode_active == 3)) {
    return PescLayout::kRsFec;
  }
  return PescLayout::kErrorDetection;
}

std::optional<PmaClassPortInfo> DecodePmaClassPortInfo(Bytes mad,
                                                       std::string* error) {
  if (!Check(mad, false, kAttrClassPortInfo, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_PC_DATA_OFFS;
  PmaClassPortInfo c;
  c.capability_mask =
      static_cast<std::uint16_t>(mad_get_field(d, 0, IB_CPI_CAPMASK_F));
  c.capability_mask2 = mad_get_field(d, 0, IB_CPI_CAPMASK2_F);
  return c;
}

std::optional<PortInfoExtended> DecodePortInfoExtended(Bytes mad,
                                                       std::string* error) {
  if (!Check(mad, true, kAttrPortInfoExtended, error)) return std::nullopt;
  std::uint8_t* d = Raw(mad) + IB_SMP_DATA_OFFS;
  PortInfoExtended e;
  e.capability_mask = mad_get_field(d, 0, IB_PORT_EXT_CAPMASK_F);
  e.fec_mode_active = static_cast<std::uint16_t>(
      mad_get_field(d, 0, IB_PORT_EXT_FEC_MODE_ACTIVE_F));
  return e;
}

namespace {

// Lane fields are consecutive enumerators in libibmad's MAD_FIELDS.
MAD_FIELDS Lane(MAD_FIELDS lane0, int lane) {
  return static_cast<MAD_FIELDS>(static_cast<int>(lane0) + lane);
}
static_assert(IB_PESC_ERR_DET_CTR_LANE0_F + 11 == IB_PESC_ERR_DET_CTR_LANE11_F);
static_assert(IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F + 11 ==
              IB_PESC_FEC_CORR_BLOCK_CTR_LANE11_F);
static_assert(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F + 11 ==
              IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE11_F);
static_assert(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F + 11 ==
              IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE11_F);

}  // namespace

std::optional<PortExtendedSpeedsCounters> DecodePortExtendedSpeedsCounters(
    Bytes mad, PescLayout layout, std::string* error) {
  if (layout == PescLayout::kNone) {
    *error = "port has no PortExtendedSpeedsCounters";
    return std::nullopt;
  }
  if (!Check(mad, false, kAttrPortExtendedSpeedsCounters, error)) {
    return std::nullopt;
  }
  std::uint8_t* d = Raw(mad) + IB_PC_DATA_OFFS;
  PortExtendedSpeedsCounters c;
  c.layout = layout;
  // Reads a counter of `bits` width and notes it when saturated.
  auto read = [&](MAD_FIELDS f, unsigned bits) {
    const std::uint32_t v = mad_get_field(d, 0, f);
    if (v == (std::uint64_t{1} << bits) - 1) {
      c.saturated.emplace_back(mad_field_name(f));
    }
    return v;
  };
  if (layout == PescLayout::kRsFec) {
    c.port_select = static_cast<std::uint8_t>(
        mad_get_field(d, 0, IB_PESC_RSFEC_PORT_SELECT_F));
    c.counter_select = mad_get_field64(d, 0, IB_PESC_RSFEC_COUNTER_SELECT_F);
    c.sync_header_errors = read(IB_PESC_RSFEC_SYNC_HDR_ERR_CTR_F, 16);
    c.unknown_blocks = read(IB_PESC_RSFEC_UNK_BLOCK_CTR_F, 16);
    for (int l = 0; l < kPescLanes; ++l) {
      c.fec_corrected_symbols[l] =
          read(Lane(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F, l), 32);
    }
    c.port_fec_correctable_blocks = read(IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F, 32);
    c.port_fec_uncorrectable_blocks =
        read(IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F, 32);
    c.port_fec_corrected_symbols = read(IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F, 32);
    return c;
  }
  c.port_select =
      static_cast<std::uint8_t>(mad_get_field(d, 0, IB_PESC_PORT_SELECT_F));
  c.counter_select = mad_get_field64(d, 0, IB_PESC_COUNTER_SELECT_F);
  c.sync_header_errors = read(IB_PESC_SYNC_HDR_ERR_CTR_F, 16);
  c.unknown_blocks = read(IB_PESC_UNK_BLOCK_CTR_F, 16);
  for (int l = 0; l < kPescLanes; ++l) {
    c.error_detection[l] = read(Lane(IB_PESC_ERR_DET_CTR_LANE0_F, l), 16);
    c.fec_correctable_blocks[l] =
        read(Lane(IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F, l), 32);
    c.fec_uncorrectable_blocks[l] =
        read(Lane(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F, l), 32);
  }
  return c;
}

}  // namespace fabric::mad
