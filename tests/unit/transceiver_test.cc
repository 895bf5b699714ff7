// Transceiver EEPROM parsing (sources/transceiver_parse.h) on module images
// built byte by byte from the specs' tables, and the transceiver collector
// (collectors/transceiver.h) through its one seam (FakeModuleEeprom):
// both specs, flat memory, truncated pages, unknown identifiers, garbage,
// read errors and the collection budget.
//
// Tables cited: SFF-8636 rev 2.10a (Table 6-2 lower page 00h, Tables 6-4..
// 6-7 flags, 6-8 module monitors, 6-9 channel monitors, Table 6-15 upper
// page 00h, 6-19 device technology, 6-24 diagnostic monitoring type, Table
// 6-26 page 03h thresholds); CMIS 5.2 (Table 8-4 lower memory, 8-8 module
// flags, 8-9 module monitors, 8-25 page 00h identity, 8-29 cable length,
// Table 8-41/8-42 page 01h monitor advertisement, Table 8-63 page 02h
// thresholds, Tables 8-77/8-78 page 11h lane flags and monitors);
// SFF-8024 Table 4-1 identifiers.
#include "collectors/transceiver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "core/metric_names.h"
#include "tests/support/fake_module_eeprom.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/families.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

using Page = std::vector<std::uint8_t>;

// Writes at an EEPROM address: lower memory 0-127, an upper page 128-255.
void Put16(Page& p, int address, std::uint16_t v) {
  const int at = address >= 128 ? address - 128 : address;
  p[at] = static_cast<std::uint8_t>(v >> 8);
  p[at + 1] = static_cast<std::uint8_t>(v);
}
void PutText(Page& p, int address, const std::string& s, std::size_t len) {
  const int at = address - 128;
  for (std::size_t i = 0; i < len; ++i) {
    p[at + i] = i < s.size() ? static_cast<std::uint8_t>(s[i]) : ' ';
  }
}
void Put4(Page& p, int address, std::uint16_t ha, std::uint16_t la,
          std::uint16_t hw, std::uint16_t lw) {
  Put16(p, address, ha);
  Put16(p, address + 2, la);
  Put16(p, address + 4, hw);
  Put16(p, address + 6, lw);
}

// A QSFP28 100G-SR4 optical module, SFF-8636.
ModulePages Sff8636Sr4() {
  ModulePages m;
  Page lower(128, 0);
  lower[0] = 0x11;   // Table 6-2 byte 0: identifier QSFP28 (SFF-8024)
  lower[1] = 0x08;   // byte 1: revision compliance, SFF-8636 rev 2.7+
  lower[2] = 0x00;   // byte 2: paged memory, data ready
  lower[3] = 0x21;   // Table 6-4 byte 3: Tx LOS ch2 (bit 5), Rx LOS ch1 (bit 0)
  lower[4] = 0x08;   // byte 4: Tx fault ch4 (bit 3)
  lower[6] = 0x20;   // Table 6-5 byte 6: temperature high warning (bit 5)
  lower[7] = 0x40;   // byte 7: Vcc low alarm (bit 6)
  lower[9] = 0x01;   // Table 6-6 byte 9: Rx power ch2 low warning (bit 0)
  lower[12] = 0x80;  // byte 12: Tx bias ch3 high alarm (bit 7)
  lower[14] = 0x02;  // byte 14: Tx power ch4 high warning (bit 1)
  Put16(lower, 22, 0x2380);  // Table 6-8: temperature 35.5 °C (1/256 °C)
  Put16(lower, 26, 0x8079);  // Vcc 3.2889 V (100 µV)
  for (int ch = 0; ch < 4; ++ch) {
    Put16(lower, 34 + 2 * ch, 5000 + ch);  // Table 6-9: Rx power, 0.1 µW
    Put16(lower, 42 + 2 * ch, 3000 + ch);  // Tx bias, 2 µA
    Put16(lower, 50 + 2 * ch, 6000 + ch);  // Tx power, 0.1 µW
  }
  m.lower = lower;
  Page p00(128, 0);
  p00[128 - 128] = 0x11;
  p00[130 - 128] = 0x0c;  // connector MPO 1x12 (separable)
  p00[146 - 128] = 0;
  p00[147 - 128] = 0x00;  // Table 6-19: 850 nm VCSEL
  PutText(p00, 148, "FINISAR CORP.", 16);
  PutText(p00, 168, "FTLC9551REPM", 16);
  PutText(p00, 184, "A0", 2);
  PutText(p00, 196, "X4Y05ABC", 16);
  p00[220 - 128] = 0x3c;  // Table 6-24: temp, Vcc, avg Rx power, Tx power
  m.upper[0] = p00;
  Page p03(128, 0);
  Put4(p03, 128, 75 * 256, static_cast<std::uint16_t>(-5 * 256), 70 * 256, 0);
  Put4(p03, 144, 36300, 29700, 34650, 31350);  // Vcc, 100 µV
  Put4(p03, 176, 34674, 512, 17378, 1023);     // Rx power
  Put4(p03, 184, 6000, 1000, 5500, 1500);      // Tx bias
  Put4(p03, 192, 31623, 1000, 15849, 2512);    // Tx power
  m.upper[3] = p03;
  return m;
}

