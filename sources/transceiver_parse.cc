#include "sources/transceiver_parse.h"

#include <cstdio>

namespace fabric {
namespace {

using Page = std::span<const std::uint8_t>;

constexpr double kPowerLsbWatts = 1e-7;   // 0.1 µW
constexpr double kBiasLsbAmperes = 2e-6;  // 2 µA
constexpr double kVccLsbVolts = 1e-4;     // 100 µV
constexpr double kTempLsbCelsius = 1.0 / 256;

bool IsSff8636(std::uint8_t id) {
  return id == 0x0c || id == 0x0d || id == 0x11;
}
bool IsCmis(std::uint8_t id) { return id == 0x18 || id == 0x19 || id == 0x1e; }

// SFF-8024 Table 4-1 names of the identifiers we parse.
std::string TypeName(std::uint8_t id) {
  switch (id) {
    case 0x0c:
      return "QSFP";
    case 0x0d:
      return "QSFP+";
    case 0x11:
      return "QSFP28";
    case 0x18:
      return "QSFP-DD";
    case 0x19:
      return "OSFP";
    case 0x1e:
      return "QSFP+_CMIS";
    default:
      return "unknown";
  }
}

std::uint16_t U16(Page p, std::size_t at) {
  return static_cast<std::uint16_t>(p[at] << 8 | p[at + 1]);
}
std::int16_t S16(Page p, std::size_t at) {
  return static_cast<std::int16_t>(U16(p, at));
}

// An upper page: bytes 128-255 stored at index 0-127; nullopt when not read
// or short (counted).
std::optional<Page> Upper(const ModulePages& pages, int page,
                          std::size_t* bad) {
  auto it = pages.upper.find(page);
  if (it == pages.upper.end()) return std::nullopt;
  if (it->second.size() < kEepromPageSize) {
    ++*bad;
    return std::nullopt;
  }
  return Page(it->second.data(), kEepromPageSize);
}

// Bytes [at, at+len) of an upper page given by their EEPROM address
// (128-255), as text: printable ASCII, trailing spaces and NULs trimmed.
std::string Text(Page upper, std::size_t address, std::size_t len) {
  std::string out;
  for (std::size_t i = 0; i < len; ++i) {
    const std::uint8_t c = upper[address - 128 + i];
    out += (c >= 0x20 && c <= 0x7e) ? static_cast<char>(c) : ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  return out;
}

// Four thresholds at `address` (upper page): high alarm, low alarm, high
// warning, low warning, each a big-endian 16-bit value.
Thresholds ThresholdsAt(Page upper, std::size_t address, double lsb,
                        bool is_signed) {
  auto v = [&](int k) {
    const std::size_t at = address - 128 + 2 * k;
    return (is_signed ? S16(upper, at) : U16(upper, at)) * lsb;
  };
  return {v(0), v(1), v(2), v(3)};
}

const char* const kLevels[4] = {"high_alarm", "low_alarm", "high_warning",
                                "low_warning"};

// Media from SFF-8636 byte 147 bits 7-4 (transmitter technology, Table
// 6-19).
std::string Sff8636Media(std::uint8_t technology) {
  const int t = technology >> 4;
  if (t == 0x0) return "mmf";  // 850 nm VCSEL
  if (t == 0xa || t == 0xb) return "passive_copper";
  if (t >= 0xc) return "active_cable";  // copper with active equalizers
  if (t == 0x8) return "optical";
  return "smf";  // 1310/1490/1550 nm lasers
}

// CMIS lower byte 85, MediaType (SFF-8024 Table 4-5's module media type).
std::string CmisMedia(std::uint8_t type) {
  switch (type) {
    case 0x01:
      return "mmf";
    case 0x02:
      return "smf";
    case 0x03:
      return "passive_copper";
    case 0x04:
      return "active_cable";
    case 0x05:
      return "base_t";
    default:
      return "unknown";
  }
}

std::string Hex(std::uint8_t v) {
  char b[8];
  std::snprintf(b, sizeof(b), "0x%02x", v);
  return b;
}

void ParseSff8636(Page lower, const ModulePages& pages, ModuleReading& r) {
  r.spec = ModuleSpec::kSff8636;
  r.revision = Hex(lower[1]);
  r.lanes = 4;
  auto p00 = Upper(pages, 0, &r.bad_pages);
  bool temp_mon = true, vcc_mon = true, tx_power_mon = true;
  bool copper = false;
  if (p00) {
    r.vendor = Text(*p00, 148, 16);
    r.part_number = Text(*p00, 168, 16);
    r.vendor_revision = Text(*p00, 184, 2);
    r.serial = Text(*p00, 196, 16);
    r.media = Sff8636Media((*p00)[147 - 128]);
    copper = r.media == "passive_copper";
    // Connector 0x23 "no separable connector": a cable assembly, whose
    // byte 146 is its length in metres (0: not given).
    if ((*p00)[130 - 128] == 0x23 && (*p00)[146 - 128] != 0) {
      r.cable_length_meters = (*p00)[146 - 128];
    }
    const std::uint8_t diag = (*p00)[220 - 128];  // Table 6-24
    temp_mon = diag & 0x20;
    vcc_mon = diag & 0x10;
    tx_power_mon = diag & 0x04;
  }
  if (temp_mon) r.temperature_celsius = S16(lower, 22) * kTempLsbCelsius;
  if (vcc_mon) r.supply_voltage_volts = U16(lower, 26) * kVccLsbVolts;
  if (!copper) {
    for (int ch = 0; ch < 4; ++ch) {
      r.rx_power_watts.push_back(U16(lower, 34 + 2 * ch) * kPowerLsbWatts);
      r.tx_bias_amperes.push_back(U16(lower, 42 + 2 * ch) * kBiasLsbAmperes);
      if (tx_power_mon) {
        r.tx_power_watts.push_back(U16(lower, 50 + 2 * ch) * kPowerLsbWatts);
      }
    }
  }
  // Latched flags (Table 6-4..6-7): byte 3 Tx LOS (bits 7-4) and Rx LOS
  // (3-0), byte 4 Tx fault (3-0), channel 1 in the lowest bit of a nibble;
  // bytes 6, 7 temperature and Vcc (bits 7-4: HA, LA, HW, LW).
  for (int ch = 0; ch < 4; ++ch) {
    r.flags.push_back({"tx_los", "fault", ch, (lower[3] >> (4 + ch) & 1) != 0});
    r.flags.push_back({"rx_los", "fault", ch, (lower[3] >> ch & 1) != 0});
    r.flags.push_back({"tx_fault", "fault", ch, (lower[4] >> ch & 1) != 0});
  }
  for (int k = 0; k < 4; ++k) {
    if (temp_mon) {
      r.flags.push_back(
          {"temperature", kLevels[k], -1, (lower[6] >> (7 - k) & 1) != 0});
    }
    if (vcc_mon) {
      r.flags.push_back(
          {"voltage", kLevels[k], -1, (lower[7] >> (7 - k) & 1) != 0});
    }
  }
  // Per-channel flags: two channels a byte, channel 1 in the high nibble
  // (HA, LA, HW, LW from bit 7 / bit 3): Rx power 9-10, Tx bias 11-12, Tx
  // power 13-14.
  struct Group {
    const char* quantity;
    int byte;
    bool present;
  };
  for (const Group& g :
       {Group{"rx_power", 9, !copper}, Group{"tx_bias", 11, !copper},
        Group{"tx_power", 13, !copper && tx_power_mon}}) {
    if (!g.present) continue;
    for (int ch = 0; ch < 4; ++ch) {
      const std::uint8_t b = lower[g.byte + ch / 2];
      const int top = ch % 2 == 0 ? 7 : 3;
      for (int k = 0; k < 4; ++k) {
        r.flags.push_back(
            {g.quantity, kLevels[k], ch, (b >> (top - k) & 1) != 0});
      }
    }
  }
  // Page 03h, thresholds (Table 6-26); not on flat memory.
  if (auto p03 = Upper(pages, 3, &r.bad_pages)) {
    if (temp_mon) {
      r.temperature_thresholds = ThresholdsAt(*p03, 128, kTempLsbCelsius, true);
    }
    if (vcc_mon) {
      r.voltage_thresholds = ThresholdsAt(*p03, 144, kVccLsbVolts, false);
    }
    if (!copper) {
      r.rx_power_thresholds = ThresholdsAt(*p03, 176, kPowerLsbWatts, false);
      r.tx_bias_thresholds = ThresholdsAt(*p03, 184, kBiasLsbAmperes, false);
      if (tx_power_mon) {
        r.tx_power_thresholds = ThresholdsAt(*p03, 192, kPowerLsbWatts, false);
      }
    }
  }
}

void ParseCmis(Page lower, const ModulePages& pages, ModuleReading& r) {
  r.spec = ModuleSpec::kCmis;
  r.revision =
      std::to_string(lower[1] >> 4) + "." + std::to_string(lower[1] & 0x0f);
  r.media = CmisMedia(lower[85]);
  // The first application's media lane count (descriptor bytes 86-89,
  // byte 88 bits 3-0); 8 (one bank) when it says nothing usable.
  const int media_lanes = lower[88] & 0x0f;
  r.lanes = media_lanes >= 1 && media_lanes <= 8 ? media_lanes : 8;
  const bool flat = lower[2] & 0x80;
  if (auto p00 = Upper(pages, 0, &r.bad_pages)) {
    r.vendor = Text(*p00, 129, 16);
    r.part_number = Text(*p00, 148, 16);
    r.vendor_revision = Text(*p00, 164, 2);
    r.serial = Text(*p00, 166, 16);
    // Byte 202: bits 7-6 multiplier (0.1, 1, 10, 100 m), 5-0 the value; 0
    // for a separable module.
    const std::uint8_t len = (*p00)[202 - 128];
    static const double kMultiplier[4] = {0.1, 1, 10, 100};
    if (len & 0x3f)
      r.cable_length_meters = (len & 0x3f) * kMultiplier[len >> 6];
  }
  if (flat) return;  // no monitors, thresholds or lane pages
  // Page 01h byte 159: bit 0 temperature, bit 1 Vcc monitor; byte 160:
  // bit 0 Tx bias, bit 1 Tx power, bit 2 Rx power monitors, bits 4-3 the
  // Tx bias multiplier (x1, x2, x4).
  auto p01 = Upper(pages, 1, &r.bad_pages);
  if (!p01) return;  // without it nothing says which monitors exist
  const std::uint8_t mod_mon = (*p01)[159 - 128];
  const std::uint8_t lane_mon = (*p01)[160 - 128];
  const bool temp_mon = mod_mon & 0x01, vcc_mon = mod_mon & 0x02;
  const bool bias_mon = lane_mon & 0x01, tx_mon = lane_mon & 0x02,
             rx_mon = lane_mon & 0x04;
  const int bias_shift = (lane_mon >> 3) & 0x03;
  const double bias_lsb =
      kBiasLsbAmperes * (bias_shift < 3 ? 1 << bias_shift : 1);
  if (temp_mon) r.temperature_celsius = S16(lower, 14) * kTempLsbCelsius;
  if (vcc_mon) r.supply_voltage_volts = U16(lower, 16) * kVccLsbVolts;
  // Lower byte 9: temperature HA, LA, HW, LW in bits 0-3; Vcc in 4-7.
  for (int k = 0; k < 4; ++k) {
    if (temp_mon) {
      r.flags.push_back(
          {"temperature", kLevels[k], -1, (lower[9] >> k & 1) != 0});
    }
    if (vcc_mon) {
      r.flags.push_back(
          {"voltage", kLevels[k], -1, (lower[9] >> (4 + k) & 1) != 0});
    }
  }
  if (auto p02 = Upper(pages, 2, &r.bad_pages)) {
    if (temp_mon) {
      r.temperature_thresholds = ThresholdsAt(*p02, 128, kTempLsbCelsius, true);
    }
    if (vcc_mon)
      r.voltage_thresholds = ThresholdsAt(*p02, 136, kVccLsbVolts, false);
    if (tx_mon)
      r.tx_power_thresholds = ThresholdsAt(*p02, 176, kPowerLsbWatts, false);
    if (bias_mon)
      r.tx_bias_thresholds = ThresholdsAt(*p02, 184, bias_lsb, false);
    if (rx_mon)
      r.rx_power_thresholds = ThresholdsAt(*p02, 192, kPowerLsbWatts, false);
  }
  auto p11 = Upper(pages, 0x11, &r.bad_pages);
  if (!p11) return;
  const Page& l = *p11;
  for (int lane = 0; lane < r.lanes; ++lane) {
    if (tx_mon)
      r.tx_power_watts.push_back(U16(l, 154 - 128 + 2 * lane) * kPowerLsbWatts);
    if (bias_mon)
      r.tx_bias_amperes.push_back(U16(l, 170 - 128 + 2 * lane) * bias_lsb);
    if (rx_mon)
      r.rx_power_watts.push_back(U16(l, 186 - 128 + 2 * lane) * kPowerLsbWatts);
  }
  // Page 11h lane flags, one bit per lane (lane 1 = bit 0): 135 Tx fault,
  // 136 Tx LOS, 139-142 Tx power HA/LA/HW/LW, 143-146 Tx bias, 147 Rx LOS,
  // 149-152 Rx power.
  auto bit = [&](int address, int lane) {
    return ((l[address - 128] >> lane) & 1) != 0;
  };
  for (int lane = 0; lane < r.lanes; ++lane) {
    r.flags.push_back({"tx_fault", "fault", lane, bit(135, lane)});
    r.flags.push_back({"tx_los", "fault", lane, bit(136, lane)});
    r.flags.push_back({"rx_los", "fault", lane, bit(147, lane)});
    for (int k = 0; k < 4; ++k) {
      if (tx_mon)
        r.flags.push_back({"tx_power", kLevels[k], lane, bit(139 + k, lane)});
      if (bias_mon)
        r.flags.push_back({"tx_bias", kLevels[k], lane, bit(143 + k, lane)});
      if (rx_mon)
        r.flags.push_back({"rx_power", kLevels[k], lane, bit(149 + k, lane)});
    }
  }
}

}  // namespace

std::vector<int> ModulePagesToRead(std::span<const std::uint8_t> lower) {
  if (lower.size() < kEepromPageSize) return {};
  if (IsSff8636(lower[0])) {
    if (lower[2] & 0x04) return {0};  // Flat_mem: page 00h only
    return {0, 3};
  }
  if (IsCmis(lower[0])) {
    if (lower[2] & 0x80) return {0};  // MemoryModel flat
    return {0, 1, 2, 0x11};
  }
  return {};
}

ModuleParse ParseModuleEeprom(const ModulePages& pages) {
  ModuleParse out;
  if (pages.lower.size() < kEepromPageSize) {
    out.skip = "truncated";
    return out;
  }
  const Page lower(pages.lower.data(), kEepromPageSize);
  ModuleReading r;
  r.identifier = lower[0];
  r.type = TypeName(lower[0]);
  if (IsSff8636(lower[0])) {
    // Status byte 2 bit 0: Data_Not_Ready, the monitors are not valid yet.
    if (lower[2] & 0x01) {
      out.skip = "not_ready";
      return out;
    }
    ParseSff8636(lower, pages, r);
  } else if (IsCmis(lower[0])) {
    ParseCmis(lower, pages, r);
  } else {
    out.skip = "unknown_identifier";
    return out;
  }
  out.reading = std::move(r);
  return out;
}

}  // namespace fabric
