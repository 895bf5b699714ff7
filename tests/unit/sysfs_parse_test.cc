// Table-driven tests of the pure sysfs attribute parsers.
#include "sources/sysfs_parse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace fabric {
namespace {

struct U64Case {
  std::string_view input;
  ParseStatus status;
  std::uint64_t value;
};

TEST(SysfsParseTest, U64) {
  const std::vector<U64Case> cases = {
      {"2221223609\n", ParseStatus::kOk, 2221223609},
      {"2221223609", ParseStatus::kOk, 2221223609},  // no newline (gpud tree)
      {"  42 \t\r\n", ParseStatus::kOk, 42},
      {"0", ParseStatus::kOk, 0},
      {"18446744073709551615", ParseStatus::kOk, UINT64_MAX},
      {"18446744073709551616", ParseStatus::kOverflow, 0},  // 2^64
      {"99999999999999999999999", ParseStatus::kOverflow, 0},
      {"-1", ParseStatus::kNegative, 0},
      {"-0\n", ParseStatus::kNegative, 0},
      {"", ParseStatus::kEmpty, 0},
      {"\n", ParseStatus::kEmpty, 0},
      {"   ", ParseStatus::kEmpty, 0},
      {"N/A (no PMA)\n", ParseStatus::kNotAvailable, 0},
      {"N/A (no PMA)", ParseStatus::kNotAvailable, 0},
      {"abc", ParseStatus::kInvalid, 0},
      {"12abc", ParseStatus::kInvalid, 0},
      {"12 34", ParseStatus::kInvalid, 0},
      {"+5", ParseStatus::kInvalid, 0},
      {"0x10", ParseStatus::kInvalid, 0},
      {"1.5", ParseStatus::kInvalid, 0},
      {std::string_view("1\0", 2), ParseStatus::kInvalid, 0},
      {"\xff\xfe", ParseStatus::kInvalid, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "input '" << c.input << "'");
    auto r = ParseU64(c.input);
    EXPECT_EQ(r.status, c.status) << ParseStatusName(r.status);
    if (c.status == ParseStatus::kOk) {
      EXPECT_EQ(r.value, c.value);
    }
  }
}

TEST(SysfsParseTest, Hex) {
  const std::vector<U64Case> cases = {
      {"0x1\n", ParseStatus::kOk, 1},
      {"0x2651e84a", ParseStatus::kOk, 0x2651e84a},
      {"0X00FF", ParseStatus::kOk, 0xff},
      {"0xffffffffffffffff", ParseStatus::kOk, UINT64_MAX},
      {"0x10000000000000000", ParseStatus::kOverflow, 0},
      {"0x", ParseStatus::kInvalid, 0},
      {"1f", ParseStatus::kInvalid, 0},  // prefix is mandatory
      {"0xzz", ParseStatus::kInvalid, 0},
      {"-0x1", ParseStatus::kNegative, 0},
      {"", ParseStatus::kEmpty, 0},
      {"N/A", ParseStatus::kNotAvailable, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "input '" << c.input << "'");
    auto r = ParseHex(c.input);
    EXPECT_EQ(r.status, c.status) << ParseStatusName(r.status);
    if (c.status == ParseStatus::kOk) {
      EXPECT_EQ(r.value, c.value);
    }
  }
}

TEST(SysfsParseTest, Guid) {
  const std::vector<U64Case> cases = {
      {"0a7f:bc12:45ef:d23b", ParseStatus::kOk, 0x0a7fbc1245efd23b},
      {"0a7f:bc12:45ef:d23b\n", ParseStatus::kOk, 0x0a7fbc1245efd23b},
      {"a7f:bc12:45ef:d23b", ParseStatus::kOk, 0x0a7fbc1245efd23b},
      {"0000:0000:0000:0000", ParseStatus::kOk, 0},
      {"0a7f:bc12:45ef", ParseStatus::kInvalid, 0},
      {"0a7f:bc12:45ef:d23b:0001", ParseStatus::kInvalid, 0},
      {"0a7f:bc12:45ef:d23bb", ParseStatus::kInvalid, 0},
      {"0a7f::45ef:d23b", ParseStatus::kInvalid, 0},
      {"0a7g:bc12:45ef:d23b", ParseStatus::kInvalid, 0},
      {"0x0a7fbc1245efd23b", ParseStatus::kInvalid, 0},
      {"", ParseStatus::kEmpty, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "input '" << c.input << "'");
    auto r = ParseGuid(c.input);
    EXPECT_EQ(r.status, c.status) << ParseStatusName(r.status);
    if (c.status == ParseStatus::kOk) {
      EXPECT_EQ(r.value, c.value);
    }
  }
  EXPECT_EQ(FormatGuid(0x0a7fbc1245efd23b), "0x0a7fbc1245efd23b");
  EXPECT_EQ(FormatGuid(1), "0x0000000000000001");
}

TEST(SysfsParseTest, GidInterfaceId) {
  auto r = ParseGidInterfaceId("fe80:0000:0000:0000:0002:c903:00a1:b2c3\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, 0x0002c90300a1b2c3u);
  EXPECT_FALSE(ParseGidInterfaceId("fe80:0000").ok());
  EXPECT_FALSE(ParseGidInterfaceId("fe80:0000:0000:0000:zzzz:0:0:0").ok());
}

struct StateCase {
  std::string_view input;
  ParseStatus status;
  std::uint32_t id;
  std::string_view name;
};

TEST(SysfsParseTest, State) {
  const std::vector<StateCase> cases = {
      {"4: ACTIVE\n", ParseStatus::kOk, 4, "ACTIVE"},
      {"4: ACTIVE", ParseStatus::kOk, 4, "ACTIVE"},
      {"1: DOWN\n", ParseStatus::kOk, 1, "DOWN"},
      {"5: ACTIVE_DEFER", ParseStatus::kOk, 5, "ACTIVE_DEFER"},
      {"5: LinkUp\n", ParseStatus::kOk, 5, "LinkUp"},
      {"2: Polling", ParseStatus::kOk, 2, "Polling"},
      {"3: Disabled", ParseStatus::kOk, 3, "Disabled"},
      {"4: PortConfigurationTraining", ParseStatus::kOk, 4,
       "PortConfigurationTraining"},
      {"7: Phy Test", ParseStatus::kOk, 7, "Phy Test"},
      {"4", ParseStatus::kOk, 4, ""},
      {"", ParseStatus::kEmpty, 0, ""},
      {"ACTIVE", ParseStatus::kInvalid, 0, ""},
      {": ACTIVE", ParseStatus::kInvalid, 0, ""},
      {"-1: DOWN", ParseStatus::kNegative, 0, ""},
      {"99999999999: X", ParseStatus::kOverflow, 0, ""},
      {"99999999999999999999999: X", ParseStatus::kOverflow, 0, ""},
      {"N/A", ParseStatus::kNotAvailable, 0, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "input '" << c.input << "'");
    auto r = ParseState(c.input);
    EXPECT_EQ(r.status, c.status) << ParseStatusName(r.status);
    if (c.status == ParseStatus::kOk) {
      EXPECT_EQ(r.value.id, c.id);
      EXPECT_EQ(r.value.name, c.name);
    }
  }
}

struct RateCase {
  std::string_view input;
  ParseStatus status;
  double bytes_per_second;
  std::uint32_t lanes;
  std::string_view speed;
};

TEST(SysfsParseTest, Rate) {
  const std::vector<RateCase> cases = {
      {"400 Gb/sec (4X NDR)\n", ParseStatus::kOk, 50e9, 4, "NDR"},
      {"400 Gb/sec (4X NDR)", ParseStatus::kOk, 50e9, 4, "NDR"},
      {"200 Gb/sec (4X HDR)", ParseStatus::kOk, 25e9, 4, "HDR"},
      {"100 Gb/sec (2X HDR)", ParseStatus::kOk, 12.5e9, 2, "HDR"},
      {"800 Gb/sec (4X XDR)", ParseStatus::kOk, 100e9, 4, "XDR"},
      {"1600 Gb/sec (8X XDR)", ParseStatus::kOk, 200e9, 8, "XDR"},
      {"100 Gb/sec (4X EDR)", ParseStatus::kOk, 12.5e9, 4, "EDR"},
      {"25 Gb/sec (1X EDR)", ParseStatus::kOk, 3.125e9, 1, "EDR"},
      {"56 Gb/sec (4X FDR)", ParseStatus::kOk, 7e9, 4, "FDR"},
      {"40 Gb/sec (4X QDR)", ParseStatus::kOk, 5e9, 4, "QDR"},
      {"20 Gb/sec (4X DDR)", ParseStatus::kOk, 2.5e9, 4, "DDR"},
      {"2.5 Gb/sec (1X SDR)", ParseStatus::kOk, 312.5e6, 1, "SDR"},
      {"30 Gb/sec (12X SDR)", ParseStatus::kOk, 3.75e9, 12, "SDR"},
      {"10 Gb/sec (4X)", ParseStatus::kOk, 1.25e9, 4, ""},  // iWARP
      {"10 Gb/sec", ParseStatus::kOk, 1.25e9, 0, ""},
      {"Unknown", ParseStatus::kNotAvailable, 0, 0, ""},
      {"N/A", ParseStatus::kNotAvailable, 0, 0, ""},
      {"", ParseStatus::kEmpty, 0, 0, ""},
      {"fast", ParseStatus::kInvalid, 0, 0, ""},
      {"400 Mb/sec (4X NDR)", ParseStatus::kInvalid, 0, 0, ""},
      {"400 Gb/sec 4X NDR", ParseStatus::kInvalid, 0, 0, ""},
      {"400 Gb/sec (NDR)", ParseStatus::kInvalid, 0, 0, ""},
      {"-400 Gb/sec (4X NDR)", ParseStatus::kNegative, 0, 0, ""},
      {"4e2 Gb/sec (4X NDR)", ParseStatus::kInvalid, 0, 0, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "input '" << c.input << "'");
    auto r = ParseRate(c.input);
    EXPECT_EQ(r.status, c.status) << ParseStatusName(r.status);
    if (c.status == ParseStatus::kOk) {
      EXPECT_DOUBLE_EQ(r.value.bytes_per_second, c.bytes_per_second);
      EXPECT_EQ(r.value.lanes, c.lanes);
      EXPECT_EQ(r.value.speed, c.speed);
    }
  }
}

// Random inputs from an alphabet that looks like sysfs values: no parser may
// crash, and an accepted decimal must round-trip.
TEST(SysfsParseTest, RandomInputsNeverCrashAndRoundTrip) {
  const std::string alphabet = "0123456789abcdefxX:() ./-GbsecN\n\t\xff";
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const int len = static_cast<int>(rng() % 28);
    for (int j = 0; j < len; ++j) text += alphabet[rng() % alphabet.size()];
    auto u = ParseU64(text);
    if (u.ok()) {
      std::string digits(TrimValue(text));
      digits.erase(0,
                   std::min(digits.find_first_not_of('0'), digits.size() - 1));
      EXPECT_EQ(std::to_string(u.value), digits) << "input '" << text << "'";
    }
    ParseHex(text);
    ParseGuid(text);
    ParseGidInterfaceId(text);
    ParseState(text);
    auto rate = ParseRate(text);
    if (rate.ok()) {
      EXPECT_GE(rate.value.bytes_per_second, 0);
    }
  }
}

}  // namespace
}  // namespace fabric
