// sources/mad/codec: requests built with libibmad checked field by field
// against opensm's independent IBA wire structs (<iba/ib_types.h>), and
// decoders fed answers built with those structs, truncated MADs, garbage and
// non-zero MAD status.
#include <gtest/gtest.h>
#include <iba/ib_types.h>

#include <cstring>
#include <random>

#include "sources/mad/codec.h"

namespace fabric::mad {
namespace {

template <typename T>
Mad Response(std::uint8_t mgmt_class, ib_net16_t attr, const T& payload,
             ib_net16_t status = 0) {
  Mad m{};
  auto* smp = reinterpret_cast<ib_smp_t*>(m.data());
  smp->base_ver = 1;
  smp->mgmt_class = mgmt_class;
  smp->class_ver = 1;
  smp->method = IB_MAD_METHOD_GET_RESP;
  smp->status = status;
  smp->attr_id = attr;
  if (mgmt_class == IB_MCLASS_PERF) {
    std::memcpy(reinterpret_cast<ib_perfmgt_mad_t*>(m.data())->data, &payload,
                sizeof(T));
  } else {
    std::memcpy(smp->data, &payload, sizeof(T));
  }
  return m;
}

TEST(MadCodec, RequestsMatchTheIbaLayout) {
  const Mad lid = SmpGet(kAttrPortInfo, 7);
  const auto* h = reinterpret_cast<const ib_smp_t*>(lid.data());
  EXPECT_EQ(h->base_ver, 1);
  EXPECT_EQ(h->mgmt_class, IB_MCLASS_SUBN_LID);
  EXPECT_EQ(h->class_ver, 1);
  EXPECT_EQ(h->method, IB_MAD_METHOD_GET);
  EXPECT_EQ(h->attr_id, IB_MAD_ATTR_PORT_INFO);
  EXPECT_EQ(cl_ntoh32(h->attr_mod), 7u);

  const Mad dr = DrSmpGet(kAttrNodeInfo, 0, {1, 13, 2});
  const auto* d = reinterpret_cast<const ib_smp_t*>(dr.data());
  EXPECT_EQ(d->mgmt_class, IB_MCLASS_SUBN_DIR);
  EXPECT_EQ(d->hop_count, 3);
  EXPECT_EQ(d->hop_ptr, 0);
  EXPECT_EQ(d->initial_path[0], 0);
  EXPECT_EQ(d->initial_path[1], 1);
  EXPECT_EQ(d->initial_path[2], 13);
  EXPECT_EQ(d->initial_path[3], 2);
  EXPECT_EQ(d->dr_slid, 0xffff);
  EXPECT_EQ(d->dr_dlid, 0xffff);
  EXPECT_EQ(d->attr_id, IB_MAD_ATTR_NODE_INFO);

  const Mad pc = PerfGet(kAttrPortCountersExtended, 17);
  const auto* p = reinterpret_cast<const ib_perfmgt_mad_t*>(pc.data());
  EXPECT_EQ(p->header.mgmt_class, IB_MCLASS_PERF);
  EXPECT_EQ(p->header.method, IB_MAD_METHOD_GET);
  EXPECT_EQ(p->header.attr_id, IB_MAD_ATTR_PORT_CNTRS_EXT);
  ib_port_counters_ext_t ext;
  std::memcpy(&ext, p->data, sizeof(ext));
  EXPECT_EQ(ext.port_select, 17);
  EXPECT_EQ(ext.counter_select, 0);  // a Get: nothing selected to clear
}

TEST(MadCodec, DecodesSmInfoNodeInfoDescriptionPortInfo) {
  std::string error;
  ib_sm_info_t si{};
  si.guid = cl_hton64(0x0002c90300a1b2c3ULL);
  si.act_count = cl_hton32(123456);
  si.pri_state = (14 << 4) | 3;
  auto s = DecodeSmInfo(Response(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, si),
                        &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->guid, 0x0002c90300a1b2c3ULL);
  EXPECT_EQ(s->act_count, 123456u);
  EXPECT_EQ(s->priority, 14);
  EXPECT_EQ(s->state, 3);

  ib_node_info_t ni{};
  ni.base_version = 1;
  ni.node_type = IB_NODE_TYPE_SWITCH;
  ni.num_ports = 64;
  ni.node_guid = cl_hton64(0x1122334455667788ULL);
  ni.port_guid = cl_hton64(0x1122334455667789ULL);
  ni.sys_guid = cl_hton64(0x99);
  ni.port_num_vendor_id = cl_hton32((33u << 24) | 0x02c9);
  auto n = DecodeNodeInfo(
      Response(IB_MCLASS_SUBN_DIR, IB_MAD_ATTR_NODE_INFO, ni), &error);
  ASSERT_TRUE(n) << error;
  EXPECT_EQ(n->node_type, 2);
  EXPECT_EQ(n->num_ports, 64);
  EXPECT_EQ(n->node_guid, 0x1122334455667788ULL);
  EXPECT_EQ(n->port_guid, 0x1122334455667789ULL);
  EXPECT_EQ(n->system_guid, 0x99u);
  EXPECT_EQ(n->local_port, 33);

  ib_node_desc_t nd{};
  std::memcpy(nd.description, "leaf07 \x01 ", 9);
  auto desc = DecodeNodeDescription(
      Response(IB_MCLASS_SUBN_DIR, IB_MAD_ATTR_NODE_DESC, nd), &error);
  ASSERT_TRUE(desc) << error;
  EXPECT_EQ(*desc, "leaf07 ? ");  // control bytes never reach a label

  ib_port_info_t pi{};
  pi.base_lid = cl_hton16(42);
  pi.master_sm_base_lid = cl_hton16(1);
  pi.capability_mask = cl_hton32(0x0251084a);
  pi.local_port_num = 5;
  pi.state_info1 = (1 << 4) | IB_LINK_ACTIVE;
  pi.state_info2 = (5 << 4) | 2;
  auto p = DecodePortInfo(
      Response(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_PORT_INFO, pi), &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->lid, 42);
  EXPECT_EQ(p->sm_lid, 1);
  EXPECT_EQ(p->capability_mask, 0x0251084au);
  EXPECT_TRUE(p->capability_mask & kCapabilityIsSm);
  EXPECT_EQ(p->state, 4);
  EXPECT_EQ(p->phys_state, 5);
  EXPECT_EQ(p->local_port, 5);
}

TEST(MadCodec, DecodesPortCountersAtTheirWidths) {
  std::string error;
  ib_port_counters_t pc{};
  pc.symbol_err_cnt = cl_hton16(0xffff);
  pc.link_err_recover = 3;
  pc.link_downed = 0xff;
  pc.rcv_err = cl_hton16(7);
  pc.xmit_discards = cl_hton16(9);
  pc.link_int_buffer_overrun = (0xa << 4) | 0x5;
  pc.vl15_dropped = cl_hton16(11);
  pc.xmit_data = cl_hton32(0xfffffffe);
  pc.rcv_data = cl_hton32(1000);
  pc.xmit_pkts = cl_hton32(20);
  pc.rcv_pkts = cl_hton32(30);
  pc.xmit_wait = cl_hton32(40);
  auto c = DecodePortCounters(
      Response(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, pc), &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->errors.at("symbol_error"), 0xffffu);
  EXPECT_EQ(c->errors.at("link_error_recovery"), 3u);
  EXPECT_EQ(c->errors.at("link_downed"), 0xffu);
  EXPECT_EQ(c->errors.at("port_rcv_errors"), 7u);
  EXPECT_EQ(c->errors.at("port_xmit_discards"), 9u);
  EXPECT_EQ(c->errors.at("local_link_integrity_errors"), 0xau);
  EXPECT_EQ(c->errors.at("excessive_buffer_overrun_errors"), 5u);
  EXPECT_EQ(c->errors.at("VL15_dropped"), 11u);
  EXPECT_EQ(c->errors.size(), 12u);
  EXPECT_EQ(c->xmit_data, 0xfffffffeu);
  EXPECT_EQ(c->rcv_data, 1000u);
  EXPECT_EQ(c->xmit_pkts, 20u);
  EXPECT_EQ(c->rcv_pkts, 30u);
  EXPECT_EQ(c->xmit_wait, 40u);
  // At 2^width-1 (16-bit symbol_error, 8-bit link_downed): stuck.
  EXPECT_EQ(c->saturated,
            (std::vector<std::string>{"symbol_error", "link_downed"}));

  // PortXmitWait at 2^32-1 (what a switch shows after hours of
  // congestion): saturated; one below is not.
  pc = {};
  pc.xmit_wait = cl_hton32(0xffffffff);
  pc.link_int_buffer_overrun = 0xf0;  // local_link_integrity_errors 15
  c = DecodePortCounters(Response(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, pc),
                         &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->xmit_wait, 0xffffffffu);
  EXPECT_EQ(c->saturated,
            (std::vector<std::string>{"local_link_integrity_errors",
                                      "port_xmit_wait"}));
  pc.xmit_wait = cl_hton32(0xfffffffe);
  pc.link_int_buffer_overrun = 0;
  c = DecodePortCounters(Response(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, pc),
                         &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->saturated.empty());

  ib_port_counters_ext_t e{};
  e.xmit_data = cl_hton64(0x123456789abcdefULL);
  e.rcv_data = cl_hton64(2);
  e.xmit_pkts = cl_hton64(3);
  e.rcv_pkts = cl_hton64(4);
  auto x = DecodePortCountersExtended(
      Response(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS_EXT, e), &error);
  ASSERT_TRUE(x) << error;
  EXPECT_EQ(x->xmit_data, 0x123456789abcdefULL);
  EXPECT_EQ(x->rcv_data, 2u);
  EXPECT_EQ(x->xmit_pkts, 3u);
  EXPECT_EQ(x->rcv_pkts, 4u);
}

TEST(MadCodec, RejectsTruncatedWrongAndFailedAnswers) {
  std::string error;
  ib_sm_info_t si{};
  const Mad good = Response(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, si);
  EXPECT_FALSE(DecodeSmInfo(Bytes(good.data(), 100), &error));
  EXPECT_EQ(error, "truncated MAD (100 bytes)");
  EXPECT_FALSE(DecodeSmInfo(Bytes(), &error));
  EXPECT_FALSE(MadStatus(Bytes(good.data(), 10)));

  // Another attribute, a request instead of a GetResp, another class.
  EXPECT_FALSE(DecodePortInfo(good, &error));
  EXPECT_EQ(error, "unexpected attribute");
  Mad request = SmpGet(kAttrSmInfo, 0);
  EXPECT_FALSE(DecodeSmInfo(request, &error));
  EXPECT_EQ(error, "not a GetResp of the expected class");
  EXPECT_FALSE(DecodePortCounters(good, &error));

  // A non-zero MAD status (unsupported attribute), LID-routed and DR.
  Mad failed = Response(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, si,
                        IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  EXPECT_FALSE(DecodeSmInfo(failed, &error));
  EXPECT_EQ(error, "MAD status 0x000c (unsupported method/attribute)");
  Mad dr = Response(IB_MCLASS_SUBN_DIR, IB_MAD_ATTR_SM_INFO, si,
                    cl_hton16(0x8000));  // D bit only: a good answer
  EXPECT_EQ(MadStatus(dr), 0);
  EXPECT_TRUE(DecodeSmInfo(dr, &error)) << error;
  dr = Response(IB_MCLASS_SUBN_DIR, IB_MAD_ATTR_SM_INFO, si,
                cl_hton16(0x8000 | 0x001c));
  EXPECT_EQ(MadStatus(dr), 0x1c);
  EXPECT_FALSE(DecodeSmInfo(dr, &error));

  ib_node_info_t ni{};
  ni.node_type = 9;
  EXPECT_FALSE(DecodeNodeInfo(
      Response(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_INFO, ni), &error));
  EXPECT_EQ(error, "bad NodeInfo node type 9");

  // Garbage never crashes and is rejected (a random MAD is almost never a
  // well-formed GetResp of the right attribute).
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    Mad junk;
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    accepted += DecodeSmInfo(junk, &error).has_value() +
                DecodePortCounters(junk, &error).has_value() +
                DecodeNodeDescription(junk, &error).has_value();
  }
  EXPECT_EQ(accepted, 0);
}

TEST(MadCodec, GuidString) {
  EXPECT_EQ(GuidString(0x2c90300a1b2c3ULL), "0x0002c90300a1b2c3");
}

}  // namespace
}  // namespace fabric::mad