// A 400G QSFP-DD DR4 optical module, CMIS 5.0, paged memory.
ModulePages CmisDr4() {
  ModulePages m;
  Page lower(128, 0);
  lower[0] = 0x18;  // Table 8-4 byte 0: QSFP-DD (SFF-8024)
  lower[1] = 0x50;  // byte 1: CMIS 5.0
  lower[2] = 0x00;  // byte 2 bit 7: paged memory
  lower[3] = 0x06;  // byte 3 bits 3-1: ModuleReady (3)
  lower[9] = 0x14;  // Table 8-8 byte 9: temp high warning (bit 2), Vcc
                    // high alarm (bit 4)
  Put16(lower, 14, static_cast<std::uint16_t>(-2 * 256));  // -2 °C
  Put16(lower, 16, 33000);                                 // 3.3 V
  lower[85] = 0x02;                                        // MediaType: SMF
  lower[86] = 0x1c;  // application 1: host 400GAUI-8
  lower[87] = 0x1c;  // media 400GBASE-DR4
  lower[88] = 0x84;  // host lanes 8, media lanes 4
  m.lower = lower;
  Page p00(128, 0);
  p00[0] = 0x18;
  PutText(p00, 129, "Mellanox", 16);
  PutText(p00, 148, "MMS1V00-WM", 16);
  PutText(p00, 164, "A1", 2);
  PutText(p00, 166, "MT2201FT00001", 16);
  p00[202 - 128] = 0;  // separable: no cable length
  m.upper[0] = p00;
  Page p01(128, 0);
  p01[159 - 128] = 0x03;  // Table 8-41: temperature and Vcc monitors
  p01[160 - 128] = 0x0f;  // Tx bias, Tx power, Rx power; bias multiplier x2
  m.upper[1] = p01;
  Page p02(128, 0);
  Put4(p02, 128, 80 * 256, static_cast<std::uint16_t>(-10 * 256), 75 * 256,
       static_cast<std::uint16_t>(-5 * 256));
  Put4(p02, 136, 36300, 29700, 34650, 31350);
  Put4(p02, 176, 50119, 1479, 39811, 1862);  // Tx power
  Put4(p02, 184, 7500, 1250, 7000, 1500);    // Tx bias (x2 multiplier)
  Put4(p02, 192, 50119, 457, 39811, 575);    // Rx power
  m.upper[2] = p02;
  Page p11(128, 0);
  p11[135 - 128] = 0x00;  // Table 8-77: Tx fault none
  p11[136 - 128] = 0x04;  // Tx LOS lane 3
  p11[147 - 128] = 0x01;  // Rx LOS lane 1
  p11[152 - 128] = 0x01;  // Rx power low warning lane 1
  p11[139 - 128] = 0x08;  // Tx power high alarm lane 4
  for (int l = 0; l < 8; ++l) {
    Put16(p11, 154 + 2 * l, 10000 + l);  // Table 8-78: Tx power, 0.1 µW
    Put16(p11, 170 + 2 * l, 3000 + l);   // Tx bias, 2 µA x multiplier
    Put16(p11, 186 + 2 * l, 9000 + l);   // Rx power
  }
  m.upper[0x11] = p11;
  return m;
}

