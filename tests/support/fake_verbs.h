// FakeVerbs: an in-memory VerbsOps for the tests of the RDMA transports
// (probe/rdma_ud, benchtool/rdma_rc). It keeps every object the code under
// test creates, checks the handles it is given, records QP state
// transitions and posted work, and lets a test play the wire: deliver a UD
// datagram into a QP's next posted receive, complete sends with a chosen HCA
// timestamp, or carry RC writes-with-immediate from one QP into the
// registered memory of another (checking rkey and bounds as an HCA would).
// Devices can vanish: every call on them then fails with ENODEV.
//
// Thread-safety: every method takes one recursive lock, so two ranks on two
// threads may share a FakeVerbs; the public maps are for the test to read
// when those threads are done.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probe/verbs_ops.h"

namespace fabric::rdma::testing {

struct FakePort {
  PortAttr attr;
  std::vector<std::optional<GidEntry>> gids;  // nullopt = empty slot
};

struct FakeDevice {
  DeviceAttr attr;
  std::map<int, FakePort> ports;
  bool rt_clock = true;       // ibv_query_rt_values_ex works
  bool cq_timestamps = true;  // ibv_create_cq_ex accepts the flag
  std::uint64_t clock_cycles = 0;
  bool gone = false;  // hot-unplugged: every call fails with ENODEV
  bool open_fails = false;
};

struct FakeSend {
  std::uint64_t wr_id = 0;
  bool ud = true;
  UdSend ud_send;
  RcWriteImm write;
  std::vector<std::uint8_t> bytes;  // what the buffer held at post time
  bool completed = false;
};

struct FakeQp {
  Handle context = 0;
  Handle pd = 0;
  QpType type = QpType::kUd;
  Handle send_cq = 0;
  Handle recv_cq = 0;
  std::uint32_t qpn = 0;
  QpState state = QpState::kReset;
  std::vector<QpTransition> transitions;
  struct Recv {
    std::uint64_t wr_id;
    std::uint64_t addr;
    std::uint32_t len;
    std::uint32_t lkey;
  };
  std::deque<Recv> recvs;
  std::vector<FakeSend> sends;
};

struct FakeCq {
  Handle context = 0;
  bool timestamps = false;
  Handle channel = 0;
  bool armed = false;
  std::deque<Completion> queue;
};

struct FakeMr {
  Handle pd = 0;
  std::uint8_t* addr = nullptr;
  std::size_t len = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
  bool remote_write = false;
};

class FakeVerbs : public VerbsOps {
 public:
  std::map<std::string, FakeDevice> devices;
  std::error_code list_error;
  // Fails the next post (send or receive) with this code, once.
  std::error_code fail_next_post;
  int create_ah_failures = 0;  // how many CreateAh calls fail from now

  // Objects alive, by handle.
  std::map<Handle, std::string> contexts;  // -> device name
  std::set<Handle> pds;
  std::map<Handle, FakeCq> cqs;
  std::map<Handle, FakeQp> qps;
  std::map<Handle, AddressVector> ahs;
  std::map<Handle, FakeMr> mrs;
  std::set<Handle> channels;
  int ahs_from_completion = 0;

  // A RoCE device with one active port and a RoCEv2 IPv4-mapped GID at
  // index 1 (index 0: the link-local RoCEv1 entry, as the kernel fills it).
  static FakeDevice RoceDevice(std::array<std::uint8_t, 4> ipv4,
                               bool hw_clock) {
    FakeDevice d;
    d.attr.node_guid = 0x0002c90300a1b2c3;
    d.attr.phys_port_cnt = 1;
    d.attr.max_qp_wr = 8192;
    if (hw_clock) {
      d.attr.completion_timestamp_mask = 0xffffffffffffULL;  // 48 bits
      d.attr.hca_core_clock_khz = 1000000;                   // 1 GHz
    }
    FakePort p;
    p.attr.state = 4;
    p.attr.link_layer = LinkLayer::kEthernet;
    p.attr.active_mtu_bytes = 1024;
    p.attr.gid_table_len = 4;
    GidEntry v1;
    v1.index = 0;
    v1.gid = Gid{0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                 0x02, 0x02, 0xc9, 0xff, 0xfe, 0xa1, 0xb2, 0xc3};
    v1.type = GidType::kRoceV1;
    GidEntry v2;
    v2.index = 1;
    v2.gid = Gid{0, 0, 0,    0,    0,       0,       0,       0,
                 0, 0, 0xff, 0xff, ipv4[0], ipv4[1], ipv4[2], ipv4[3]};
    v2.type = GidType::kRoceV2;
    p.gids = {v1, v2, std::nullopt, std::nullopt};
    d.ports[1] = p;
    return d;
  }

