#include "simulator/transceiver.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace fabric::sim {
namespace {

using Half = std::array<std::uint8_t, 128>;

// Writes at an EEPROM address: lower memory 0-127, an upper page 128-255.
void Put16(Half& h, int address, std::uint16_t v) {
  const int at = address % 128;
  h[at] = static_cast<std::uint8_t>(v >> 8);
  h[at + 1] = static_cast<std::uint8_t>(v);
}
void PutText(Half& h, int address, const std::string& s, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) {
    h[address % 128 + i] = i < s.size() ? static_cast<std::uint8_t>(s[i]) : ' ';
  }
}
// Four thresholds: high alarm, low alarm, high warning, low warning.
void Put4(Half& h, int address, std::uint16_t ha, std::uint16_t la,
          std::uint16_t hw, std::uint16_t lw) {
  Put16(h, address, ha);
  Put16(h, address + 2, la);
  Put16(h, address + 4, hw);
  Put16(h, address + 6, lw);
}
// Temperature in 1/256 °C, two's complement.
std::uint16_t Celsius(double c) {
  return static_cast<std::uint16_t>(static_cast<std::int16_t>(
      std::lround(std::clamp(c, -127.0, 127.0) * 256)));
}

std::string Hex(const Half& h) {
  std::string out;
  char buf[3];
  for (std::uint8_t b : h) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

}  // namespace

std::optional<std::string> SimModuleEepromText(const Cluster& c, int host,
                                               const std::string& netdev) {
  const Port* port = c.FindNetdevPort(host, netdev);
  if (!port) return std::nullopt;
  const double temp = port->module_temperature_celsius;
  Half lower{};
  lower[0] = 0x11;  // Table 6-2 byte 0: QSFP28 or later (SFF-8024)
  lower[1] = 0x08;  // byte 1: SFF-8636 rev 2.7+
  lower[2] = 0x00;  // byte 2: paged memory, data ready
  // Table 6-5 byte 6: latched temperature high alarm (bit 7) and high
  // warning (bit 5).
  lower[6] = static_cast<std::uint8_t>(
      (temp >= kModuleTempHighAlarmCelsius ? 0x80 : 0) |
      (temp >= kModuleTempHighWarningCelsius ? 0x20 : 0));
  Put16(lower, 22, Celsius(temp));  // Table 6-8: temperature
  Put16(lower, 26, 33000);          // Vcc 3.3 V (100 µV)
  // Table 6-9, per channel: Rx power 0.1 µW (0.8 mW; a link that is down
  // receives nothing), Tx bias 2 µA (7 mA), Tx power 0.1 µW (0.9 mW).
  for (int ch = 0; ch < 4; ++ch) {
    Put16(lower, 34 + 2 * ch, port->up ? 8000 : 0);
    Put16(lower, 42 + 2 * ch, 3500);
    Put16(lower, 50 + 2 * ch, 9000);
  }
  Half p00{};
  p00[0] = 0x11;
  p00[130 - 128] = 0x0c;  // connector: MPO 1x12
  p00[147 - 128] = 0x00;  // Table 6-19: 850 nm VCSEL (multimode optics)
  PutText(p00, 148, "NVIDIA", 16);
  PutText(p00, 168, "MMA1T00-VS", 16);
  PutText(p00, 184, "A2", 2);
  char serial[17];
  std::snprintf(serial, sizeof(serial), "MT23SIM%04u",
                static_cast<unsigned>(host) % 10000u);
  PutText(p00, 196, serial, 16);
  p00[220 - 128] = 0x3c;  // Table 6-24: temp, Vcc, avg Rx power, Tx power
  Half p03{};
  Put4(p03, 128, Celsius(kModuleTempHighAlarmCelsius), Celsius(-5),
       Celsius(kModuleTempHighWarningCelsius), Celsius(0));
  Put4(p03, 144, 36300, 29700, 34650, 31350);  // Vcc, 100 µV
  Put4(p03, 176, 34674, 512, 17378, 1023);     // Rx power, 0.1 µW
  Put4(p03, 184, 6000, 1000, 5500, 1500);      // Tx bias, 2 µA
  Put4(p03, 192, 31623, 1000, 15849, 2512);    // Tx power, 0.1 µW
  return "# fabricmon-sim module EEPROM of " + c.hosts()[host].name + " " +
         netdev + " (SFF-8636)\nlower " + Hex(lower) + "\npage 00 " + Hex(p00) +
         "\npage 03 " + Hex(p03) + "\n";
}

}  // namespace fabric::sim
