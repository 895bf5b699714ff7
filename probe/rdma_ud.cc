#include "probe/rdma_ud.h"

#include <time.h>

#include <algorithm>
#include <cstring>

namespace fabric::rdma {
namespace {

// Receive work requests carry this bit plus the ring index; sends carry a
// plain counter that never reaches it.
constexpr std::uint64_t kRecvTag = std::uint64_t{1} << 63;
// Reply address handles kept before the cache is emptied (one per prober
// that ever asked: bounded so a scan of sources cannot grow it for ever).
constexpr std::size_t kMaxReplyAhs = 4096;

std::int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string Where(const RdmaPort& port) {
  return port.device + " port " + std::to_string(port.port);
}

std::string Hex(std::span<const std::uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (auto b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace

std::optional<Gid> GrhSourceGid(std::span<const std::uint8_t> grh) {
  if (grh.size() < kGrhBytes) return std::nullopt;
  Gid gid{};
  if ((grh[0] >> 4) == 6) {  // IPv6-format GRH: SGID at bytes 8..23
    std::memcpy(gid.data(), grh.data() + 8, gid.size());
    return gid;
  }
  if ((grh[20] >> 4) == 4) {  // RoCEv2/IPv4: the header in the last 20 bytes
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::memcpy(gid.data() + 12, grh.data() + 20 + 12, 4);
    return gid;
  }
  return std::nullopt;
}

UdPort::UdPort(VerbsOps& ops, RdmaPort port, UdOptions options)
    : ops_(ops), port_(std::move(port)), options_(std::move(options)) {
  if (!options_.now_ns) options_.now_ns = MonotonicNs;
}

std::unique_ptr<UdPort> UdPort::Open(VerbsOps& ops, const RdmaPort& port,
                                     const UdOptions& options,
                                     std::string* error) {
  std::unique_ptr<UdPort> p(new UdPort(ops, port, options));
  if (!p->Setup(error)) return nullptr;
  return p;
}

bool UdPort::Setup(std::string* error) {
  auto fail = [&](const std::string& step, std::error_code ec) {
    *error = Where(port_) + ": " + step + ": " + ec.message();
    return false;
  };
  if (options_.recv_ring < 1 || options_.send_slots < 1) {
    return fail("options", std::make_error_code(std::errc::invalid_argument));
  }
  if (port_.mtu_bytes > 0 &&
      options_.max_payload > static_cast<std::size_t>(port_.mtu_bytes)) {
    return fail("payload of " + std::to_string(options_.max_payload) +
                    " bytes exceeds the port MTU " +
                    std::to_string(port_.mtu_bytes),
                std::make_error_code(std::errc::message_size));
  }
  std::error_code ec;
  context_ = ops_.Open(port_.device, &ec);
  if (context_ == 0) return fail("open", ec);
  DeviceAttr dev;
  if ((ec = ops_.QueryDevice(context_, &dev))) return fail("query device", ec);
  clock_kind_ = ChooseClock(dev);
  if (clock_kind_ == ClockKind::kHardware) {
    hca_clock_ =
        HcaClock(dev.hca_core_clock_khz * 1000, dev.completion_timestamp_mask);
    std::uint64_t cycles = 0;
    if (!ops_.ReadHcaClock(context_, &cycles)) {
      can_read_clock_ = true;
      last_anchor_ns_ = options_.now_ns();
      hca_clock_.Anchor(cycles, last_anchor_ns_);
    }
  }
  pd_ = ops_.AllocPd(context_, &ec);
  if (pd_ == 0) return fail("alloc PD", ec);
  channel_ = ops_.CreateChannel(context_, &channel_fd_, &ec);
  if (channel_ == 0) return fail("create completion channel", ec);
  const int depth = options_.recv_ring + options_.send_slots;
  cq_ = ops_.CreateCq(context_, depth, clock_kind_ == ClockKind::kHardware,
                      channel_, &ec);
  if (cq_ == 0 && clock_kind_ == ClockKind::kHardware) {
    // The device advertises a clock but refuses timestamped CQs (some
    // providers do): probe with software timestamps rather than not at all.
    clock_kind_ = ClockKind::kSoftware;
    ec.clear();
    cq_ = ops_.CreateCq(context_, depth, false, channel_, &ec);
  }
  if (cq_ == 0) return fail("create CQ", ec);
  port_.clock = clock_kind_;
  QpCaps caps;
  caps.max_send_wr = options_.send_slots;
  caps.max_recv_wr = options_.recv_ring;
  qp_ = ops_.CreateQp(pd_, QpType::kUd, cq_, cq_, caps, &qpn_, &ec);
  if (qp_ == 0) return fail("create UD QP", ec);
  QpTransition t;
  t.to = QpState::kInit;
  t.port = port_.port;
  t.qkey = options_.qkey;
  if ((ec = ops_.ModifyQp(qp_, QpType::kUd, t))) return fail("QP to INIT", ec);
  t.to = QpState::kRtr;
  if ((ec = ops_.ModifyQp(qp_, QpType::kUd, t))) return fail("QP to RTR", ec);
  t.to = QpState::kRts;
  t.sq_psn = 0;
  if ((ec = ops_.ModifyQp(qp_, QpType::kUd, t))) return fail("QP to RTS", ec);

  recv_stride_ = kGrhBytes + options_.max_payload;
  buffer_.assign(recv_stride_ * options_.recv_ring +
                     options_.max_payload * options_.send_slots,
                 0);
  mr_ = ops_.RegMr(pd_, buffer_.data(), buffer_.size(), false, &ec);
  if (mr_.mr == 0) return fail("register buffer", ec);
  for (int i = 0; i < options_.recv_ring; ++i) {
    ec = ops_.PostRecv(qp_, kRecvTag | static_cast<std::uint64_t>(i),
                       reinterpret_cast<std::uintptr_t>(RecvBuffer(i)),
                       static_cast<std::uint32_t>(recv_stride_), mr_.lkey);
    if (ec) return fail("post receive", ec);
  }
  for (int s = options_.send_slots - 1; s >= 0; --s) free_slots_.push_back(s);
  if ((ec = ops_.ArmCq(cq_))) return fail("arm CQ", ec);
  return true;
}

UdPort::~UdPort() {
  // Reverse order of creation; a handle of 0 was never created.
  if (qp_ != 0) ops_.DestroyQp(qp_);
  for (auto& [name, peer] : peers_) ops_.DestroyAh(peer.ah);
  for (auto& [key, ah] : reply_ahs_) ops_.DestroyAh(ah);
  for (Handle ah : retired_ahs_) ops_.DestroyAh(ah);
  if (mr_.mr != 0) ops_.DeregMr(mr_.mr);
  if (cq_ != 0) ops_.DestroyCq(cq_);
  if (channel_ != 0) ops_.DestroyChannel(channel_);
  if (pd_ != 0) ops_.DeallocPd(pd_);
  if (context_ != 0) ops_.Close(context_);
}

UdAddress UdPort::local() const {
  return UdAddress{port_.gid.gid, port_.lid, qpn_, options_.qkey};
}

std::uint8_t* UdPort::RecvBuffer(int index) {
  return buffer_.data() + recv_stride_ * static_cast<std::size_t>(index);
}

std::uint8_t* UdPort::SendBuffer(int slot) {
  return buffer_.data() + recv_stride_ * options_.recv_ring +
         options_.max_payload * static_cast<std::size_t>(slot);
}

std::string UdPort::SourceKey(const std::optional<Gid>& gid, std::uint16_t lid,
                              std::uint32_t qpn) const {
  std::string key = gid ? "g" + Hex(*gid) : "l" + std::to_string(lid);
  return key + "/" + std::to_string(qpn);
}

bool UdPort::SetPeer(const std::string& peer, const UdAddress& address,
                     std::string* error) {
  const bool roce = port_.link_layer == LinkLayer::kEthernet;
  if (address.qpn == 0 || address.qpn > 0xffffff) {
    *error = peer + ": invalid QPN " + std::to_string(address.qpn);
    return false;
  }
  if (roce && IsZeroGid(address.gid)) {
    *error = peer + ": no GID (RoCE needs one)";
    return false;
  }
  if (!roce && address.lid == 0) {
    *error = peer + ": no LID (InfiniBand routes by LID)";
    return false;
  }
  auto it = peers_.find(peer);
  if (it != peers_.end() && it->second.address == address) return true;

  AddressVector av;
  av.port = port_.port;
  av.sl = options_.sl;
  av.dlid = address.lid;
  // IB inside one subnet routes by LID alone; a GRH is needed on RoCE and
  // towards another subnet prefix (the GID's first 8 bytes).
  const bool other_subnet =
      !IsZeroGid(address.gid) &&
      !std::equal(address.gid.begin(), address.gid.begin() + 8,
                  port_.gid.gid.begin());
  av.global = roce || other_subnet;
  if (av.global) {
    av.dgid = address.gid;
    av.sgid_index = port_.gid.index;
    av.traffic_class = options_.traffic_class;
  }
  std::error_code ec;
  Handle ah = ops_.CreateAh(pd_, av, &ec);
  if (ah == 0) {
    *error = peer + ": create address handle: " + ec.message();
    return false;
  }
  ForgetPeer(peer);
  peers_[peer] = Peer{address, ah};
  if (!IsZeroGid(address.gid)) {
    peer_by_source_[SourceKey(address.gid, 0, address.qpn)] = peer;
  }
  if (!roce && address.lid != 0) {
    peer_by_source_[SourceKey(std::nullopt, address.lid, address.qpn)] = peer;
  }
  return true;
}

void UdPort::ForgetPeer(const std::string& peer) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  // A send still in flight may use the AH: destroy it once none is.
  retired_ahs_.push_back(it->second.ah);
  peers_.erase(it);
  std::erase_if(peer_by_source_,
                [&](const auto& kv) { return kv.second == peer; });
  ReleaseRetired();
}

bool UdPort::HasPeer(const std::string& peer) const {
  return peers_.count(peer) != 0;
}

void UdPort::ReleaseRetired() {
  if (!in_flight_.empty()) return;
  for (Handle ah : retired_ahs_) ops_.DestroyAh(ah);
  retired_ahs_.clear();
}

std::error_code UdPort::Send(const std::string& peer,
                             std::span<const std::uint8_t> payload,
                             std::uint64_t cookie) {
  if (!failure_.empty()) return std::make_error_code(std::errc::no_such_device);
  auto it = peers_.find(peer);
  if (it == peers_.end()) {
    return std::make_error_code(std::errc::no_such_device_or_address);
  }
  return PostTo(it->second.ah, it->second.address.qpn, it->second.address.qkey,
                payload, cookie);
}

std::error_code UdPort::Reply(const UdEvent& received,
                              std::span<const std::uint8_t> payload,
                              std::uint64_t cookie) {
  if (!failure_.empty()) return std::make_error_code(std::errc::no_such_device);
  if (received.kind != UdEvent::Kind::kReceived) {
    return std::make_error_code(std::errc::invalid_argument);
  }
  const std::string key =
      SourceKey(received.source_gid, received.source_lid, received.source_qpn);
  Handle ah = 0;
  if (auto it = reply_ahs_.find(key); it != reply_ahs_.end()) {
    ah = it->second;
  } else {
    std::error_code ec;
    ah = ops_.CreateAhFromCompletion(context_, pd_, port_.port, received.wc,
                                     received.grh, &ec);
    if (ah == 0) return ec;
    if (reply_ahs_.size() >= kMaxReplyAhs) {
      for (auto& [k, old] : reply_ahs_) retired_ahs_.push_back(old);
      reply_ahs_.clear();
    }
    reply_ahs_[key] = ah;
  }
  // The prober's Q_Key is ours too: every fabricmon uses the same one, and
  // a UD receive does not report the sender's.
  return PostTo(ah, received.source_qpn, options_.qkey, payload, cookie);
}

std::error_code UdPort::PostTo(Handle ah, std::uint32_t qpn, std::uint32_t qkey,
                               std::span<const std::uint8_t> payload,
                               std::uint64_t cookie) {
  if (payload.size() > options_.max_payload) {
    return std::make_error_code(std::errc::message_size);
  }
  if (free_slots_.empty()) {
    return std::make_error_code(std::errc::no_buffer_space);
  }
  const int slot = free_slots_.back();
  std::memcpy(SendBuffer(slot), payload.data(), payload.size());
  UdSend s;
  s.wr_id = next_wr_id_++;
  s.ah = ah;
  s.remote_qpn = qpn;
  s.qkey = qkey;
  s.addr = reinterpret_cast<std::uintptr_t>(SendBuffer(slot));
  s.len = static_cast<std::uint32_t>(payload.size());
  s.lkey = mr_.lkey;
  if (auto ec = ops_.PostUdSend(qp_, s)) {
    if (ec == std::errc::no_such_device || ec == std::errc::io_error) {
      Fail("post send: " + ec.message());
    }
    return ec;
  }
  free_slots_.pop_back();
  in_flight_[s.wr_id] = InFlight{slot, cookie};
  return {};
}

Stamp UdPort::StampOf(const Completion& wc, std::int64_t now) {
  if (clock_kind_ != ClockKind::kHardware || !wc.has_timestamp) {
    return Stamp{now, ClockKind::kSoftware};
  }
  if (!hca_clock_.anchored()) {
    // No ibv_query_rt_values_ex: pin the first stamp to the host clock now.
    // Later stamps keep exact differences to it; their absolute host time
    // is off by this completion's poll delay.
    hca_clock_.Anchor(wc.timestamp, now);
  }
  return Stamp{hca_clock_.ToHostNs(wc.timestamp), ClockKind::kHardware};
}

void UdPort::Fail(std::string reason) {
  if (failure_.empty()) failure_ = Where(port_) + ": " + std::move(reason);
}

void UdPort::OnCompletion(const Completion& wc, std::vector<UdEvent>* events) {
  if (wc.wr_id & kRecvTag) {
    const int index = static_cast<int>(wc.wr_id & ~kRecvTag);
    if (index < 0 || index >= options_.recv_ring) return;
    if (wc.status != 0) {
      // UD receives fail only when the QP is torn down or in error (a
      // flushed ring): the port is gone for this QP.
      Fail("receive completion: " + wc.status_text);
      return;
    }
    std::uint8_t* buf = RecvBuffer(index);
    UdEvent ev;
    ev.polled_ns = options_.now_ns();
    ev.stamp = StampOf(wc, ev.polled_ns);
    if (wc.byte_len < kGrhBytes || wc.byte_len > recv_stride_) {
      ev.kind = UdEvent::Kind::kDropped;
      ev.error = "receive of " + std::to_string(wc.byte_len) +
                 " bytes (40-byte GRH area + payload expected)";
    } else {
      ev.kind = UdEvent::Kind::kReceived;
      ev.wc = wc;
      std::memcpy(ev.grh.data(), buf, kGrhBytes);
      ev.payload.assign(buf + kGrhBytes, buf + wc.byte_len);
      if (wc.grh) ev.source_gid = GrhSourceGid(ev.grh);
      ev.source_lid = wc.slid;
      ev.source_qpn = wc.src_qp;
      auto key = SourceKey(ev.source_gid, ev.source_lid, ev.source_qpn);
      if (auto it = peer_by_source_.find(key); it != peer_by_source_.end()) {
        ev.peer = it->second;
      } else if (ev.source_gid) {
        // IB across a router: the GRH is there but the peer was recorded
        // by LID as well; try that too.
        key = SourceKey(std::nullopt, ev.source_lid, ev.source_qpn);
        if (auto it2 = peer_by_source_.find(key); it2 != peer_by_source_.end())
          ev.peer = it2->second;
      }
    }
    events->push_back(std::move(ev));
    if (auto ec =
            ops_.PostRecv(qp_, wc.wr_id, reinterpret_cast<std::uintptr_t>(buf),
                          static_cast<std::uint32_t>(recv_stride_), mr_.lkey)) {
      Fail("repost receive: " + ec.message());
    }
    return;
  }
  auto it = in_flight_.find(wc.wr_id);
  if (it == in_flight_.end()) return;
  UdEvent ev;
  ev.cookie = it->second.cookie;
  ev.polled_ns = options_.now_ns();
  ev.stamp = StampOf(wc, ev.polled_ns);
  free_slots_.push_back(it->second.slot);
  in_flight_.erase(it);
  if (wc.status == 0) {
    ev.kind = UdEvent::Kind::kSent;
  } else {
    ev.kind = UdEvent::Kind::kSendFailed;
    ev.error = wc.status_text;
    // Any failed UD send moves the QP to the error state.
    Fail("send completion: " + wc.status_text);
  }
  events->push_back(std::move(ev));
}

void UdPort::Poll(std::vector<UdEvent>* events) {
  if (channel_ != 0) ops_.TakeCqEvent(channel_);
  const std::int64_t now = options_.now_ns();
  if (can_read_clock_ && now - last_anchor_ns_ >= options_.reanchor_ns) {
    std::uint64_t cycles = 0;
    if (!ops_.ReadHcaClock(context_, &cycles)) {
      last_anchor_ns_ = options_.now_ns();
      hca_clock_.Anchor(cycles, last_anchor_ns_);
    }
  }
  std::vector<Completion> wcs;
  // Drain, arm, drain once more: a completion that lands between the last
  // poll and the arm raises no event, the second drain catches it.
  for (int round = 0; round < 2; ++round) {
    while (true) {
      wcs.clear();
      if (ops_.Poll(cq_, 32, &wcs) == 0) break;
      for (const Completion& wc : wcs) OnCompletion(wc, events);
    }
    if (round == 0) {
      if (auto ec = ops_.ArmCq(cq_)) Fail("arm CQ: " + ec.message());
    }
  }
  if (!failure_.empty()) {
    // The QP is unusable: what was in flight will never complete.
    for (auto& [wr_id, f] : in_flight_) {
      UdEvent ev;
      ev.kind = UdEvent::Kind::kSendFailed;
      ev.cookie = f.cookie;
      ev.polled_ns = options_.now_ns();
      ev.stamp = Stamp{ev.polled_ns, ClockKind::kSoftware};
      ev.error = failure_;
      events->push_back(std::move(ev));
      free_slots_.push_back(f.slot);
    }
    in_flight_.clear();
  }
  ReleaseRetired();
}

}  // namespace fabric::rdma
