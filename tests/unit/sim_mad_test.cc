// The simulator's MAD view, exercised exactly as a collector would: build
// requests with opensm's IBA wire structs, send them through the
// MadTransport interface, decode the responses with the same structs.
#include <gtest/gtest.h>
#include <iba/ib_types.h>

#include <cstring>

#include "simulator/mad.h"
#include "simulator/model.h"
#include "sources/mad/mad_transport.h"

namespace fabric::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Mad Request(std::uint8_t mgmt_class, ib_net16_t attr, std::uint32_t attr_mod,
            std::uint8_t port_select = 0,
            std::uint8_t method = IB_MAD_METHOD_GET) {
  Mad m{};
  auto* h = reinterpret_cast<ib_mad_t*>(m.data());
  h->base_ver = 1;
  h->mgmt_class = mgmt_class;
  h->class_ver = mgmt_class == IB_MCLASS_PERF ? 1 : 1;
  h->method = method;
  h->trans_id = cl_hton64(0x1234);
  h->attr_id = attr;
  h->attr_mod = cl_hton32(attr_mod);
  if (mgmt_class == IB_MCLASS_PERF) {
    reinterpret_cast<ib_perfmgt_mad_t*>(m.data())->data[1] = port_select;
  }
  return m;
}

// One request through the transport's engine, as a collector sends it.
MadResult Get(MadTransport& mad, std::uint16_t dlid, const Mad& request) {
  MadOptions options;
  options.timeout = milliseconds(20);
  options.retries = 0;
  return mad.Send({.dlid = dlid, .mad = request}, options);
}

template <typename T>
T SmpData(const MadResult& r) {
  T t;
  std::memcpy(&t, reinterpret_cast<const ib_smp_t*>(r->data())->data,
              sizeof(T));
  return t;
}

template <typename T>
T PerfData(const MadResult& r) {
  T t;
  std::memcpy(&t, reinterpret_cast<const ib_perfmgt_mad_t*>(r->data())->data,
              sizeof(T));
  return t;
}

const ib_mad_t& Header(const MadResult& r) {
  return *reinterpret_cast<const ib_mad_t*>(r->data());
}

SimConfig Config(Scenario s, Duration start = Duration(0)) {
  SimConfig c;
  c.hosts = 2;
  c.timeline = SingleScenario(s);
  c.timeline.events[0].start = start;
  return c;
}

void Advance(Cluster& c, Duration d) {
  const Duration end = c.now() + d;
  while (c.now() < end) c.Step();
}

TEST(SimMad, SmInfoFromTheMasterAndFailover) {
  Cluster c(Config(Scenario::kSmFailover, seconds(2)));
  auto mad = MakeSimMadTransport(c);
  const Mad req = Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, 0);
  Advance(c, seconds(1));
  auto r = Get(*mad, 1, req);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(Header(r).method, IB_MAD_METHOD_GET_RESP);
  EXPECT_EQ(Header(r).status, 0);
  auto si = SmpData<ib_sm_info_t>(r);
  EXPECT_EQ(cl_ntoh64(si.guid), c.sms()[0].guid);
  EXPECT_EQ(si.pri_state & 0x0f, 3);  // MASTER
  EXPECT_EQ(si.pri_state >> 4, 15);
  const auto count = cl_ntoh32(si.act_count);
  Advance(c, milliseconds(500));
  r = Get(*mad, 1, req);
  EXPECT_GT(cl_ntoh32(SmpData<ib_sm_info_t>(r).act_count), count);
  // Standby at LID 2.
  r = Get(*mad, 2, req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(SmpData<ib_sm_info_t>(r).pri_state & 0x0f, 2);  // STANDBY

  Advance(c, seconds(3));  // t = 4.5 s: master died at 2 s, takeover at 4 s
  r = Get(*mad, 1, req);
  EXPECT_EQ(r.error(), std::errc::timed_out);
  r = Get(*mad, 2, req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(SmpData<ib_sm_info_t>(r).pri_state & 0x0f, 3);
  // Every port now names the new master.
  r = Get(*mad, c.FindPort(1, "mlx5_7")->lid,
          Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_PORT_INFO, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cl_ntoh16(SmpData<ib_port_info_t>(r).master_sm_base_lid), 2);
}

TEST(SimMad, SmHungKeepsAnsweringWithAFrozenCount) {
  Cluster c(Config(Scenario::kSmHung, seconds(1)));
  auto mad = MakeSimMadTransport(c);
  const Mad req = Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, 0);
  Advance(c, seconds(2));
  auto a = Get(*mad, 1, req);
  Advance(c, seconds(2));
  auto b = Get(*mad, 1, req);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(SmpData<ib_sm_info_t>(a).act_count,
            SmpData<ib_sm_info_t>(b).act_count);
}

