// Building and decoding the MADs fabricmon sends: SMInfo, NodeInfo,
// NodeDescription, PortInfo, SwitchInfo and LinearForwardingTable (SMPs,
// LID-routed or directed-route) and
// PortCounters / PortCountersExtended (PerfMgt). Every field goes through
// libibmad's accessors (mad_encode, mad_get_field, mad_get_field64), so no
// offset or bit layout is hand-written here.
//
// Decoders are pure functions on bytes: they check the size (a whole
// 256-byte MAD), the base version, that it is a GetResp of the expected
// class and attribute, and the MAD status; anything else gives nullopt and
// a one-line reason in *error.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sources/mad/mad_transport.h"

namespace fabric::mad {

inline constexpr std::uint16_t kAttrNodeDescription = 0x10;
inline constexpr std::uint16_t kAttrNodeInfo = 0x11;
inline constexpr std::uint16_t kAttrPortInfo = 0x15;
inline constexpr std::uint16_t kAttrSwitchInfo = 0x12;  // SMP (not PerfMgt)
inline constexpr std::uint16_t kAttrLinearForwardingTable = 0x19;
inline constexpr std::uint16_t kAttrSmInfo = 0x20;
inline constexpr std::uint16_t kAttrPortCounters = 0x12;
inline constexpr std::uint16_t kAttrPortCountersExtended = 0x1d;
inline constexpr std::uint32_t kCapabilityIsSm = 0x00000002;

// A directed route: the port to leave by at each hop (first hop first).
// Empty is the local node itself.
using DrPath = std::vector<std::uint8_t>;

// A Get SMP, LID-routed (class 0x01).
Mad SmpGet(std::uint16_t attr, std::uint32_t attr_mod);
// A Get SMP, directed route (class 0x81) along `path`.
Mad DrSmpGet(std::uint16_t attr, std::uint32_t attr_mod, const DrPath& path);
// A PerfMgt Get (PortCounters / PortCountersExtended) of `port`.
Mad PerfGet(std::uint16_t attr, std::uint8_t port);

struct SmInfo {
  std::uint64_t guid = 0;
  std::uint32_t act_count = 0;
  int priority = 0;
  int state = 0;  // 0 not active, 1 discovering, 2 standby, 3 master
};

struct NodeInfo {
  int node_type = 0;  // 1 CA, 2 switch, 3 router
  int num_ports = 0;
  std::uint64_t system_guid = 0;
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  int local_port = 0;           // the port the SMP came in by
  std::uint16_t device_id = 0;  // the ASIC (PortXmitWait tick, issue 42)
};

struct PortInfo {
  std::uint16_t lid = 0;
  std::uint16_t sm_lid = 0;
  std::uint32_t capability_mask = 0;
  int state = 0;       // 1 down, 2 init, 3 armed, 4 active
  int phys_state = 0;  // 5 LinkUp, 2 polling, 3 disabled, ...
  int local_port = 0;
  int lmc = 0;  // the port answers 2^lmc LIDs from `lid` on
  // Link width and speed (IBA 14.2.5.6), the masks as the MAD carries them:
  // width bits 1x=1, 4x=2, 8x=4, 12x=8, 2x=16; speed bits SDR=1, DDR=2,
  // QDR=4; extended speed bits FDR=1, EDR=2, HDR=4, NDR=8 (0 = none).
  int link_width_supported = 0;
  int link_width_enabled = 0;
  int link_width_active = 0;
  int link_speed_supported = 0;
  int link_speed_enabled = 0;
  int link_speed_active = 0;
  int link_speed_ext_supported = 0;
  int link_speed_ext_enabled = 0;
  int link_speed_ext_active = 0;
};

// SwitchInfo (IBA 14.2.5.4): what the routes need of it.
struct SwitchInfo {
  std::uint32_t linear_fdb_cap = 0;  // LFT entries the switch has
  std::uint32_t linear_fdb_top = 0;  // highest LID the SM filled in
  std::uint32_t mcast_fdb_cap = 0;
  int default_port = 0;
  bool enhanced_port0 = false;  // port 0 has its own PortState
};

// One LinearForwardingTable block (IBA 14.2.5.10): the out port of 64
// consecutive LIDs, block * 64 first. 255 (kLftNoRoute) is "not routed".
inline constexpr int kLftBlockLids = 64;
inline constexpr int kLftMaxBlock = 767;  // LIDs 0..49151 (unicast)
inline constexpr std::uint8_t kLftNoRoute = 0xff;
struct LftBlock {
  std::uint32_t block = 0;  // the response's attribute modifier
  std::array<std::uint8_t, kLftBlockLids> ports{};
};

// Lanes of a LinkWidthActive code (1, 2, 4, 8 or 12); 0 for an unknown or
// multi-bit code.
int WidthLanes(int width_code);
// Per-lane signalling rate in Gb/s as the kernel's sysfs `rate` counts it
// (SDR 2.5, DDR 5, QDR 10, FDR 14, EDR 25, HDR 50, NDR 100) of one active
// speed: the extended speed when one is active, else the base one; 0 when
// neither names one speed.
double LaneGbps(int speed_code, int speed_ext_code);
// What the port can run at: the widest width in Supported & Enabled (an
// Enabled of 0, or with no bit in common with Supported, counts as
// Supported: some PMAs leave it 0), and the fastest lane speed in the same
// way, extended speeds included. 0 when nothing is known.
int CapableLanes(const PortInfo& p);
double CapableLaneGbps(const PortInfo& p);

struct PortCounters {
  // `error` label value (as the host side's sysfs names) -> value.
  std::map<std::string, std::uint64_t> errors;
  std::uint64_t xmit_data = 0;  // 32-bit, in 4-byte words
  std::uint64_t rcv_data = 0;
  std::uint64_t xmit_pkts = 0;
  std::uint64_t rcv_pkts = 0;
  std::uint64_t xmit_wait = 0;
  // The exported fields (an `errors` key, or "port_xmit_wait") that read
  // their maximum 2^width-1: PortCounters fields saturate there instead of
  // wrapping, so they no longer count.
  std::vector<std::string> saturated;
};

struct PortCountersExtended {
  std::uint64_t xmit_data = 0;  // 64-bit, in 4-byte words
  std::uint64_t rcv_data = 0;
  std::uint64_t xmit_pkts = 0;
  std::uint64_t rcv_pkts = 0;
  // PortXmitWait, 64-bit (libibmad IB_PC_EXT_XMT_WAIT_F): one of the
  // additional counters the attribute carries only when the PMA's
  // ClassPortInfo:CapabilityMask2 has IsAddlPortCountersExtendedSupported
  // (PmaClassPortInfo::AddlPortCountersExtendedSupported); elsewhere those
  // bytes are reserved. Read only when the decoder is told so.
  std::optional<std::uint64_t> xmit_wait;
};

using Bytes = std::span<const std::uint8_t>;

// The MAD status of a response (the DR direction bit masked off).
std::optional<std::uint16_t> MadStatus(Bytes mad);

std::optional<SmInfo> DecodeSmInfo(Bytes mad, std::string* error);
std::optional<NodeInfo> DecodeNodeInfo(Bytes mad, std::string* error);
std::optional<std::string> DecodeNodeDescription(Bytes mad, std::string* error);
std::optional<PortInfo> DecodePortInfo(Bytes mad, std::string* error);
std::optional<SwitchInfo> DecodeSwitchInfo(Bytes mad, std::string* error);
// Also refuses a block number beyond kLftMaxBlock.
std::optional<LftBlock> DecodeLftBlock(Bytes mad, std::string* error);
std::optional<PortCounters> DecodePortCounters(Bytes mad, std::string* error);
// `additional`: the PMA advertises the additional counters (as perfquery -x
// decides from ClassPortInfo), so PortXmitWait is read too.
std::optional<PortCountersExtended> DecodePortCountersExtended(
    Bytes mad, std::string* error, bool additional = false);

// "0x" + 16 lowercase hex digits, as node_guid is exported.
std::string GuidString(std::uint64_t guid);

// --- PortExtendedSpeedsCounters (PMA attribute 0x1F), and what says whether
// a port has it and in which layout (issue 28). The switch sweep (sweep.h)
// and the ib_link collector send these through the one reader of pesc.h;
// the decoders stand alone so they can be tested against libibmad.
//
// IBA 1.3 16.1.4.x: a PMA implements PortExtendedSpeedsCounters only when the
// port's PortInfo:CapabilityMask.IsExtendedSpeedsSupported (bit 14) is set;
// it has two layouts sharing the attribute ID:
//   - the original one (libibmad IB_PESC_*): SyncHeaderErrorCounter,
//     UnknownBlockCounter, and per lane (12) ErrorDetectionCounter and
//     FECCorrectable/UncorrectableBlockCounter;
//   - the RS-FEC one (IB_PESC_RSFEC_*), used while RS-FEC is the port's
//     active FEC mode: per lane FECCorrectableSymbolCounter, and per port
//     FEC correctable / uncorrectable blocks and corrected symbols.
// `perfquery -T` (infiniband-diags) picks the RS-FEC layout when the PMA's
// ClassPortInfo:CapabilityMask has IsPMRSFECCountersSupported (bit 14) and
// the port's PortInfoExtended (SMP 0x33, asked only when PortInfo:
// CapabilityMask2 has IsPortInfoExtendedSupported) says FEC modes are
// supported and the active mode is RS-FEC (2) or low-latency RS-FEC (3);
// otherwise the original layout. ChoosePescLayout does the same.

inline constexpr std::uint16_t kAttrClassPortInfo = 0x01;
inline constexpr std::uint16_t kAttrPortInfoExtended = 0x33;
inline constexpr std::uint16_t kAttrPortExtendedSpeedsCounters = 0x1f;
inline constexpr int kPescLanes = 12;

// A PerfMgt Get of ClassPortInfo (no port: it describes the PMA).
Mad PmaClassPortInfoGet();
// A PerfMgt Get of PortExtendedSpeedsCounters of `port` (PortSelect).
Mad PescGet(std::uint8_t port);

struct PmaClassPortInfo {
  std::uint16_t capability_mask = 0;   // host order, bit 8 AllPortSelect ...
  std::uint32_t capability_mask2 = 0;  // 27 bits
  // Bit 14: IsPMRSFECCountersSupported.
  bool RsFecCountersSupported() const {
    return (capability_mask & (1u << 14)) != 0;
  }
  // CapabilityMask2 bit 1: IsAddlPortCountersExtendedSupported, i.e.
  // PortCountersExtended carries the 64-bit error counters and PortXmitWait
  // (perfquery.c tests the same bit of the same 27-bit field).
  bool AddlPortCountersExtendedSupported() const {
    return (capability_mask2 & (1u << 1)) != 0;
  }
};

struct PortInfoExtended {
  std::uint32_t capability_mask = 0;  // bit 0: IsFECModeSupported
  std::uint16_t fec_mode_active = 0;  // 0 none, 1 FireCode, 2 RS, 3 LL RS
};

enum class PescLayout {
  kNone,            // the port has no PESC (not IsExtendedSpeedsSupported)
  kErrorDetection,  // the original layout (IB_PESC_*)
  kRsFec,           // the RS-FEC layout (IB_PESC_RSFEC_*)
};

// PortInfo:CapabilityMask bit 14 (IsExtendedSpeedsSupported) and bit 15
// (CapabilityMask2 valid), CapabilityMask2 bit 1
// (IsPortInfoExtendedSupported).
inline constexpr std::uint32_t kCapabilityHasExtendedSpeeds = 0x00004000;
inline constexpr std::uint32_t kCapabilityHasCapabilityMask2 = 0x00008000;
inline constexpr std::uint16_t kCapability2PortInfoExtended = 0x0002;

// PortInfo:CapabilityMask2 (libibmad IB_PORT_CAPMASK2_F) of a PortInfo
// GetResp: whether PortInfoExtended may be asked.
std::optional<std::uint16_t> DecodePortInfoCapabilityMask2(Bytes mad,
                                                           std::string* error);
// True when PortInfoExtended is worth asking for the layout decision: the
// PMA says it has RS-FEC counters and the port says it has PortInfoExtended.
bool PescNeedsPortInfoExtended(std::uint32_t port_capability_mask,
                               std::uint16_t port_capability_mask2,
                               const PmaClassPortInfo& pma);
// The layout to decode the port's PESC with; `ext` is the port's
// PortInfoExtended when it was asked and answered.
PescLayout ChoosePescLayout(std::uint32_t port_capability_mask,
                            const PmaClassPortInfo& pma,
                            const std::optional<PortInfoExtended>& ext);

std::optional<PmaClassPortInfo> DecodePmaClassPortInfo(Bytes mad,
                                                       std::string* error);
std::optional<PortInfoExtended> DecodePortInfoExtended(Bytes mad,
                                                       std::string* error);

struct PortExtendedSpeedsCounters {
  PescLayout layout = PescLayout::kErrorDetection;
  std::uint8_t port_select = 0;
  std::uint64_t counter_select = 0;
  std::uint32_t sync_header_errors = 0;  // 16-bit
  std::uint32_t unknown_blocks = 0;      // 16-bit
  // kErrorDetection only. All 12 lanes as the MAD carries them; lanes
  // beyond the link's active width read 0.
  std::array<std::uint32_t, kPescLanes> error_detection{};           // 16-bit
  std::array<std::uint32_t, kPescLanes> fec_correctable_blocks{};    // 32-bit
  std::array<std::uint32_t, kPescLanes> fec_uncorrectable_blocks{};  // 32
  // kRsFec only.
  std::array<std::uint32_t, kPescLanes> fec_corrected_symbols{};  // 32-bit
  std::uint32_t port_fec_correctable_blocks = 0;                  // 32-bit
  std::uint32_t port_fec_uncorrectable_blocks = 0;                // 32-bit
  std::uint32_t port_fec_corrected_symbols = 0;                   // 32-bit
  // libibmad's names of the fields read at their maximum: PMA counters
  // saturate there instead of wrapping (IBA 16.1.3.5), so they no longer
  // count.
  std::vector<std::string> saturated;
};

// Decodes a PESC GetResp in `layout` (kNone gives nullopt). The MAD itself
// does not say its layout: the caller decides with ChoosePescLayout.
std::optional<PortExtendedSpeedsCounters> DecodePortExtendedSpeedsCounters(
    Bytes mad, PescLayout layout, std::string* error);

}  // namespace fabric::mad
