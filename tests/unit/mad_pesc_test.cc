// The one PESC layout decision (sources/mad/pesc.h) that the switch sweep
// and the ib_link collector both take: which MAD comes after the PMA's
// ClassPortInfo, and the layout once PortInfoExtended answered or not.
// The MAD sequences themselves are tested end to end in
// mad_sweep_pesc_test (sweep) and ib_link_collector_test (local ports).
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include "sources/mad/codec.h"
#include "sources/mad/pesc.h"

namespace fabric::mad {
namespace {

constexpr std::uint32_t kExt = kCapabilityHasExtendedSpeeds;
constexpr std::uint32_t kExtAndCap2 = kExt | kCapabilityHasCapabilityMask2;

PmaClassPortInfo Pma(bool rs_fec) {
  PmaClassPortInfo p;
  if (rs_fec) p.capability_mask = 1u << 14;
  return p;
}

TEST(StartPesc, NoExtendedSpeedsNoPesc) {
  const PescStart s = StartPesc(0, std::nullopt, Pma(true));
  EXPECT_EQ(s.next, PescStart::Next::kNone);
  EXPECT_EQ(s.layout, PescLayout::kNone);
}

TEST(StartPesc, PmaWithoutRsFecGoesStraightToTheOriginalLayout) {
  for (auto cap2 :
       {std::optional<std::uint16_t>{},
        std::optional<std::uint16_t>{kCapability2PortInfoExtended}}) {
    const PescStart s = StartPesc(kExtAndCap2, cap2, Pma(false));
    EXPECT_EQ(s.next, PescStart::Next::kPesc);
    EXPECT_EQ(s.layout, PescLayout::kErrorDetection);
  }
}

// A local port's CapabilityMask2 decides whether PortInfoExtended exists;
// a switch port's (nullopt: discovery did not read it) is assumed to.
TEST(StartPesc, PortInfoExtendedOnlyWhereThePortMayHaveIt) {
  EXPECT_EQ(StartPesc(kExt, std::nullopt, Pma(true)).next,
            PescStart::Next::kPortInfoExtended);
  EXPECT_EQ(
      StartPesc(kExtAndCap2, kCapability2PortInfoExtended, Pma(true)).next,
      PescStart::Next::kPortInfoExtended);
  const PescStart no = StartPesc(kExtAndCap2, 0, Pma(true));
  EXPECT_EQ(no.next, PescStart::Next::kPesc);
  EXPECT_EQ(no.layout, PescLayout::kErrorDetection);
}

TEST(LayoutAfterPortInfoExtended, NoAnswerOrGarbageIsTheOriginalLayout) {
  EXPECT_EQ(LayoutAfterPortInfoExtended(kExt, Pma(true), std::nullopt),
            PescLayout::kErrorDetection);
  Mad garbage{};
  EXPECT_EQ(LayoutAfterPortInfoExtended(kExt, Pma(true), Bytes(garbage)),
            PescLayout::kErrorDetection);
}

// A PortInfoExtended GetResp saying RS-FEC is active picks the RS-FEC
// layout (as perfquery -T).
TEST(LayoutAfterPortInfoExtended, RsFecActivePicksRsFec) {
  Mad m = DrSmpGet(kAttrPortInfoExtended, 1, {});
  std::uint32_t v = 1;
  mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
  v = IB_MAD_METHOD_GET;
  mad_encode_field(m.data(), IB_MAD_METHOD_F, &v);
  std::string error;
  ASSERT_TRUE(DecodePortInfoExtended(m, &error)) << error;
  std::uint8_t* data = m.data() + IB_SMP_DATA_OFFS;
  mad_set_field(data, 0, IB_PORT_EXT_CAPMASK_F, 1);  // IsFECModeSupported
  mad_set_field(data, 0, IB_PORT_EXT_FEC_MODE_ACTIVE_F, 2);  // RS-FEC
  const auto ext = DecodePortInfoExtended(m, &error);
  ASSERT_TRUE(ext) << error;
  ASSERT_EQ(ext->fec_mode_active, 2);
  EXPECT_EQ(LayoutAfterPortInfoExtended(kExt, Pma(true), Bytes(m)),
            PescLayout::kRsFec);
  EXPECT_EQ(LayoutAfterPortInfoExtended(kExt, Pma(false), Bytes(m)),
            PescLayout::kErrorDetection);
}

}  // namespace
}  // namespace fabric::mad
