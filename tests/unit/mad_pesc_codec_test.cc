// sources/mad/codec's PortExtendedSpeedsCounters part: PMA ClassPortInfo,
// PortInfoExtended and PESC (attribute 0x1F) in both layouts, decoded from
// MADs that libibmad's mad_encode_field builds field by field (an
// independent implementation of the IBA layouts: the decoder reads through
// libibmad too, so these tests also pin which field each struct member is),
// plus the layout decision perfquery -T makes, and bad input.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <cstring>
#include <random>

#include "sources/mad/codec.h"

namespace fabric::mad {
namespace {

// A GetResp header built with libibmad's header fields.
Mad Response(int mgmt_class, std::uint16_t attr, std::uint32_t status = 0) {
  Mad m{};
  std::uint32_t v = 1;
  mad_encode_field(m.data(), IB_MAD_BASEVER_F, &v);
  mad_encode_field(m.data(), IB_MAD_CLASSVER_F, &v);
  v = static_cast<std::uint32_t>(mgmt_class);
  mad_encode_field(m.data(), IB_MAD_MGMTCLASS_F, &v);
  v = 1;
  mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
  v = IB_MAD_METHOD_GET;
  mad_encode_field(m.data(), IB_MAD_METHOD_F, &v);
  v = attr;
  mad_encode_field(m.data(), IB_MAD_ATTRID_F, &v);
  mad_encode_field(m.data(), IB_MAD_STATUS_F, &status);
  return m;
}

void Put(Mad& m, int offs, MAD_FIELDS f, std::uint32_t value) {
  mad_encode_field(m.data() + offs, f, &value);
}

MAD_FIELDS Lane(MAD_FIELDS lane0, int l) {
  return static_cast<MAD_FIELDS>(static_cast<int>(lane0) + l);
}

TEST(MadPescCodec, RequestsAreGetsOfTheRightAttribute) {
  const Mad cpi = PmaClassPortInfoGet();
  EXPECT_EQ(mad_get_field(const_cast<std::uint8_t*>(cpi.data()), 0,
                          IB_MAD_MGMTCLASS_F),
            static_cast<unsigned>(IB_PERFORMANCE_CLASS));
  EXPECT_EQ(
      mad_get_field(const_cast<std::uint8_t*>(cpi.data()), 0, IB_MAD_METHOD_F),
      static_cast<unsigned>(IB_MAD_METHOD_GET));
  EXPECT_EQ(
      mad_get_field(const_cast<std::uint8_t*>(cpi.data()), 0, IB_MAD_ATTRID_F),
      static_cast<unsigned>(CLASS_PORT_INFO));

  Mad pesc = PescGet(37);
  EXPECT_EQ(mad_get_field(pesc.data(), 0, IB_MAD_MGMTCLASS_F),
            static_cast<unsigned>(IB_PERFORMANCE_CLASS));
  EXPECT_EQ(mad_get_field(pesc.data(), 0, IB_MAD_METHOD_F),
            static_cast<unsigned>(IB_MAD_METHOD_GET));
  EXPECT_EQ(mad_get_field(pesc.data(), 0, IB_MAD_ATTRID_F),
            static_cast<unsigned>(IB_GSI_PORT_EXT_SPEEDS_COUNTERS));
  EXPECT_EQ(
      mad_get_field(pesc.data() + IB_PC_DATA_OFFS, 0, IB_PESC_PORT_SELECT_F),
      37u);
  // A Get, so CounterSelect (meaningful only in a Set, which resets) is 0.
  EXPECT_EQ(mad_get_field64(pesc.data() + IB_PC_DATA_OFFS, 0,
                            IB_PESC_COUNTER_SELECT_F),
            0u);
}

TEST(MadPescCodec, DecodesClassPortInfoAsPerfqueryReadsIt) {
  Mad m = Response(IB_PERFORMANCE_CLASS, CLASS_PORT_INFO);
  // AllPortSelect, IsExtendedWidthSupported, IsPMRSFECCountersSupported.
  Put(m, IB_PC_DATA_OFFS, IB_CPI_CAPMASK_F, 0x4300);
  Put(m, IB_PC_DATA_OFFS, IB_CPI_CAPMASK2_F, 0x2);  // IsAddlPortCtrsExt
  std::string error;
  auto c = DecodePmaClassPortInfo(m, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->capability_mask, 0x4300);
  EXPECT_EQ(c->capability_mask2, 0x2u);
  EXPECT_TRUE(c->RsFecCountersSupported());
  // perfquery.c reads the raw bytes: CapabilityMask at data+2 (network
  // order), CapabilityMask2 the top 27 bits of data+4.
  std::uint16_t raw16;
  std::memcpy(&raw16, m.data() + IB_PC_DATA_OFFS + 2, 2);
  EXPECT_EQ(ntohs(raw16), c->capability_mask);
  std::uint32_t raw32;
  std::memcpy(&raw32, m.data() + IB_PC_DATA_OFFS + 4, 4);
  EXPECT_EQ(ntohl(raw32) >> 5, c->capability_mask2);

  Put(m, IB_PC_DATA_OFFS, IB_CPI_CAPMASK_F, 0x0300);
  c = DecodePmaClassPortInfo(m, &error);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->RsFecCountersSupported());
}

TEST(MadPescCodec, DecodesPortInfoExtendedAndCapabilityMask2) {
  Mad ext = Response(IB_SMI_CLASS, IB_ATTR_PORT_INFO_EXT);
  Put(ext, IB_SMP_DATA_OFFS, IB_PORT_EXT_CAPMASK_F, 1);
  Put(ext, IB_SMP_DATA_OFFS, IB_PORT_EXT_FEC_MODE_ACTIVE_F, 2);
  std::string error;
  auto e = DecodePortInfoExtended(ext, &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->capability_mask, 1u);
  EXPECT_EQ(e->fec_mode_active, 2);

  Mad pi = Response(IB_SMI_CLASS, IB_ATTR_PORT_INFO);
  Put(pi, IB_SMP_DATA_OFFS, IB_PORT_CAPMASK2_F, 0x0002);
  auto cm2 = DecodePortInfoCapabilityMask2(pi, &error);
  ASSERT_TRUE(cm2) << error;
  EXPECT_EQ(*cm2, 0x0002);
}

TEST(MadPescCodec, ChoosesTheLayoutAsPerfqueryDoes) {
  const std::uint32_t ext_speeds = kCapabilityHasExtendedSpeeds;
  PmaClassPortInfo rsfec_pma{.capability_mask = 1u << 14};
  PmaClassPortInfo plain_pma{.capability_mask = 1u << 9};
  PortInfoExtended rs{.capability_mask = 1, .fec_mode_active = 2};
  PortInfoExtended ll_rs{.capability_mask = 1, .fec_mode_active = 3};
  PortInfoExtended firecode{.capability_mask = 1, .fec_mode_active = 1};
  PortInfoExtended unsupported{.capability_mask = 0, .fec_mode_active = 2};

  // No IsExtendedSpeedsSupported: no PESC at all, whatever the PMA says.
  EXPECT_EQ(ChoosePescLayout(0, rsfec_pma, rs), PescLayout::kNone);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, rsfec_pma, rs), PescLayout::kRsFec);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, rsfec_pma, ll_rs), PescLayout::kRsFec);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, rsfec_pma, firecode),
            PescLayout::kErrorDetection);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, rsfec_pma, unsupported),
            PescLayout::kErrorDetection);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, rsfec_pma, std::nullopt),
            PescLayout::kErrorDetection);
  EXPECT_EQ(ChoosePescLayout(ext_speeds, plain_pma, rs),
            PescLayout::kErrorDetection);

  const std::uint32_t with_cm2 = ext_speeds | kCapabilityHasCapabilityMask2;
  EXPECT_TRUE(PescNeedsPortInfoExtended(with_cm2, kCapability2PortInfoExtended,
                                        rsfec_pma));
  EXPECT_FALSE(PescNeedsPortInfoExtended(with_cm2, kCapability2PortInfoExtended,
                                         plain_pma));
  EXPECT_FALSE(PescNeedsPortInfoExtended(with_cm2, 0, rsfec_pma));
  EXPECT_FALSE(PescNeedsPortInfoExtended(
      ext_speeds, kCapability2PortInfoExtended, rsfec_pma));
  EXPECT_FALSE(PescNeedsPortInfoExtended(
      kCapabilityHasCapabilityMask2, kCapability2PortInfoExtended, rsfec_pma));
}

