#include "sources/mad/codec.h"

#include <infiniband/mad.h>

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
  return p;
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
  // No wider PortXmitWait here: PortCountersExtended (libibmad's
  // IB_PC_EXT_*) has none, so the 32-bit one sticks under long congestion.
  if (at_max(c.xmit_wait, 32)) c.saturated.push_back("port_xmit_wait");
  return c;
}

std::optional<PortCountersExtended> DecodePortCountersExtended(
    Bytes mad, std::string* error) {
  if (!Check(mad, false, kAttrPortCountersExtended, error)) {
    return std::nullopt;
  }
  std::uint8_t* d = Raw(mad) + IB_PC_DATA_OFFS;
  PortCountersExtended e;
  e.xmit_data = mad_get_field64(d, 0, IB_PC_EXT_XMT_BYTES_F);
  e.rcv_data = mad_get_field64(d, 0, IB_PC_EXT_RCV_BYTES_F);
  e.xmit_pkts = mad_get_field64(d, 0, IB_PC_EXT_XMT_PKTS_F);
  e.rcv_pkts = mad_get_field64(d, 0, IB_PC_EXT_RCV_PKTS_F);
  return e;
}

std::string GuidString(std::uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(guid));
  return text;
}

}  // namespace fabric::mad