TEST(SimMad, NodeInfoAndPortInfo) {
  Cluster c(Config(Scenario::kLinkDegraded));
  c.Step();
  auto mad = MakeSimMadTransport(c);
  const Port* p = c.FindPort(1, "mlx5_5");
  auto r =
      Get(*mad, p->lid, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_INFO, 0));
  ASSERT_TRUE(r.ok());
  auto ni = SmpData<ib_node_info_t>(r);
  EXPECT_EQ(ni.node_type, IB_NODE_TYPE_CA);
  EXPECT_EQ(ni.num_ports, 1);
  EXPECT_EQ(cl_ntoh64(ni.node_guid), p->guid);
  EXPECT_EQ(cl_ntoh16(ni.device_id), 0x1021);  // ConnectX-7 = MT4129
  EXPECT_EQ(cl_ntoh32(ni.port_num_vendor_id) & 0xffffff, 0x02c9u);

  r = Get(*mad, p->lid, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_PORT_INFO, 1));
  ASSERT_TRUE(r.ok());
  auto pi = SmpData<ib_port_info_t>(r);
  EXPECT_EQ(cl_ntoh16(pi.base_lid), p->lid);
  EXPECT_EQ(cl_ntoh16(pi.master_sm_base_lid), 1);
  EXPECT_EQ(pi.state_info1 & 0x0f, IB_LINK_ACTIVE);
  EXPECT_EQ(pi.state_info2 >> 4, 5);   // LinkUp
  EXPECT_EQ(pi.link_width_active, 2);  // not degraded: host 1 is not the target
  const Port* degraded = c.FindPort(0, "mlx5_5");
  r = Get(*mad, degraded->lid,
          Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_PORT_INFO, 0));
  EXPECT_EQ(SmpData<ib_port_info_t>(r).link_width_active, 16);  // 2X

  // A switch: ib-leaf0 (LID 2), port 1 faces host 0.
  r = Get(*mad, 2, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_INFO, 0));
  EXPECT_EQ(SmpData<ib_node_info_t>(r).node_type, IB_NODE_TYPE_SWITCH);
  EXPECT_EQ(SmpData<ib_node_info_t>(r).num_ports, 3);  // 2 hosts + uplink
}

TEST(SimMad, PortCountersMatchTheModel) {
  Cluster c(Config(Scenario::kCongestionHotspot));
  SimConfig sat = Config(Scenario::kCounterSaturation);
  Advance(c, seconds(3));
  auto mad = MakeSimMadTransport(c);
  const Port* p = c.FindPort(0, "mlx5_0");
  auto r = Get(*mad, p->lid,
               Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS_EXT, 0, 1));
  ASSERT_TRUE(r.ok());
  auto e = PerfData<ib_port_counters_ext_t>(r);
  EXPECT_EQ(e.port_select, 1);
  EXPECT_EQ(cl_ntoh64(e.xmit_data), p->counters.Get(Ctr::kPortXmitData));
  EXPECT_EQ(cl_ntoh64(e.rcv_data), p->counters.Get(Ctr::kPortRcvData));
  EXPECT_EQ(cl_ntoh64(e.xmit_data) * 4, p->tx_bytes);
  EXPECT_EQ(cl_ntoh64(e.xmit_wait), p->counters.Get(Ctr::kPortXmitWait));
  EXPECT_GT(cl_ntoh64(e.xmit_wait), 0u);

  // The 32-bit PortCounters data field saturates (3 s of traffic > 2^32
  // words); xmit_wait fits.
  r = Get(*mad, p->lid, Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, 0, 1));
  ASSERT_TRUE(r.ok());
  auto pc = PerfData<ib_port_counters_t>(r);
  EXPECT_EQ(cl_ntoh32(pc.xmit_data), 0xffffffffu);
  EXPECT_EQ(cl_ntoh32(pc.xmit_wait), p->counters.Get(Ctr::kPortXmitWait));

  // Switch port counters: the hot egress port (ib-leaf0 port 2 -> host 1)
  // carried exactly what host 1 mlx5_0 received.
  r = Get(*mad, 2, Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS_EXT, 0, 2));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cl_ntoh64(PerfData<ib_port_counters_ext_t>(r).xmit_data),
            c.FindPort(1, "mlx5_0")->counters.Get(Ctr::kPortRcvData));

  // Saturated error fields come through at their widths.
  Cluster s(sat);
  Advance(s, seconds(2));
  auto smad = MakeSimMadTransport(s);
  r = Get(*smad, s.FindPort(0, "mlx5_6")->lid,
          Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, 0, 1));
  pc = PerfData<ib_port_counters_t>(r);
  EXPECT_EQ(cl_ntoh16(pc.symbol_err_cnt), 0xffff);
  EXPECT_EQ(pc.link_downed, 0xff);
  EXPECT_EQ(PC_LINK_INT(pc.link_int_buffer_overrun), 15);
  EXPECT_EQ(PC_BUF_OVERRUN(pc.link_int_buffer_overrun), 15);
}

