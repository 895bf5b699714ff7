// make_seeds OUT_DIR: writes the binary seed inputs of the fuzz targets
// into OUT_DIR/<name>/ (fuzz/corpus/ in the tree): MAD responses answered
// by the fabric simulator (the same bytes the MadTransport hands the
// decoders), RDMA and DCB netlink replies laid out as the kernel sends them
// (<rdma/rdma_netlink.h>, <linux/dcbnl.h>), and one OpenSM plugin datagram
// per event (osm/event_wire.h's encoder). Text seeds are plain files in the
// tree, written by hand or copied from the recorded fixtures.
//
// Thread-safety: a single-threaded tool.
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "osm/event_wire.h"
#include "simulator/mad.h"
#include "simulator/model.h"
#include "simulator/timeline.h"
#include "sources/mad/codec.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

void Write(const fs::path& dir, const std::string& name, const Bytes& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Netlink message builder: header, fixed part, attributes (nested ones by
// Open/Close), each padded to 4 bytes as the kernel does.
class Netlink {
 public:
  explicit Netlink(std::uint16_t type) : buf_(NLMSG_HDRLEN, 0), type_(type) {}
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    while (buf_.size() % 4) buf_.push_back(0);
  }
  std::size_t Open(std::uint16_t type) {
    const std::size_t at = buf_.size();
    nlattr a{0, static_cast<std::uint16_t>(type | NLA_F_NESTED)};
    Raw(&a, sizeof(a));
    return at;
  }
  void Close(std::size_t at) {
    const auto len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
  }
  void Attr(std::uint16_t type, const void* p, std::size_t n) {
    nlattr a{static_cast<std::uint16_t>(NLA_HDRLEN + n), type};
    Raw(&a, sizeof(a));
    Raw(p, n);
  }
  void Str(std::uint16_t type, const std::string& s) {
    Attr(type, s.c_str(), s.size() + 1);
  }
  void U32(std::uint16_t type, std::uint32_t v) { Attr(type, &v, 4); }
  void U64(std::uint16_t type, std::uint64_t v) { Attr(type, &v, 8); }
  Bytes Finish(std::uint16_t flags = 0) {
    nlmsghdr h{};
    h.nlmsg_len = static_cast<std::uint32_t>(buf_.size());
    h.nlmsg_type = type_;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = 1;
    std::memcpy(buf_.data(), &h, sizeof(h));
    return buf_;
  }

 private:
  Bytes buf_;
  std::uint16_t type_;
};

Bytes Done() { return Netlink(NLMSG_DONE).Finish(); }

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

void RdmaSeeds(const fs::path& dir) {
  const auto get = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
  auto device = [&](std::uint32_t index, const std::string& name,
                    std::uint64_t guid) {
    Netlink m(get);
    m.U32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
    m.Str(RDMA_NLDEV_ATTR_DEV_NAME, name);
    m.U64(RDMA_NLDEV_ATTR_NODE_GUID, guid);
    return m.Finish(NLM_F_MULTI);
  };
  Write(dir, "device-dump",
        Concat({device(0, "mlx5_0", 0xb8cef60300a1b2c4ULL),
                device(1, "mlx5_bond_0", 0x0c42a10300d1e2f0ULL), Done()}));

  Netlink stat(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET));
  stat.U32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
  stat.U32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  const auto counters = stat.Open(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  const std::pair<const char*, std::uint64_t> entries[] = {
      {"np_cnp_sent", 1234},
      {"rp_cnp_handled", 1200},
      {"np_ecn_marked_roce_packets", 5678},
      {"out_of_sequence", 3}};
  for (const auto& [name, value] : entries) {
    const auto entry = stat.Open(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
    stat.Str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name);
    stat.U64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value);
    stat.Close(entry);
  }
  stat.Close(counters);
  Write(dir, "stat-reply", stat.Finish());

  // An error answer (EOPNOTSUPP), as for a device without statistics.
  Netlink err(NLMSG_ERROR);
  nlmsgerr e{};
  e.error = -95;
  err.Raw(&e, sizeof(e));
  Write(dir, "error-reply", err.Finish());
}