  // An InfiniBand device with one active port at `lid`.
  static FakeDevice IbDevice(std::uint16_t lid, bool hw_clock) {
    FakeDevice d;
    d.attr.node_guid = 0x0002c90300000000ULL | lid;
    d.attr.phys_port_cnt = 1;
    d.attr.max_qp_wr = 8192;
    if (hw_clock) {
      d.attr.completion_timestamp_mask = ~std::uint64_t{0};
      d.attr.hca_core_clock_khz = 156250;
    }
    FakePort p;
    p.attr.state = 4;
    p.attr.link_layer = LinkLayer::kInfiniBand;
    p.attr.lid = lid;
    p.attr.active_mtu_bytes = 4096;
    p.attr.gid_table_len = 1;
    GidEntry g;
    g.gid = Gid{0xfe,
                0x80,
                0,
                0,
                0,
                0,
                0,
                0,
                0x00,
                0x02,
                0xc9,
                0x03,
                0x00,
                0x00,
                static_cast<std::uint8_t>(lid >> 8),
                static_cast<std::uint8_t>(lid)};
    p.gids = {g};
    d.ports[1] = p;
    return d;
  }

  // --- the wire, played by the test ---

  // The QP whose number is `qpn` (nullptr when none).
  FakeQp* QpByNumber(std::uint32_t qpn) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& [h, qp] : qps) {
      if (qp.qpn == qpn) return &qp;
    }
    return nullptr;
  }
  Handle QpHandle(std::uint32_t qpn) const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& [h, qp] : qps) {
      if (qp.qpn == qpn) return h;
    }
    return 0;
  }

  // Puts a UD datagram into `qp`'s oldest posted receive: the 40-byte GRH
  // area (`grh` or zeros), then `payload`; queues the receive completion.
  // False when no receive is posted (the packet is dropped, as on the wire).
  bool DeliverUd(Handle qp_handle, const std::vector<std::uint8_t>& payload,
                 std::uint32_t src_qp, std::uint16_t slid,
                 const std::vector<std::uint8_t>& grh,
                 std::optional<std::uint64_t> timestamp) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    if (qp.recvs.empty()) return false;
    FakeQp::Recv r = qp.recvs.front();
    qp.recvs.pop_front();
    const std::size_t total = 40 + payload.size();
    if (total > r.len) return false;
    auto* dst = reinterpret_cast<std::uint8_t*>(r.addr);
    std::memset(dst, 0, 40);
    std::memcpy(dst, grh.data(), std::min<std::size_t>(grh.size(), 40));
    std::memcpy(dst + 40, payload.data(), payload.size());
    Completion c;
    c.wr_id = r.wr_id;
    c.opcode = WcOpcode::kRecv;
    c.byte_len = static_cast<std::uint32_t>(total);
    c.src_qp = src_qp;
    c.slid = slid;
    c.grh = !grh.empty();
    Stamp(qp.recv_cq, timestamp, &c);
    cqs.at(qp.recv_cq).queue.push_back(c);
    return true;
  }

  // Completes every send posted on `qp` and not yet completed.
  int CompleteSends(Handle qp_handle, std::optional<std::uint64_t> timestamp,
                    int status = 0) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    int n = 0;
    for (FakeSend& s : qp.sends) {
      if (s.completed) continue;
      s.completed = true;
      Completion c;
      c.wr_id = s.wr_id;
      c.status = status;
      if (status != 0) c.status_text = "transport retry counter exceeded";
      c.opcode = s.ud ? WcOpcode::kSend : WcOpcode::kRdmaWrite;
      c.byte_len = static_cast<std::uint32_t>(s.bytes.size());
      Stamp(qp.send_cq, timestamp, &c);
      cqs.at(qp.send_cq).queue.push_back(c);
      ++n;
    }
    return n;
  }

  // Carries the RC writes-with-immediate posted on `from` (not yet carried)
  // to the QP it is connected to: copies the bytes into the remote MR (rkey
  // and bounds checked), consumes a posted receive there and queues the
  // receive completion with the immediate, then the send completion.
  // Returns the number carried; a write that breaks the rules completes in
  // error on both sides, as a remote access error does.
  int CarryWrites(Handle from_handle) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& from = qps.at(from_handle);
    const std::uint32_t dest =
        from.transitions.empty() ? 0 : RtrOf(from).dest_qpn;
    FakeQp* to = QpByNumber(dest);
    int n = 0;
    for (FakeSend& s : from.sends) {
      if (s.completed || s.ud) continue;
      if (to == nullptr ||
          (to->state != QpState::kRtr && to->state != QpState::kRts)) {
        break;  // nothing connected yet: stays on the wire
      }
      if (Dev(to->context) == nullptr) break;  // its host is gone: lost
      if (to->recvs.empty()) break;  // receiver not ready (RNR): retry later
      s.completed = true;
      ++n;
      Completion sc;
      sc.wr_id = s.wr_id;
      sc.opcode = WcOpcode::kRdmaWrite;
      FakeMr* mr = MrByRkey(s.write.rkey);
      const bool ok =
          mr != nullptr && mr->remote_write &&
          s.write.remote_addr >= reinterpret_cast<std::uintptr_t>(mr->addr) &&
          s.write.remote_addr + s.write.len <=
              reinterpret_cast<std::uintptr_t>(mr->addr) + mr->len;
      if (!ok) {
        sc.status = 10;  // IBV_WC_REM_ACCESS_ERR
        sc.status_text = "remote access error";
        cqs.at(from.send_cq).queue.push_back(sc);
        ++remote_access_errors;
        continue;
      }
      std::memcpy(reinterpret_cast<void*>(s.write.remote_addr), s.bytes.data(),
                  s.bytes.size());
      FakeQp::Recv r = to->recvs.front();
      to->recvs.pop_front();
      Completion rc;
      rc.wr_id = r.wr_id;
      rc.opcode = WcOpcode::kRecvRdmaWithImm;
      rc.byte_len = s.write.len;
      rc.has_imm = true;
      rc.imm = s.write.imm;
      cqs.at(to->recv_cq).queue.push_back(rc);
      if (s.write.signaled) cqs.at(from.send_cq).queue.push_back(sc);
    }
    return n;
  }
  int remote_access_errors = 0;

  // CarryWrites for every QP: one turn of the wire.
  int CarryAllWrites() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    int n = 0;
    for (auto& [h, qp] : qps) n += CarryWrites(h);
    return n;
  }

  // Moves the HCA clock of `device`.
  void SetClock(const std::string& device, std::uint64_t cycles) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    devices.at(device).clock_cycles = cycles;
  }

  // --- VerbsOps ---

  std::vector<std::string> DeviceNames(std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (list_error) *error = list_error;
    std::vector<std::string> names;
    for (auto& [name, d] : devices) {
      if (!d.gone) names.push_back(name);
    }
    return names;
  }

  Handle Open(const std::string& name, std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto it = devices.find(name);
    if (it == devices.end() || it->second.gone || it->second.open_fails) {
      *error = std::make_error_code(std::errc::no_such_device);
      return 0;
    }
    Handle h = Next();
    contexts[h] = name;
    return h;
  }
  void Close(Handle context) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(contexts, context);
  }

  std::error_code QueryDevice(Handle context, DeviceAttr* attr) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeDevice* d = Dev(context);
    if (d == nullptr) return Gone();
    *attr = d->attr;
    return {};
  }
  std::error_code QueryPort(Handle context, int port, PortAttr* attr) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeDevice* d = Dev(context);
    if (d == nullptr) return Gone();
    auto it = d->ports.find(port);
    if (it == d->ports.end()) {
      return std::make_error_code(std::errc::invalid_argument);
    }
    *attr = it->second.attr;
    return {};
  }
  std::error_code QueryGid(Handle context, int port, int index,
                           GidEntry* entry) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeDevice* d = Dev(context);
    if (d == nullptr) return Gone();
    FakePort& p = d->ports.at(port);
    if (index < 0 || index >= static_cast<int>(p.gids.size()) ||
        !p.gids[index]) {
      return std::make_error_code(std::errc::no_message_available);
    }
    *entry = *p.gids[index];
    return {};
  }
  std::error_code ReadHcaClock(Handle context, std::uint64_t* cycles) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeDevice* d = Dev(context);
    if (d == nullptr) return Gone();
    if (!d->rt_clock) return std::make_error_code(std::errc::not_supported);
    *cycles = d->clock_cycles;
    return {};
  }

  Handle AllocPd(Handle context, std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (Dev(context) == nullptr) return Fail(error);
    Handle h = Next();
    pds.insert(h);
    pd_context[h] = context;
    return h;
  }
  void DeallocPd(Handle pd) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(pds, pd);
  }

  MrKeys RegMr(Handle pd, void* addr, std::size_t len, bool remote_write,
               std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!pds.count(pd) || Dev(pd_context[pd]) == nullptr) {
      Fail(error);
      return {};
    }
    Handle h = Next();
    FakeMr mr{pd,
              static_cast<std::uint8_t*>(addr),
              len,
              static_cast<std::uint32_t>(h * 16 + 1),
              static_cast<std::uint32_t>(h * 16 + 2),
              remote_write};
    mrs[h] = mr;
    return MrKeys{h, mr.lkey, mr.rkey};
  }
  void DeregMr(Handle mr) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(mrs, mr);
  }

  Handle CreateChannel(Handle context, int* fd,
                       std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (Dev(context) == nullptr) return Fail(error);
    Handle h = Next();
    channels.insert(h);
    // Far above any open descriptor: not one a reactor can wait on.
    *fd = 1000000 + static_cast<int>(h);
    return h;
  }
  void DestroyChannel(Handle channel) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(channels, channel);
  }

  Handle CreateCq(Handle context, int depth, bool timestamps, Handle channel,
                  std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeDevice* d = Dev(context);
    if (d == nullptr) return Fail(error);
    if (depth <= 0) {
      *error = std::make_error_code(std::errc::invalid_argument);
      return 0;
    }
    if (timestamps && !d->cq_timestamps) {
      *error = std::make_error_code(std::errc::operation_not_supported);
      return 0;
    }
    Handle h = Next();
    cqs[h] = FakeCq{context, timestamps, channel, false, {}};
    return h;
  }
  void DestroyCq(Handle cq) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(cqs, cq);
  }
  std::error_code ArmCq(Handle cq) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeCq& c = cqs.at(cq);
    if (Dev(c.context) == nullptr) return Gone();
    c.armed = true;
    return {};
  }
  Handle TakeCqEvent(Handle channel) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& [h, cq] : cqs) {
      if (cq.channel == channel && cq.armed && !cq.queue.empty()) {
        cq.armed = false;
        return h;
      }
    }
    return 0;
  }
  int Poll(Handle cq, int max, std::vector<Completion>* out) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeCq& c = cqs.at(cq);
    int n = 0;
    while (n < max && !c.queue.empty()) {
      out->push_back(c.queue.front());
      c.queue.pop_front();
      ++n;
    }
    return n;
  }

  Handle CreateQp(Handle pd, QpType type, Handle send_cq, Handle recv_cq,
                  const QpCaps& caps, std::uint32_t* qpn,
                  std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!pds.count(pd) || !cqs.count(send_cq) || !cqs.count(recv_cq)) {
      *error = std::make_error_code(std::errc::invalid_argument);
      return 0;
    }
    if (Dev(pd_context[pd]) == nullptr) return Fail(error);
    Handle h = Next();
    FakeQp qp;
    qp.context = pd_context[pd];
    qp.pd = pd;
    qp.type = type;
    qp.send_cq = send_cq;
    qp.recv_cq = recv_cq;
    qp.qpn = next_qpn_++;
    caps_[h] = caps;
    qps[h] = qp;
    *qpn = qp.qpn;
    return h;
  }
  void DestroyQp(Handle qp) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(qps, qp);
  }

  std::error_code ModifyQp(Handle qp_handle, QpType type,
                           const QpTransition& t) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    if (Dev(qp.context) == nullptr) return Gone();
    if (type != qp.type)
      return std::make_error_code(std::errc::invalid_argument);
    // The IB spec's QP state machine, the part the transports use.
    const bool ok = (qp.state == QpState::kReset && t.to == QpState::kInit) ||
                    (qp.state == QpState::kInit && t.to == QpState::kRtr) ||
                    (qp.state == QpState::kRtr && t.to == QpState::kRts) ||
                    t.to == QpState::kError || t.to == QpState::kReset;
    if (!ok) return std::make_error_code(std::errc::invalid_argument);
    qp.state = t.to;
    qp.transitions.push_back(t);
    return {};
  }

  Handle CreateAh(Handle pd, const AddressVector& av,
                  std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!pds.count(pd) || Dev(pd_context[pd]) == nullptr) return Fail(error);
    if (create_ah_failures > 0) {
      --create_ah_failures;
      *error = std::make_error_code(std::errc::network_unreachable);
      return 0;
    }
    Handle h = Next();
    ahs[h] = av;
    return h;
  }
  Handle CreateAhFromCompletion(Handle context, Handle pd, int port,
                                const Completion& wc,
                                std::span<const std::uint8_t> grh,
                                std::error_code* error) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (Dev(context) == nullptr) return Fail(error);
    AddressVector av;
    av.port = port;
    av.dlid = wc.slid;
    av.global = wc.grh;
    if (wc.grh && grh.size() >= 24) {
      std::memcpy(av.dgid.data(), grh.data() + 8, 16);
    }
    ++ahs_from_completion;
    return CreateAh(pd, av, error);
  }
  void DestroyAh(Handle ah) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Erase(ahs, ah);
  }

  std::error_code PostRecv(Handle qp_handle, std::uint64_t wr_id,
                           std::uint64_t addr, std::uint32_t len,
                           std::uint32_t lkey) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    if (auto ec = PostCheck(qp)) return ec;
    if (!CoveredByMr(lkey, addr, len)) {
      return std::make_error_code(std::errc::invalid_argument);
    }
    qp.recvs.push_back({wr_id, addr, len, lkey});
    return {};
  }
  std::error_code PostUdSend(Handle qp_handle, const UdSend& send) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    if (auto ec = PostCheck(qp)) return ec;
    if (qp.state != QpState::kRts || !ahs.count(send.ah) ||
        !CoveredByMr(send.lkey, send.addr, send.len)) {
      return std::make_error_code(std::errc::invalid_argument);
    }
    FakeSend s;
    s.wr_id = send.wr_id;
    s.ud = true;
    s.ud_send = send;
    auto* p = reinterpret_cast<const std::uint8_t*>(send.addr);
    s.bytes.assign(p, p + send.len);
    qp.sends.push_back(std::move(s));
    return {};
  }
  std::error_code PostWriteImm(Handle qp_handle,
                               const RcWriteImm& write) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    FakeQp& qp = qps.at(qp_handle);
    if (auto ec = PostCheck(qp)) return ec;
    if (qp.state != QpState::kRts ||
        (write.len > 0 && !CoveredByMr(write.lkey, write.addr, write.len))) {
      return std::make_error_code(std::errc::invalid_argument);
    }
    FakeSend s;
    s.wr_id = write.wr_id;
    s.ud = false;
    s.write = write;
    auto* p = reinterpret_cast<const std::uint8_t*>(write.addr);
    if (write.len > 0) s.bytes.assign(p, p + write.len);
    qp.sends.push_back(std::move(s));
    return {};
  }

  // The RTR transition recorded for `qp` (RC: the peer it connects to).
  static const QpTransition& RtrOf(const FakeQp& qp) {
    for (const auto& t : qp.transitions) {
      if (t.to == QpState::kRtr) return t;
    }
    return qp.transitions.front();
  }

 private:
  Handle Next() { return next_handle_++; }
  FakeDevice* Dev(Handle context) {
    auto it = contexts.find(context);
    if (it == contexts.end()) return nullptr;
    FakeDevice& d = devices.at(it->second);
    return d.gone ? nullptr : &d;
  }
  static std::error_code Gone() {
    return std::make_error_code(std::errc::no_such_device);
  }
  static Handle Fail(std::error_code* error) {
    *error = Gone();
    return 0;
  }
  template <typename C>
  static void Erase(C& c, Handle h) {
    c.erase(h);
  }
  std::error_code PostCheck(FakeQp& qp) {
    if (fail_next_post) {
      auto ec = fail_next_post;
      fail_next_post.clear();
      return ec;
    }
    if (Dev(qp.context) == nullptr) return Gone();
    return {};
  }
  bool CoveredByMr(std::uint32_t lkey, std::uint64_t addr, std::size_t len) {
    for (auto& [h, mr] : mrs) {
      if (mr.lkey != lkey) continue;
      auto base = reinterpret_cast<std::uintptr_t>(mr.addr);
      return addr >= base && addr + len <= base + mr.len;
    }
    return false;
  }
  FakeMr* MrByRkey(std::uint32_t rkey) {
    for (auto& [h, mr] : mrs) {
      if (mr.rkey == rkey) return &mr;
    }
    return nullptr;
  }
  void Stamp(Handle cq, std::optional<std::uint64_t> ts, Completion* c) {
    if (cqs.at(cq).timestamps && ts) {
      c->has_timestamp = true;
      c->timestamp = *ts;
    }
  }

  mutable std::recursive_mutex mu_;
  Handle next_handle_ = 1;
  std::uint32_t next_qpn_ = 0x100;
  std::map<Handle, Handle> pd_context;
  std::map<Handle, QpCaps> caps_;
};

}  // namespace fabric::rdma::testing