TEST(SimMad, ErrorsAndRefusals) {
  Cluster c(Config(Scenario::kSteady));
  auto mad = MakeSimMadTransport(c);
  // Nobody at LID 999: no answer, so the engine times out.
  auto r =
      Get(*mad, 999, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_INFO, 0));
  EXPECT_EQ(r.error(), std::errc::timed_out);
  EXPECT_EQ(
      AnswerMad(c, 999, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_INFO, 0))
          .error(),
      std::errc::host_unreachable);
  // A Set never leaves the engine; the simulator refuses one too.
  const Mad set =
      Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, 0, 1, IB_MAD_METHOD_SET);
  EXPECT_EQ(Get(*mad, 1, set).error(), std::errc::operation_not_permitted);
  r = AnswerMad(c, 1, set);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Header(r).status, IB_MAD_STATUS_UNSUP_METHOD);
  // SMInfo at a LID without an SM, unknown attribute, bad version.
  r = Get(*mad, c.FindPort(0, "mlx5_0")->lid,
          Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_SM_INFO, 0));
  EXPECT_EQ(Header(r).status, IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  r = Get(*mad, 1, Request(IB_MCLASS_SUBN_LID, CL_HTON16(0x0099), 0));
  EXPECT_EQ(Header(r).status, IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  Mad bad{};
  EXPECT_EQ(AnswerMad(c, 1, bad).error(), std::errc::invalid_argument);
  EXPECT_EQ(Get(*mad, 1, bad).error(), std::errc::operation_not_permitted);
  // A switch port that does not exist.
  r = Get(*mad, 2, Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS, 0, 77));
  EXPECT_EQ(Header(r).status, IB_MAD_STATUS_INVALID_FIELD);
}

TEST(SimMad, NodeDescription) {
  Cluster c(Config(Scenario::kSteady));
  auto mad = MakeSimMadTransport(c);
  auto r = Get(*mad, c.FindPort(1, "mlx5_4")->lid,
               Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_DESC, 0));
  ASSERT_TRUE(r.ok());
  EXPECT_STREQ(reinterpret_cast<const char*>(
                   reinterpret_cast<const ib_smp_t*>(r->data())->data),
               "host1 mlx5_4");
  r = Get(*mad, 2, Request(IB_MCLASS_SUBN_LID, IB_MAD_ATTR_NODE_DESC, 0));
  EXPECT_STREQ(reinterpret_cast<const char*>(
                   reinterpret_cast<const ib_smp_t*>(r->data())->data),
               "ib-leaf0");
}

// Many MADs at once through the engine: every one answered and matched to
// its own request; a per-node limit below the sender's drops the excess,
// which comes back as retries, never as another request's answer.
TEST(SimMad, ManyInFlightWithServiceTimeAndNodeLimit) {
  Cluster c(Config(Scenario::kCongestionHotspot));
  Advance(c, seconds(1));
  for (int node_limit : {0, 2}) {
    auto mad =
        MakeSimMadTransport(c, {.service_time = std::chrono::microseconds(200),
                                .per_node_limit = node_limit});
    std::deque<MadRequest> pending;
    for (int port = 1; port <= 3; ++port) {
      for (int i = 0; i < 10; ++i) {
        pending.push_back(
            {.dlid = 2,
             .mad = Request(IB_MCLASS_PERF, IB_MAD_ATTR_PORT_CNTRS_EXT, 0,
                            static_cast<std::uint8_t>(port)),
             .cookie = static_cast<std::uint64_t>(port)});
      }
    }
    MadOptions options;
    options.timeout = milliseconds(5);
    options.retries = 100;
    options.max_per_destination = 4;
    int answered = 0;
    const MadStats stats = mad->Run(
        pending, options, [&](const MadRequest& q, const MadResult& r) {
          ASSERT_TRUE(r.ok()) << r.error().message();
          const auto e = PerfData<ib_port_counters_ext_t>(r);
          EXPECT_EQ(e.port_select, q.cookie);
          EXPECT_EQ(cl_ntoh64(e.xmit_data),
                    c.FindPortByLid(2, static_cast<int>(q.cookie))
                        ->counters.Get(Ctr::kPortXmitData));
          ++answered;
        });
    EXPECT_EQ(answered, 30);
    EXPECT_EQ(stats.ok, 30u);
    EXPECT_EQ(stats.timeouts, 0u);
    if (node_limit == 0) {
      EXPECT_EQ(stats.retries, 0u);
    } else {
      EXPECT_GT(stats.retries, 0u);  // 4 in flight > 2 accepted
    }
  }
}

}  // namespace
}  // namespace fabric::sim
