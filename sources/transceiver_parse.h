// Pure parsers of a transceiver module's EEPROM (no I/O): which pages to
// read, and what they say. Two management interfaces:
//   - SFF-8636 (QSFP, QSFP+, QSFP28, and QSFP56 modules that use it):
//     SFF-8024 identifiers 0x0C, 0x0D, 0x11. Lower page: latched flags
//     (bytes 3-14), temperature (22-23), Vcc (26-27), per-channel Rx power
//     (34-41), Tx bias (42-49), Tx power (50-57); upper page 00h: identity
//     (vendor 148-163, PN 168-183, rev 184-185, SN 196-211, connector 130,
//     transmitter technology 147, cable length 146, monitors 220); upper
//     page 03h (absent on flat memory, byte 2 bit 2): thresholds.
//   - CMIS 4.0 / 5.x (QSFP-DD, OSFP, QSFP112): identifiers 0x18, 0x19,
//     0x1E. Lower memory: module flags (byte 9), temperature (14-15), Vcc
//     (16-17), module type (85), first application's media lane count
//     (88); page 00h: identity (vendor 129-144, PN 148-163, rev 164-165,
//     SN 166-181, cable length 202, connector 203); page 01h: which monitors
//     exist (159, 160) and the Tx bias multiplier (160 bits 4-3); page 02h:
//     thresholds; page 11h (bank 0): per-lane flags (135-152) and Tx power
//     (154-169), Tx bias (170-185), Rx power (186-201). Flat-memory modules
//     (byte 2 bit 7: passive copper) have page 00h only.
// Units exported: °C, V, W, A. Power is in 0.1 µW, bias in 2 µA (× the
// CMIS multiplier), temperature signed 1/256 °C, Vcc 100 µV.
//
// Bad input never crashes and never yields invented values: a lower page
// shorter than 128 bytes or an unknown identifier makes the module a skip
// (ModuleParse.skip), an upper page shorter than 128 bytes is ignored and
// counted (ModuleReading.bad_pages), text fields keep printable ASCII only.
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

namespace fabric {

inline constexpr std::size_t kEepromPageSize = 128;

// What was read of one module: bytes 0-127 (lower memory) and the upper
// half (bytes 128-255) of each page read, by page number (bank 0).
struct ModulePages {
  std::vector<std::uint8_t> lower;
  std::map<int, std::vector<std::uint8_t>> upper;
};

enum class ModuleSpec { kSff8636, kCmis };

// The upper pages worth reading for a module whose lower memory is `lower`
// (page 00h always; SFF-8636 03h; CMIS 01h, 02h, 11h), empty when the
// module is not one this parser knows or `lower` is truncated.
std::vector<int> ModulePagesToRead(std::span<const std::uint8_t> lower);

struct Thresholds {
  std::optional<double> high_alarm, low_alarm, high_warning, low_warning;
};

// One latched flag: quantity (temperature, voltage, tx_power, rx_power,
// tx_bias, tx_los, rx_los, tx_fault), level (high_alarm, low_alarm,
// high_warning, low_warning; "fault" for the loss/fault flags), lane (0-based;
// -1 = the module).
struct ModuleFlag {
  std::string quantity;
  std::string level;
  int lane = -1;
  bool set = false;
};

struct ModuleReading {
  ModuleSpec spec = ModuleSpec::kSff8636;
  std::uint8_t identifier = 0;
  std::string type;      // "QSFP28", "QSFP-DD", "OSFP", ...
  std::string revision;  // SFF-8636 byte 1 as hex ("0x08"); CMIS "5.0"
  std::string vendor, part_number, serial, vendor_revision;
  // mmf, smf, optical, passive_copper, active_cable, base_t, unknown.
  std::string media = "unknown";
  std::optional<double> cable_length_meters;  // cable assemblies only
  std::optional<double> temperature_celsius;
  std::optional<double> supply_voltage_volts;
  int lanes = 0;
  // Size `lanes` each when the module reports the quantity, else empty.
  std::vector<double> tx_power_watts, rx_power_watts, tx_bias_amperes;
  std::optional<Thresholds> temperature_thresholds, voltage_thresholds,
      tx_power_thresholds, rx_power_thresholds, tx_bias_thresholds;
  std::vector<ModuleFlag> flags;
  // Upper pages present but shorter than a page: ignored.
  std::size_t bad_pages = 0;
};

struct ModuleParse {
  std::optional<ModuleReading> reading;
  // Why there is none: "truncated" (lower page short), "unknown_identifier"
  // (not SFF-8636 or CMIS; also SFP's SFF-8472), "not_ready" (SFF-8636
  // Data_Not_Ready).
  std::string skip;
};

ModuleParse ParseModuleEeprom(const ModulePages& pages);

}  // namespace fabric