TEST(MadPescCodec, DecodesTheErrorDetectionLayoutFieldByField) {
  Mad m = Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_EXT_SPEEDS_COUNTERS);
  const int o = IB_PC_DATA_OFFS;
  Put(m, o, IB_PESC_PORT_SELECT_F, 5);
  std::uint64_t select = 0x0123456789abcdefULL;
  mad_encode_field(m.data() + o, IB_PESC_COUNTER_SELECT_F, &select);
  Put(m, o, IB_PESC_SYNC_HDR_ERR_CTR_F, 0x1234);
  Put(m, o, IB_PESC_UNK_BLOCK_CTR_F, 0x2345);
  for (int l = 0; l < kPescLanes; ++l) {
    Put(m, o, Lane(IB_PESC_ERR_DET_CTR_LANE0_F, l), 0x100 + l);
    Put(m, o, Lane(IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F, l), 0x10000000u + l);
    Put(m, o, Lane(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F, l), 0x20000000u + l);
  }
  std::string error;
  auto c =
      DecodePortExtendedSpeedsCounters(m, PescLayout::kErrorDetection, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->layout, PescLayout::kErrorDetection);
  EXPECT_EQ(c->port_select, 5);
  EXPECT_EQ(c->counter_select, select);
  EXPECT_EQ(c->sync_header_errors, 0x1234u);
  EXPECT_EQ(c->unknown_blocks, 0x2345u);
  for (int l = 0; l < kPescLanes; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(c->error_detection[l], 0x100u + l);
    EXPECT_EQ(c->fec_correctable_blocks[l], 0x10000000u + l);
    EXPECT_EQ(c->fec_uncorrectable_blocks[l], 0x20000000u + l);
    EXPECT_EQ(c->fec_corrected_symbols[l], 0u);  // the other layout's
  }
  EXPECT_TRUE(c->saturated.empty());

  // Saturated counters are named as libibmad names them.
  Put(m, o, Lane(IB_PESC_ERR_DET_CTR_LANE0_F, 3), 0xffff);
  Put(m, o, Lane(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F, 11), 0xffffffffu);
  c = DecodePortExtendedSpeedsCounters(m, PescLayout::kErrorDetection, &error);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->saturated,
            (std::vector<std::string>{"ErrorDetectionCounterLane3",
                                      "FECUncorrectableBlockCtrLane11"}));
}