// A 2 m passive copper QSFP56 DAC: CMIS, flat memory, page 00h only.
ModulePages CmisDac() {
  ModulePages m;
  Page lower(128, 0);
  lower[0] = 0x1e;   // QSFP+ or later with CMIS
  lower[1] = 0x40;   // CMIS 4.0
  lower[2] = 0x80;   // flat memory
  lower[85] = 0x03;  // passive copper
  m.lower = lower;
  Page p00(128, 0);
  PutText(p00, 129, "NVIDIA", 16);
  PutText(p00, 148, "MCP1650-V002E26", 16);
  p00[202 - 128] = 0x54;  // Table 8-29: multiplier 01 (x1), value 20 -> 20 m?
  m.upper[0] = p00;
  return m;
}

const ModuleFlag* FindFlag(const ModuleReading& r, const std::string& q,
                           const std::string& level, int lane) {
  for (const ModuleFlag& f : r.flags) {
    if (f.quantity == q && f.level == level && f.lane == lane) return &f;
  }
  return nullptr;
}

TEST(TransceiverParseTest, Sff8636Sr4) {
  ModulePages m = Sff8636Sr4();
  EXPECT_EQ(ModulePagesToRead(m.lower), (std::vector<int>{0, 3}));
  ModuleParse p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading) << p.skip;
  const ModuleReading& r = *p.reading;
  EXPECT_EQ(r.spec, ModuleSpec::kSff8636);
  EXPECT_EQ(r.type, "QSFP28");
  EXPECT_EQ(r.revision, "0x08");
  EXPECT_EQ(r.vendor, "FINISAR CORP.");
  EXPECT_EQ(r.part_number, "FTLC9551REPM");
  EXPECT_EQ(r.vendor_revision, "A0");
  EXPECT_EQ(r.serial, "X4Y05ABC");
  EXPECT_EQ(r.media, "mmf");
  EXPECT_FALSE(r.cable_length_meters);
  EXPECT_DOUBLE_EQ(*r.temperature_celsius, 35.5);
  EXPECT_DOUBLE_EQ(*r.supply_voltage_volts, 0x8079 * 1e-4);
  ASSERT_EQ(r.lanes, 4);
  ASSERT_EQ(r.rx_power_watts.size(), 4u);
  EXPECT_DOUBLE_EQ(r.rx_power_watts[0], 5000 * 1e-7);
  EXPECT_DOUBLE_EQ(r.rx_power_watts[3], 5003 * 1e-7);
  EXPECT_DOUBLE_EQ(r.tx_bias_amperes[1], 3001 * 2e-6);
  EXPECT_DOUBLE_EQ(r.tx_power_watts[2], 6002 * 1e-7);
  ASSERT_TRUE(r.temperature_thresholds);
  EXPECT_DOUBLE_EQ(*r.temperature_thresholds->high_alarm, 75);
  EXPECT_DOUBLE_EQ(*r.temperature_thresholds->low_alarm, -5);
  EXPECT_DOUBLE_EQ(*r.temperature_thresholds->high_warning, 70);
  EXPECT_DOUBLE_EQ(*r.voltage_thresholds->low_warning, 3.135);
  EXPECT_DOUBLE_EQ(*r.rx_power_thresholds->high_alarm, 34674 * 1e-7);
  EXPECT_DOUBLE_EQ(*r.tx_bias_thresholds->high_warning, 5500 * 2e-6);
  EXPECT_DOUBLE_EQ(*r.tx_power_thresholds->low_warning, 2512 * 1e-7);
  EXPECT_TRUE(FindFlag(r, "tx_los", "fault", 1)->set);
  EXPECT_FALSE(FindFlag(r, "tx_los", "fault", 0)->set);
  EXPECT_TRUE(FindFlag(r, "rx_los", "fault", 0)->set);
  EXPECT_TRUE(FindFlag(r, "tx_fault", "fault", 3)->set);
  EXPECT_TRUE(FindFlag(r, "temperature", "high_warning", -1)->set);
  EXPECT_FALSE(FindFlag(r, "temperature", "high_alarm", -1)->set);
  EXPECT_TRUE(FindFlag(r, "voltage", "low_alarm", -1)->set);
  EXPECT_TRUE(FindFlag(r, "rx_power", "low_warning", 1)->set);
  EXPECT_FALSE(FindFlag(r, "rx_power", "low_warning", 0)->set);
  EXPECT_TRUE(FindFlag(r, "tx_bias", "high_alarm", 2)->set);
  EXPECT_TRUE(FindFlag(r, "tx_power", "high_warning", 3)->set);
  int set = 0;
  for (const ModuleFlag& f : r.flags) set += f.set;
  EXPECT_EQ(set, 8);
  EXPECT_EQ(r.bad_pages, 0u);
}