void DcbSeeds(const fs::path& dir) {
  Netlink m(RTM_GETDCB);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = DCB_CMD_IEEE_GET;
  m.Raw(&d, sizeof(d));
  m.Str(DCB_ATTR_IFNAME, "bond0");
  const auto ieee = m.Open(DCB_ATTR_IEEE);
  ieee_ets ets{};
  ets.willing = 0;
  ets.ets_cap = 8;
  for (int i = 0; i < 8; ++i) ets.prio_tc[i] = i == 3 ? 3 : 0;
  ets.tc_tx_bw[0] = 50;
  ets.tc_tx_bw[3] = 50;
  ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
  ets.tc_tsa[3] = IEEE_8021QAZ_TSA_ETS;
  m.Attr(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  pfc.delay = 32;
  pfc.requests[3] = 10;
  pfc.indications[3] = 7;
  m.Attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  const auto apps = m.Open(DCB_ATTR_IEEE_APP_TABLE);
  for (std::uint16_t dscp : {24, 26, 48}) {
    dcb_app app{};
    app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
    app.protocol = dscp;
    app.priority = dscp == 48 ? 6 : 3;
    m.Attr(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  }
  m.Close(apps);
  m.Close(ieee);
  const std::uint8_t dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  m.Attr(DCB_ATTR_DCBX, &dcbx, 1);
  Write(dir, "ieee-reply", m.Finish());
}

void MadSeeds(const fs::path& dir) {
  using namespace fabric;
  sim::SimConfig config;
  config.hosts = 2;
  config.timeline = sim::SingleScenario(sim::Scenario::kSteady);
  sim::Cluster cluster(config);
  for (int i = 0; i < 20; ++i) cluster.Step();  // counters move
  auto transport = sim::MakeSimMadTransport(cluster);
  MadOptions options;
  options.timeout = std::chrono::milliseconds(50);
  options.retries = 0;

  const sim::Port* host = cluster.FindPort(0, "mlx5_0");
  const sim::Port* sw = nullptr;
  for (const sim::Port& p : cluster.ports()) {
    if (p.host < 0 && p.peer >= 0 && p.lid != 0 &&
        p.link_layer == sim::LinkLayer::kInfiniBand) {
      sw = &p;
    }
  }
  struct Ask {
    const char* name;
    std::uint16_t lid;
    Mad mad;
  };
  const std::uint8_t sw_port = static_cast<std::uint8_t>(sw->port_num);
  const Ask asks[] = {
      {"sminfo-master", cluster.master_sm().lid,
       mad::SmpGet(mad::kAttrSmInfo, 0)},
      {"nodeinfo-hca", host->lid, mad::SmpGet(mad::kAttrNodeInfo, 0)},
      {"nodedesc-hca", host->lid, mad::SmpGet(mad::kAttrNodeDescription, 0)},
      {"portinfo-hca", host->lid, mad::SmpGet(mad::kAttrPortInfo, 1)},
      {"nodeinfo-switch", sw->lid, mad::SmpGet(mad::kAttrNodeInfo, 0)},
      {"nodedesc-switch", sw->lid, mad::SmpGet(mad::kAttrNodeDescription, 0)},
      {"portinfo-switch", sw->lid, mad::SmpGet(mad::kAttrPortInfo, sw_port)},
      {"portcounters-hca", host->lid, mad::PerfGet(mad::kAttrPortCounters, 1)},
      {"portcounters-switch", sw->lid,
       mad::PerfGet(mad::kAttrPortCounters, sw_port)},
      {"portcountersext-hca", host->lid,
       mad::PerfGet(mad::kAttrPortCountersExtended, 1)},
      {"portcountersext-switch", sw->lid,
       mad::PerfGet(mad::kAttrPortCountersExtended, sw_port)},
  };
  for (const Ask& ask : asks) {
    const MadResult r =
        transport->Send({.dlid = ask.lid, .mad = ask.mad}, options);
    if (!r.ok()) {
      std::fprintf(stderr, "make_seeds: %s: %s\n", ask.name,
                   r.error().message().c_str());
      std::exit(1);
    }
    Write(dir, ask.name, Bytes(r->begin(), r->end()));
  }
}

void OsmSeeds(const fs::path& dir) {
  namespace osm = fabric::osm;
  osm::PortId id;
  id.node_guid = 0x0002c90300a1b2c4ULL;
  id.port = 7;
  id.node_type = osm::NodeType::kSwitch;
  id.time_diff_s = 10;
  id.SetName("ib-leaf0", 8);
  osm::PortErrors errors{.id = id, .symbol_error = 77, .link_downed = 1};
  osm::PortData data{.id = id,
                     .xmit_data = 1 << 20,
                     .rcv_data = 1 << 19,
                     .xmit_pkts = 4096,
                     .rcv_pkts = 2048};
  osm::PortSelect select{.id = id, .xmit_wait = 500};
  osm::Trap trap{.generic = true,
                 .type = 1,
                 .trap_number = 128,
                 .producer_or_vendor = 2,
                 .issuer_lid = 3};
  osm::LftChange lft{
      .switch_guid = id.node_guid, .flags = 1, .block_num = 2, .lft_top = 64};
  for (int e = 0; e < osm::kEventCount; ++e) {
    osm::Message m;
    m.event = static_cast<osm::Event>(e);
    m.dropped = static_cast<std::uint64_t>(e);
    m.monotonic_ns = 1000000000ULL * (e + 1);
    switch (m.event) {
      case osm::Event::kPortErrors:
        m.body = errors;
        break;
      case osm::Event::kPortDataCounters:
        m.body = data;
        break;
      case osm::Event::kPortSelect:
        m.body = select;
        break;
      case osm::Event::kTrap:
        m.body = trap;
        break;
      case osm::Event::kUcastRoutingDone:
        m.body = osm::UcastRoutingDone{.flags = 1};
        break;
      case osm::Event::kLftChange:
        m.body = lft;
        break;
      default:
        break;
    }
    std::array<std::uint8_t, osm::kMaxMessageSize> out{};
    const std::size_t n = osm::EncodeEvent(m, out);
    if (n == 0) {
      std::fprintf(stderr, "make_seeds: cannot encode event %d\n", e);
      std::exit(1);
    }
    Write(dir, std::string(osm::EventName(m.event)),
          Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  RdmaSeeds(out / "rdma_netlink");
  DcbSeeds(out / "dcb_netlink");
  MadSeeds(out / "mad_codec");
  OsmSeeds(out / "osm_event_wire");
  return 0;
}