TEST(MadPescCodec, DecodesTheRsFecLayoutFieldByField) {
  Mad m = Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_EXT_SPEEDS_COUNTERS);
  const int o = IB_PC_DATA_OFFS;
  Put(m, o, IB_PESC_RSFEC_PORT_SELECT_F, 200);
  std::uint64_t select = 0xfedcba9876543210ULL;
  mad_encode_field(m.data() + o, IB_PESC_RSFEC_COUNTER_SELECT_F, &select);
  Put(m, o, IB_PESC_RSFEC_SYNC_HDR_ERR_CTR_F, 7);
  Put(m, o, IB_PESC_RSFEC_UNK_BLOCK_CTR_F, 8);
  for (int l = 0; l < kPescLanes; ++l) {
    Put(m, o, Lane(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F, l),
        0xa0000000u + l);
  }
  Put(m, o, IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F, 0x11111111);
  Put(m, o, IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F, 0x22222222);
  Put(m, o, IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F, 0x33333333);
  std::string error;
  auto c = DecodePortExtendedSpeedsCounters(m, PescLayout::kRsFec, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->layout, PescLayout::kRsFec);
  EXPECT_EQ(c->port_select, 200);
  EXPECT_EQ(c->counter_select, select);
  EXPECT_EQ(c->sync_header_errors, 7u);
  EXPECT_EQ(c->unknown_blocks, 8u);
  for (int l = 0; l < kPescLanes; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(c->fec_corrected_symbols[l], 0xa0000000u + l);
    EXPECT_EQ(c->error_detection[l], 0u);  // the other layout's
    EXPECT_EQ(c->fec_correctable_blocks[l], 0u);
  }
  EXPECT_EQ(c->port_fec_correctable_blocks, 0x11111111u);
  EXPECT_EQ(c->port_fec_uncorrectable_blocks, 0x22222222u);
  EXPECT_EQ(c->port_fec_corrected_symbols, 0x33333333u);
  EXPECT_TRUE(c->saturated.empty());

  Put(m, o, IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F, 0xffffffffu);
  c = DecodePortExtendedSpeedsCounters(m, PescLayout::kRsFec, &error);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->saturated,
            (std::vector<std::string>{"PortFECUncorrectableBlockCtr"}));
}

