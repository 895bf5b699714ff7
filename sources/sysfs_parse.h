// sysfs_parse: pure parsers for the text attributes under
// /sys/class/infiniband (numbers, hex, GUIDs, port state and rate strings).
// They never touch the filesystem; collectors read a file and hand the bytes
// here. Formats follow the kernel's drivers/infiniband/core/sysfs.c and
// Documentation/ABI/stable/sysfs-class-infiniband. Every parser accepts the
// value with or without a trailing newline (recorded trees often lack it) and
// with surrounding whitespace.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fabric {

enum class ParseStatus {
  kOk,
  kEmpty,         // nothing but whitespace
  kNotAvailable,  // the kernel says the value does not exist ("N/A (no PMA)")
  kNegative,      // "-1"
  kOverflow,      // does not fit in 64 bits
  kInvalid,       // anything else
};

// A parsed value; `value` is meaningful only when ok().
template <typename T>
struct Parsed {
  ParseStatus status = ParseStatus::kInvalid;
  T value{};
  bool ok() const { return status == ParseStatus::kOk; }
};

// Human-readable name of a status, for skip reasons and test output.
std::string_view ParseStatusName(ParseStatus status);

// Strips leading/trailing spaces, tabs, CR and LF.
std::string_view TrimValue(std::string_view text);

// Unsigned decimal, e.g. a counters/ file: "2221223609\n".
Parsed<std::uint64_t> ParseU64(std::string_view text);

// Hexadecimal with a mandatory 0x/0X prefix, e.g. `lid` "0x1f",
// `cap_mask` "0x2651e84a".
Parsed<std::uint64_t> ParseHex(std::string_view text);

// A 64-bit GUID as sysfs prints it: four groups of 1-4 hex digits separated
// by ':' ("0a7f:bc12:45ef:d23b").
Parsed<std::uint64_t> ParseGuid(std::string_view text);

// GUID label format used across fabricmon: "0x" + 16 lowercase hex digits,
// the form ibstat/ibnetdiscover/perfquery print, so labels join with
// fabric-side metrics.
std::string FormatGuid(std::uint64_t guid);

// Port GUID from a `gids/0` entry: the low 64 bits (interface id) of the
// port's first GID, "fe80:0000:0000:0000:0002:c903:00a1:b2c3".
Parsed<std::uint64_t> ParseGidInterfaceId(std::string_view text);

// `state` ("4: ACTIVE") and `phys_state` ("5: LinkUp"): the number before
// the colon is the IB enum value; the name is informative only. A bare
// number is accepted too.
struct PortState {
  std::uint32_t id = 0;
  std::string name;
};
Parsed<PortState> ParseState(std::string_view text);

// `rate`: "<Gb/s> Gb/sec (<lanes>X[ <speed>])", e.g. "400 Gb/sec (4X NDR)",
// "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)". The kernel prints the active
// width times the per-lane speed; bytes/s = Gb/s * 1e9 / 8 (what
// node_exporter/procfs report too). `lanes` is 0 when the string has no
// "(NX...)" part. "Unknown" and "N/A" give kNotAvailable.
struct PortRate {
  double bytes_per_second = 0;
  std::uint32_t lanes = 0;
  std::string speed;  // "NDR", "HDR", ... or empty
};
Parsed<PortRate> ParseRate(std::string_view text);

}  // namespace fabric