TEST(TransceiverParseTest, Sff8636FlatCopperCable) {
  ModulePages m = Sff8636Sr4();
  m.lower[2] = 0x04;  // Flat_mem
  m.upper.erase(3);
  m.upper[0][130 - 128] = 0x23;  // no separable connector: a cable
  m.upper[0][146 - 128] = 3;     // 3 m
  m.upper[0][147 - 128] = 0xa0;  // copper, unequalized
  m.upper[0][220 - 128] = 0x00;  // no monitors
  EXPECT_EQ(ModulePagesToRead(m.lower), (std::vector<int>{0}));
  ModuleParse p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading);
  EXPECT_EQ(p.reading->media, "passive_copper");
  EXPECT_EQ(p.reading->cable_length_meters, 3.0);
  EXPECT_FALSE(p.reading->temperature_celsius);
  EXPECT_TRUE(p.reading->rx_power_watts.empty());
  EXPECT_FALSE(p.reading->temperature_thresholds);
}

TEST(TransceiverParseTest, CmisDr4) {
  ModulePages m = CmisDr4();
  EXPECT_EQ(ModulePagesToRead(m.lower), (std::vector<int>{0, 1, 2, 0x11}));
  ModuleParse p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading) << p.skip;
  const ModuleReading& r = *p.reading;
  EXPECT_EQ(r.spec, ModuleSpec::kCmis);
  EXPECT_EQ(r.type, "QSFP-DD");
  EXPECT_EQ(r.revision, "5.0");
  EXPECT_EQ(r.vendor, "Mellanox");
  EXPECT_EQ(r.part_number, "MMS1V00-WM");
  EXPECT_EQ(r.vendor_revision, "A1");
  EXPECT_EQ(r.serial, "MT2201FT00001");
  EXPECT_EQ(r.media, "smf");
  EXPECT_FALSE(r.cable_length_meters);
  EXPECT_DOUBLE_EQ(*r.temperature_celsius, -2);
  EXPECT_DOUBLE_EQ(*r.supply_voltage_volts, 3.3);
  ASSERT_EQ(r.lanes, 4);  // the application's media lanes, not the bank's 8
  ASSERT_EQ(r.tx_power_watts.size(), 4u);
  EXPECT_DOUBLE_EQ(r.tx_power_watts[3], 10003 * 1e-7);
  EXPECT_DOUBLE_EQ(r.rx_power_watts[0], 9000 * 1e-7);
  EXPECT_DOUBLE_EQ(r.tx_bias_amperes[1], 3001 * 2e-6 * 2);  // x2
  EXPECT_DOUBLE_EQ(*r.temperature_thresholds->low_warning, -5);
  EXPECT_DOUBLE_EQ(*r.voltage_thresholds->high_alarm, 3.63);
  EXPECT_DOUBLE_EQ(*r.tx_power_thresholds->high_alarm, 50119 * 1e-7);
  EXPECT_DOUBLE_EQ(*r.tx_bias_thresholds->high_alarm, 7500 * 2e-6 * 2);
  EXPECT_DOUBLE_EQ(*r.rx_power_thresholds->low_alarm, 457 * 1e-7);
  EXPECT_TRUE(FindFlag(r, "temperature", "high_warning", -1)->set);
  EXPECT_TRUE(FindFlag(r, "voltage", "high_alarm", -1)->set);
  EXPECT_TRUE(FindFlag(r, "tx_los", "fault", 2)->set);
  EXPECT_TRUE(FindFlag(r, "rx_los", "fault", 0)->set);
  EXPECT_TRUE(FindFlag(r, "rx_power", "low_warning", 0)->set);
  EXPECT_TRUE(FindFlag(r, "tx_power", "high_alarm", 3)->set);
  EXPECT_FALSE(FindFlag(r, "tx_power", "high_alarm", 2)->set);
  EXPECT_EQ(FindFlag(r, "tx_power", "high_alarm", 4), nullptr);  // 4 lanes
}

