// Building and decoding the MADs fabricmon sends: SMInfo, NodeInfo,
// NodeDescription and PortInfo (SMPs, LID-routed or directed-route) and
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
  int local_port = 0;  // the port the SMP came in by
};

struct PortInfo {
  std::uint16_t lid = 0;
  std::uint16_t sm_lid = 0;
  std::uint32_t capability_mask = 0;
  int state = 0;       // 1 down, 2 init, 3 armed, 4 active
  int phys_state = 0;  // 5 LinkUp, 2 polling, 3 disabled, ...
  int local_port = 0;
};

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
};

using Bytes = std::span<const std::uint8_t>;

// The MAD status of a response (the DR direction bit masked off).
std::optional<std::uint16_t> MadStatus(Bytes mad);

std::optional<SmInfo> DecodeSmInfo(Bytes mad, std::string* error);
std::optional<NodeInfo> DecodeNodeInfo(Bytes mad, std::string* error);
std::optional<std::string> DecodeNodeDescription(Bytes mad, std::string* error);
std::optional<PortInfo> DecodePortInfo(Bytes mad, std::string* error);
std::optional<PortCounters> DecodePortCounters(Bytes mad, std::string* error);
std::optional<PortCountersExtended> DecodePortCountersExtended(
    Bytes mad, std::string* error);

// "0x" + 16 lowercase hex digits, as node_guid is exported.
std::string GuidString(std::uint64_t guid);

}  // namespace fabric::mad