TEST(MadPescCodec, TheLayoutsDifferWhereTheStandardSaysTheyDo) {
  // The same bytes read in the two layouts: the header fields agree, the
  // RS-FEC per-lane symbol counters sit where the original layout has its
  // correctable-block counters.
  Mad m = Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_EXT_SPEEDS_COUNTERS);
  Put(m, IB_PC_DATA_OFFS, IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F, 99);
  Put(m, IB_PC_DATA_OFFS, IB_PESC_SYNC_HDR_ERR_CTR_F, 3);
  std::string error;
  auto a =
      DecodePortExtendedSpeedsCounters(m, PescLayout::kErrorDetection, &error);
  auto b = DecodePortExtendedSpeedsCounters(m, PescLayout::kRsFec, &error);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->sync_header_errors, b->sync_header_errors);
  EXPECT_EQ(a->fec_correctable_blocks[0], 99u);
  EXPECT_EQ(b->fec_corrected_symbols[0], 99u);
}

TEST(MadPescCodec, RejectsBadAnswersAndSurvivesGarbage) {
  std::string error;
  Mad ok = Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_EXT_SPEEDS_COUNTERS);
  EXPECT_FALSE(DecodePortExtendedSpeedsCounters(ok, PescLayout::kNone, &error));
  EXPECT_FALSE(error.empty());

  error.clear();
  EXPECT_FALSE(DecodePortExtendedSpeedsCounters(Bytes(ok.data(), 100),
                                                PescLayout::kRsFec, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  // Unsupported attribute: the PMA answers with status 0x0C (IBA 13.4.7).
  Mad unsupported =
      Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_EXT_SPEEDS_COUNTERS, 0x0c);
  error.clear();
  EXPECT_FALSE(DecodePortExtendedSpeedsCounters(
      unsupported, PescLayout::kErrorDetection, &error));
  EXPECT_NE(error.find("unsupported"), std::string::npos) << error;

  Mad wrong = Response(IB_PERFORMANCE_CLASS, IB_GSI_PORT_COUNTERS);
  EXPECT_FALSE(DecodePortExtendedSpeedsCounters(
      wrong, PescLayout::kErrorDetection, &error));
  EXPECT_FALSE(DecodePmaClassPortInfo(wrong, &error));
  Mad smp = Response(IB_SMI_CLASS, CLASS_PORT_INFO);
  EXPECT_FALSE(DecodePmaClassPortInfo(smp, &error));
  EXPECT_FALSE(DecodePortInfoExtended(wrong, &error));
  EXPECT_FALSE(DecodePortInfoCapabilityMask2(wrong, &error));

  std::mt19937 rng(28);
  for (int i = 0; i < 2000; ++i) {
    Mad g{};
    for (auto& b : g) b = static_cast<std::uint8_t>(rng());
    const std::size_t n = rng() % (g.size() + 1);
    Bytes in(g.data(), n);
    DecodePortExtendedSpeedsCounters(in, PescLayout::kRsFec, &error);
    DecodePortExtendedSpeedsCounters(in, PescLayout::kErrorDetection, &error);
    DecodePmaClassPortInfo(in, &error);
    DecodePortInfoExtended(in, &error);
    DecodePortInfoCapabilityMask2(in, &error);
  }
}

}  // namespace
}  // namespace fabric::mad