TEST(TransceiverParseTest, CmisFlatCopperHasIdentityOnly) {
  ModulePages m = CmisDac();
  EXPECT_EQ(ModulePagesToRead(m.lower), (std::vector<int>{0}));
  ModuleParse p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading);
  EXPECT_EQ(p.reading->type, "QSFP+_CMIS");
  EXPECT_EQ(p.reading->revision, "4.0");
  EXPECT_EQ(p.reading->media, "passive_copper");
  EXPECT_EQ(p.reading->part_number, "MCP1650-V002E26");
  // 0x54: multiplier bits 01 (x1 m), value 0x14 = 20.
  EXPECT_EQ(p.reading->cable_length_meters, 20.0);
  EXPECT_FALSE(p.reading->temperature_celsius);
  EXPECT_TRUE(p.reading->flags.empty());
}

TEST(TransceiverParseTest, TruncatedUnknownNotReadyAndGarbage) {
  ModulePages m = Sff8636Sr4();
  m.lower.resize(100);
  EXPECT_EQ(ParseModuleEeprom(m).skip, "truncated");
  EXPECT_TRUE(ModulePagesToRead(m.lower).empty());
  EXPECT_EQ(ParseModuleEeprom({}).skip, "truncated");

  m = Sff8636Sr4();
  m.lower[0] = 0x03;  // SFP (SFF-8472): not parsed here
  EXPECT_EQ(ParseModuleEeprom(m).skip, "unknown_identifier");
  m.lower[0] = 0xff;
  EXPECT_EQ(ParseModuleEeprom(m).skip, "unknown_identifier");
  EXPECT_TRUE(ModulePagesToRead(m.lower).empty());

  m = Sff8636Sr4();
  m.lower[2] = 0x01;  // Data_Not_Ready
  EXPECT_EQ(ParseModuleEeprom(m).skip, "not_ready");

  // A short upper page is ignored and counted; the rest stands.
  m = CmisDr4();
  m.upper[2].resize(64);
  m.upper[0x11].resize(0);
  ModuleParse p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading);
  EXPECT_EQ(p.reading->bad_pages, 2u);
  EXPECT_FALSE(p.reading->tx_power_thresholds);
  EXPECT_TRUE(p.reading->tx_power_watts.empty());
  EXPECT_DOUBLE_EQ(*p.reading->temperature_celsius, -2);

  // Control characters in text fields do not reach labels.
  m = Sff8636Sr4();
  m.upper[0][148 - 128] = 0x00;
  m.upper[0][149 - 128] = 0x1b;
  m.upper[0][150 - 128] = 0xff;
  p = ParseModuleEeprom(m);
  ASSERT_TRUE(p.reading);
  EXPECT_EQ(p.reading->vendor, "ISAR CORP.");  // "FIN" replaced, trimmed

  // Random pages of random sizes never crash.
  std::mt19937 rng(28);
  for (int i = 0; i < 3000; ++i) {
    ModulePages g;
    g.lower.resize(rng() % 140);
    for (auto& b : g.lower) b = static_cast<std::uint8_t>(rng());
    if (!g.lower.empty() && rng() % 2) {
      g.lower[0] = std::array<std::uint8_t, 6>{0x0c, 0x0d, 0x11,
                                               0x18, 0x19, 0x1e}[rng() % 6];
    }
    for (int page : {0, 1, 2, 3, 0x11}) {
      if (rng() % 3 == 0) continue;
      auto& u = g.upper[page];
      u.resize(rng() % 2 ? 128 : rng() % 140);
      for (auto& b : u) b = static_cast<std::uint8_t>(rng());
    }
    (void)ParseModuleEeprom(g);
  }
}

