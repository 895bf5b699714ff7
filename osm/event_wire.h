// event_wire: the datagram format between the OpenSM event plugin
// (libfabricmon_osm.so, running inside OpenSM) and the daemon's `opensm`
// collector. One OpenSM event is one datagram of a fixed layout per event
// type: a 24-byte header then a body whose length the type fixes. All
// integers are little-endian and written field by field, never by copying a
// struct, so the layout does not depend on the compiler or on OpenSM's
// headers (the daemon links this without libopensm).
//
//   offset size  header field
//   0      4     magic "FMOE"
//   4      1     version (kWireVersion)
//   5      1     event (Event, same numbers as OpenSM's osm_epi_event_id_t)
//   6      2     body length in bytes (must equal BodySize(event))
//   8      8     events the plugin dropped since its previous delivered
//                datagram (a delta; it travels in the next one that gets
//                through)
//   16     8     plugin's CLOCK_MONOTONIC at the event, in nanoseconds
//
// Bodies (offsets from the body's start):
//   port id (80 bytes, first in every PerfMgr body): 0 node GUID u64,
//     8 port u8, 9 node type u8 (NodeType), 10 reserved u16, 12 time_diff_s
//     u32 (seconds since PerfMgr's previous reading), 16 node name [64]
//     (NUL-padded; no terminator when all 64 bytes are used)
//   port_errors: port id, then 13 u64 deltas in PortErrors' field order
//   port_data_counters: port id, then 8 u64 deltas in PortData's order
//   port_select: port id, then xmit_wait u64
//   trap: 0 generic u8 (1/0), 1 notice type u8, 2 trap number u16 (generic
//     only), 4 producer type or vendor id u32 (24 bits), 8 issuer LID u16,
//     10 reserved u16
//   ucast_routing_done: 0 routing flags u32 (OpenSM's
//     osm_epi_ucast_routing_flags_t)
//   lft_change: 0 switch GUID u64, 8 flags u32, 12 block number u32,
//     16 lft_top u16, 18 reserved [6]
//   subnet_up, heavy_sweep_start, heavy_sweep_done, state_change,
//   sa_db_dumped: empty
//
// A change to any layout bumps kWireVersion; the decoder rejects any other
// version rather than guess.
//
// Thread-safety: pure functions, safe from any thread. EncodeEvent never
// allocates (it runs inside OpenSM's report() callback).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace fabric::osm {

inline constexpr uint32_t kWireMagic = 0x454f4d46;  // "FMOE" little-endian
inline constexpr uint8_t kWireVersion = 1;
inline constexpr std::size_t kHeaderSize = 24;
inline constexpr std::size_t kPortIdSize = 80;
inline constexpr std::size_t kNodeNameSize = 64;

// OpenSM's osm_epi_event_id_t, numbered as there (the plugin maps them
// explicitly and static_asserts the numbers).
enum class Event : uint8_t {
  kPortErrors = 0,
  kPortDataCounters = 1,
  kPortSelect = 2,
  kTrap = 3,
  kSubnetUp = 4,
  kHeavySweepStart = 5,
  kHeavySweepDone = 6,
  kUcastRoutingDone = 7,
  kStateChange = 8,
  kSaDbDumped = 9,
  kLftChange = 10,
};
inline constexpr int kEventCount = 11;

// IB NodeInfo NodeType numbers; kUnknown when the plugin could not look the
// node up.
enum class NodeType : uint8_t {
  kUnknown = 0,
  kChannelAdapter = 1,
  kSwitch = 2,
  kRouter = 3,
};

// "port_errors", "subnet_up", ...: the `event` label values.
std::string_view EventName(Event event);
// Body length of `event` in this version.
std::size_t BodySize(Event event);

struct PortId {
  uint64_t node_guid = 0;
  uint8_t port = 0;
  NodeType node_type = NodeType::kUnknown;
  uint32_t time_diff_s = 0;
  // Raw bytes as sent, NUL-padded. The encoder copies them as they are; the
  // decoder replaces anything outside printable ASCII with '?' so a node
  // description can always be a label value.
  std::array<char, kNodeNameSize> name{};

  std::string_view NameView() const;
  // Copies up to kNodeNameSize bytes of a C string into `name`.
  void SetName(const char* text, std::size_t max_len);
};

// PerfMgr PortCounters deltas since its previous reading.
struct PortErrors {
  PortId id;
  uint64_t symbol_error = 0;
  uint64_t link_error_recovery = 0;
  uint64_t link_downed = 0;
  uint64_t port_rcv_errors = 0;
  uint64_t port_rcv_remote_physical_errors = 0;
  uint64_t port_rcv_switch_relay_errors = 0;
  uint64_t port_xmit_discards = 0;
  uint64_t port_xmit_constraint_errors = 0;
  uint64_t port_rcv_constraint_errors = 0;
  uint64_t local_link_integrity_errors = 0;
  uint64_t excessive_buffer_overrun_errors = 0;
  uint64_t vl15_dropped = 0;
  uint64_t port_xmit_wait = 0;
};

// PerfMgr data counter deltas (PortCounters or PortCountersExtended, as
// OpenSM read them). Data counts are in PMA units of 4 bytes, as OpenSM
// hands them over.
struct PortData {
  PortId id;
  uint64_t xmit_data = 0;
  uint64_t rcv_data = 0;
  uint64_t xmit_pkts = 0;
  uint64_t rcv_pkts = 0;
  uint64_t unicast_xmit_pkts = 0;
  uint64_t unicast_rcv_pkts = 0;
  uint64_t multicast_xmit_pkts = 0;
  uint64_t multicast_rcv_pkts = 0;
};

struct PortSelect {
  PortId id;
  uint64_t xmit_wait = 0;
};

struct Trap {
  bool generic = false;
  uint8_t type = 0;
  uint16_t trap_number = 0;  // generic traps only
  uint32_t producer_or_vendor = 0;
  uint16_t issuer_lid = 0;
};

struct UcastRoutingDone {
  uint32_t flags = 0;
};

struct LftChange {
  uint64_t switch_guid = 0;
  uint32_t flags = 0;
  uint32_t block_num = 0;
  uint16_t lft_top = 0;
};

using Body = std::variant<std::monostate, PortErrors, PortData, PortSelect,
                          Trap, UcastRoutingDone, LftChange>;

struct Message {
  Event event = Event::kSubnetUp;
  uint64_t dropped = 0;
  uint64_t monotonic_ns = 0;
  Body body;  // the alternative matching `event`; monostate for empty ones
};

inline constexpr std::size_t kMaxMessageSize =
    kHeaderSize + kPortIdSize + 13 * 8;

// Writes `message` into `out` and returns the byte count, or 0 when the
// body alternative does not match the event or `out` is too small.
std::size_t EncodeEvent(const Message& message, std::span<uint8_t> out);

enum class DecodeStatus {
  kOk,
  kTruncated,      // shorter than the header or than header + body length
  kOversized,      // longer than header + body length
  kBadMagic,       // not a fabricmon datagram
  kWrongVersion,   // another wire version
  kUnknownEvent,   // event number this version does not know
  kBadBodyLength,  // header's body length is not BodySize(event)
};
std::string_view DecodeStatusName(DecodeStatus status);

// Parses one datagram. On kOk fills `out`; otherwise leaves it unspecified.
DecodeStatus DecodeEvent(std::span<const uint8_t> bytes, Message* out);

}  // namespace fabric::osm