// The collector -----------------------------------------------------------

using Families = std::vector<prometheus::MetricFamily>;

std::optional<double> Value(const Families& fams, const std::string& name,
                            const Labels& want) {
  return testing::SampleValue(fams, name, want);
}

struct Outcome {
  Families families;
  bool ok;
  std::uint64_t skipped;
};

Outcome Collect(Collector& c) {
  MetricSink sink;
  bool ok = c.Collect(sink);
  std::uint64_t skipped = sink.skipped();
  return {sink.Take(), ok, skipped};
}

std::shared_ptr<testing::FakeSysfs> Host() {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string d = "class/infiniband/mlx5_0/";
  fs->File(d + "ports/1/link_layer", "Ethernet\n");
  fs->File(d + "ports/1/gid_attrs/ndevs/0", "eth0\n");
  fs->File("class/net/eth0/address", "0c:42:a1:00:00:01\n");
  // An IB HCA with its IPoIB netdev on port 1.
  const std::string i = "class/infiniband/mlx5_1/";
  fs->File(i + "ports/1/link_layer", "InfiniBand\n");
  fs->File(i + "device/net/ib0/dev_id", "0x0\n");
  fs->File("class/net/ib0/dev_port", "0\n");
  // A RoCE netdev the tree does not have in class/net: not read.
  fs->File("class/infiniband/mlx5_2/ports/1/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_2/ports/1/gid_attrs/ndevs/0", "ghost0\n");
  return fs;
}

TEST(TransceiverCollectorTest, DiscoversAndExportsBothSpecs) {
  auto src = std::make_unique<testing::FakeModuleEeprom>();
  src->modules["eth0"] = CmisDr4();
  src->modules["ib0"] = Sff8636Sr4();
  auto calls = src->calls;
  CollectorEnv env;
  env.sysfs = Host();
  auto c = MakeTransceiverCollector(env, {}, std::move(src));
  EXPECT_EQ(c->Name(), "transceiver");
  Outcome r = Collect(*c);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.skipped, 0u);
  EXPECT_EQ(*calls,
            (std::vector<std::string>{"eth0:0", "eth0:0", "eth0:1", "eth0:2",
                                      "eth0:17", "ib0:0", "ib0:0", "ib0:3"}));
  const Labels eth0 = {{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "eth0"}};
  EXPECT_EQ(Value(r.families, "fabric_transceiver_info",
                  {{"netdev", "eth0"},
                   {"identifier", "QSFP-DD"},
                   {"spec", "cmis"},
                   {"vendor", "Mellanox"},
                   {"serial", "MT2201FT00001"},
                   {"media", "smf"},
                   {"cable_length_meters", ""}}),
            1);
  EXPECT_EQ(Value(r.families, "fabric_transceiver_temperature_celsius", eth0),
            -2);
  EXPECT_DOUBLE_EQ(*Value(r.families, "fabric_transceiver_rx_power_watts",
                          {{"netdev", "eth0"}, {"lane", "0"}}),
                   9000 * 1e-7);
  EXPECT_DOUBLE_EQ(
      *Value(r.families, "fabric_transceiver_tx_power_threshold_watts",
             {{"netdev", "eth0"}, {"level", "high_alarm"}}),
      50119 * 1e-7);
  EXPECT_EQ(Value(r.families, "fabric_transceiver_flag",
                  {{"netdev", "eth0"}, {"quantity", "tx_los"}, {"lane", "2"}}),
            1);
  EXPECT_EQ(Value(r.families, "fabric_transceiver_flag",
                  {{"netdev", "eth0"},
                   {"quantity", "temperature"},
                   {"level", "high_warning"},
                   {"lane", ""}}),
            1);
  EXPECT_EQ(Value(r.families, "fabric_transceiver_info",
                  {{"device", "mlx5_1"},
                   {"port", "1"},
                   {"netdev", "ib0"},
                   {"identifier", "QSFP28"},
                   {"part_number", "FTLC9551REPM"}}),
            1);
  EXPECT_EQ(
      Value(r.families, "fabric_transceiver_temperature_threshold_celsius",
            {{"netdev", "ib0"}, {"level", "low_alarm"}}),
      -5);
  EXPECT_EQ(Value(r.families, "fabric_transceiver_modules_skipped_total",
                  {{"reason", "truncated"}}),
            0);
}

TEST(TransceiverCollectorTest, BadModulesAreSkippedAndCounted) {
  auto src = std::make_unique<testing::FakeModuleEeprom>();
  ModulePages unknown = Sff8636Sr4();
  unknown.lower[0] = 0x03;
  ModulePages truncated = CmisDr4();
  truncated.lower.resize(20);
  src->modules["a"] = unknown;
  src->modules["b"] = truncated;
  src->errors["c"] = std::make_error_code(std::errc::io_error);
  src->errors["d"] = std::make_error_code(std::errc::operation_not_supported);
  CollectorEnv env;
  TransceiverOptions options;
  options.netdevs = std::vector<RoceNetdev>{
      {"x", "1", "a"}, {"x", "2", "b"}, {"x", "3", "c"}, {"x", "4", "d"}};
  auto c = MakeTransceiverCollector(env, options, std::move(src));
  for (int round = 1; round <= 2; ++round) {
    Outcome r = Collect(*c);
    EXPECT_TRUE(r.ok);         // one module read failed, not all
    EXPECT_EQ(r.skipped, 3u);  // d has no EEPROM: absent, not a skip
    EXPECT_FALSE(Value(r.families, "fabric_transceiver_info", {}));
    for (const char* reason :
         {"unknown_identifier", "truncated", "read_error"}) {
      EXPECT_EQ(Value(r.families, "fabric_transceiver_modules_skipped_total",
                      {{"reason", reason}}),
                round)
          << reason;
    }
    EXPECT_EQ(Value(r.families, "fabric_transceiver_modules_skipped_total",
                    {{"reason", "deadline"}}),
              0);
  }
}

TEST(TransceiverCollectorTest, StopsStartingModulesAfterTheBudget) {
  auto src = std::make_unique<testing::FakeModuleEeprom>();
  src->modules["a"] = CmisDac();
  src->modules["b"] = CmisDac();
  src->modules["c"] = CmisDac();
  auto calls = src->calls;
  CollectorEnv env;
  double now = 0;
  env.clock = [&now] { return now += 4; };  // every look at the clock: 4 s
  TransceiverOptions options;
  options.budget = std::chrono::seconds(10);
  options.netdevs = std::vector<RoceNetdev>{
      {"x", "1", "a"}, {"x", "2", "b"}, {"x", "3", "c"}};
  auto c = MakeTransceiverCollector(env, options, std::move(src));
  Outcome r = Collect(*c);
  EXPECT_TRUE(r.ok);
  // start 4; a at 8 (read), b at 12 (>10 past start? 8 s: read), c at 16.
  EXPECT_EQ(Value(r.families, "fabric_transceiver_modules_skipped_total",
                  {{"reason", "deadline"}}),
            1);
  EXPECT_EQ(calls->back(), "b:0");
}

TEST(TransceiverCollectorTest, NoSourceReadsNothing) {
  CollectorEnv env;
  env.sysfs = Host();
  auto c = MakeTransceiverCollector(env, {}, nullptr);
  Outcome r = Collect(*c);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.families.empty());
}

TEST(TransceiverCollectorTest, EveryFamilyIsInMetricsDoc) {
  const auto documented = DocumentedFamilies("transceiver");
  auto src = std::make_unique<testing::FakeModuleEeprom>();
  src->modules["eth0"] = CmisDr4();
  src->modules["ib0"] = Sff8636Sr4();
  CollectorEnv env;
  env.sysfs = Host();
  auto c = MakeTransceiverCollector(env, {}, std::move(src));
  Outcome r = Collect(*c);
  ASSERT_GE(r.families.size(), 13u);
  for (const auto& f : r.families) {
    EXPECT_THAT(documented, ::testing::Contains(f.name))
        << f.name << " is not in the ## transceiver table of docs/metrics.md";
  }
}

}  // namespace
}  // namespace fabric
