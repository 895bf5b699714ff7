#include "benchtool/rdma_rc.h"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>

namespace fabric::bench {
namespace {

constexpr std::uint8_t kMagic[4] = {'F', 'R', 'C', '1'};
constexpr std::size_t kHeaderBytes = 72;
constexpr std::uint32_t kHello = 0xffffffff;
constexpr std::uint32_t kCreditFlag = 0x80000000;
constexpr std::uint32_t kSeqMask = 0x7fffffff;
constexpr std::uint64_t kRecvFlag = std::uint64_t{1} << 63;
constexpr std::chrono::milliseconds kSlice{100};

// Little-endian field writers/readers: endpoints and credit records cross
// hosts, so their layout does not depend on the CPU.
void Put(std::uint8_t* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t Get(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

std::uint32_t NextSeq(std::uint32_t seq) {
  // Credit sequence numbers skip kSeqMask so that a credit's immediate is
  // never the hello's.
  seq = (seq + 1) & kSeqMask;
  return seq == kSeqMask ? 0 : seq;
}

void PollFd(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(timeout.count()));
}

bool Overlaps(std::size_t offset, std::size_t length, std::size_t size) {
  return offset > size || length > size - offset;
}

}  // namespace

Endpoint EncodeRcEndpoint(const RcEndpoint& e) {
  Endpoint out(kHeaderBytes + 8 * e.qps.size(), 0);
  std::uint8_t* p = out.data();
  std::memcpy(p, kMagic, 4);
  p[4] = e.roce ? 1 : 0;
  Put(p + 6, e.lid, 2);
  Put(p + 8, e.mtu_bytes, 2);
  std::memcpy(p + 12, e.gid.data(), 16);
  Put(p + 28, e.region_addr, 8);
  Put(p + 36, e.region_bytes, 8);
  Put(p + 44, e.region_rkey, 4);
  Put(p + 48, e.credit_rkey, 4);
  Put(p + 52, e.credit_addr, 8);
  Put(p + 60, e.qps.size(), 4);
  for (std::size_t i = 0; i < e.qps.size(); ++i) {
    Put(p + kHeaderBytes + 8 * i, e.qps[i].qpn, 4);
    Put(p + kHeaderBytes + 8 * i + 4, e.qps[i].psn, 4);
  }
  return out;
}

std::optional<RcEndpoint> DecodeRcEndpoint(std::span<const std::uint8_t> b,
                                           std::string* error) {
  if (b.size() < kHeaderBytes) {
    *error = "RC endpoint of " + std::to_string(b.size()) +
             " bytes, shorter than its header";
    return std::nullopt;
  }
  if (std::memcmp(b.data(), kMagic, 4) != 0) {
    *error = "not an RC endpoint (bad magic or version)";
    return std::nullopt;
  }
  const std::uint8_t* p = b.data();
  RcEndpoint e;
  e.roce = p[4] != 0;
  e.lid = static_cast<std::uint16_t>(Get(p + 6, 2));
  e.mtu_bytes = static_cast<std::uint16_t>(Get(p + 8, 2));
  std::memcpy(e.gid.data(), p + 12, 16);
  e.region_addr = Get(p + 28, 8);
  e.region_bytes = Get(p + 36, 8);
  e.region_rkey = static_cast<std::uint32_t>(Get(p + 44, 4));
  e.credit_rkey = static_cast<std::uint32_t>(Get(p + 48, 4));
  e.credit_addr = Get(p + 52, 8);
  const std::uint64_t n = Get(p + 60, 4);
  if (n == 0 || b.size() != kHeaderBytes + 8 * n) {
    *error = "RC endpoint lists " + std::to_string(n) + " ranks in " +
             std::to_string(b.size()) + " bytes";
    return std::nullopt;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    RcEndpoint::Qp qp;
    qp.qpn = static_cast<std::uint32_t>(Get(p + kHeaderBytes + 8 * i, 4));
    qp.psn = static_cast<std::uint32_t>(Get(p + kHeaderBytes + 8 * i + 4, 4));
    if (qp.qpn > 0xffffff || qp.psn > 0xffffff) {
      *error =
          "RC endpoint: QPN or PSN over 24 bits for rank " + std::to_string(i);
      return std::nullopt;
    }
    e.qps.push_back(qp);
  }
  if (e.mtu_bytes < 256 || e.mtu_bytes > 4096) {
    *error = "RC endpoint: MTU " + std::to_string(e.mtu_bytes);
    return std::nullopt;
  }
  return e;
}

std::unique_ptr<BulkTransport> MakeRdmaTransport(
    const std::string& bind_address, std::string* error) {
  std::unique_ptr<rdma::VerbsOps> ops = rdma::MakeIbverbsOps();
  if (!ops) {
    *error = "built without rdma-core: no RDMA transport";
    return nullptr;
  }
  std::string why;
  std::vector<rdma::RdmaPort> ports = rdma::ListRdmaPorts(*ops, &why);
  auto port = rdma::PickPortForAddress(ports, bind_address);
  if (!port) {
    *error = "no active RDMA port on this host" +
             (why.empty() ? std::string() : " (" + why + ")");
    return nullptr;
  }
  return std::make_unique<RdmaRcTransport>(std::move(ops), *port);
}

RdmaRcTransport::RdmaRcTransport(std::unique_ptr<rdma::VerbsOps> ops,
                                 rdma::RdmaPort port, RcOptions options)
    : RdmaRcTransport(*ops, std::move(port), std::move(options)) {
  owned_ops_ = std::move(ops);
}

RdmaRcTransport::RdmaRcTransport(rdma::VerbsOps& ops, rdma::RdmaPort port,
                                 RcOptions options)
    : ops_(ops), port_(std::move(port)), options_(std::move(options)) {
  if (!options_.wait) options_.wait = PollFd;
  if (!options_.now)
    options_.now = [] { return std::chrono::steady_clock::now(); };
}

RdmaRcTransport::~RdmaRcTransport() { Release(); }

TransportError RdmaRcTransport::Local(std::string what) const {
  return TransportError{-1, "",
                        port_.device + " port " + std::to_string(port_.port) +
                            ": " + std::move(what)};
}

TransportError RdmaRcTransport::About(int rank, std::string what) const {
  std::string peer = rank >= 0 && rank < session_.ranks()
                         ? session_.peers[static_cast<std::size_t>(rank)]
                         : "";
  return TransportError{rank, std::move(peer), std::move(what)};
}

std::uint8_t* RdmaRcTransport::Inbox(int rank, std::uint32_t seq) {
  return credit_area_.data() +
         (static_cast<std::size_t>(rank) * kCreditSlots + seq % kCreditSlots) *
             kCreditRecordBytes;
}

std::uint8_t* RdmaRcTransport::Outbox(int rank, std::uint32_t seq) {
  return credit_area_.data() + credit_area_.size() / 2 +
         (static_cast<std::size_t>(rank) * kCreditSlots + seq % kCreditSlots) *
             kCreditRecordBytes;
}

std::optional<Endpoint> RdmaRcTransport::Prepare(const SessionInfo& session,
                                                 std::size_t region_bytes,
                                                 TransportError* error) {
  Release();
  aborted_ = false;
  failed_ = false;
  session_ = session;
  const int ranks = session.ranks();
  if (ranks < 1 || session.rank < 0 || session.rank >= ranks) {
    *error = Local("rank " + std::to_string(session.rank) + " of " +
                   std::to_string(ranks));
    return std::nullopt;
  }
  auto fail = [&](const std::string& step, std::error_code ec) {
    *error = Local(step + ": " + ec.message());
    Release();
    return std::nullopt;
  };
  std::error_code ec;
  context_ = ops_.Open(port_.device, &ec);
  if (context_ == 0) return fail("open", ec);
  pd_ = ops_.AllocPd(context_, &ec);
  if (pd_ == 0) return fail("alloc PD", ec);
  channel_ = ops_.CreateChannel(context_, &channel_fd_, &ec);
  if (channel_ == 0) return fail("create completion channel", ec);
  const int depth =
      std::max(1, (ranks - 1) * (options_.recv_depth + options_.send_depth));
  cq_ = ops_.CreateCq(context_, depth, false, channel_, &ec);
  if (cq_ == 0) return fail("create CQ", ec);

  region_bytes_ = region_bytes;
  const std::size_t alloc =
      (std::max<std::size_t>(region_bytes, 1) + 4095) / 4096 * 4096;
  region_ = static_cast<std::byte*>(std::aligned_alloc(4096, alloc));
  if (region_ == nullptr) {
    return fail("allocate " + std::to_string(alloc) + " bytes",
                std::make_error_code(std::errc::not_enough_memory));
  }
  region_mr_ = ops_.RegMr(pd_, region_, alloc, true, &ec);
  if (region_mr_.mr == 0) return fail("register region", ec);
  credit_area_.assign(
      2 * static_cast<std::size_t>(ranks) * kCreditSlots * kCreditRecordBytes,
      0);
  credit_mr_ =
      ops_.RegMr(pd_, credit_area_.data(), credit_area_.size(), true, &ec);
  if (credit_mr_.mr == 0) return fail("register credit area", ec);

  std::mt19937 rng(std::random_device{}());
  RcEndpoint me;
  me.gid = port_.gid.gid;
  me.lid = port_.lid;
  me.mtu_bytes = static_cast<std::uint16_t>(port_.mtu_bytes);
  me.roce = port_.link_layer == rdma::LinkLayer::kEthernet;
  me.region_addr = reinterpret_cast<std::uintptr_t>(region_);
  me.region_bytes = region_bytes;
  me.region_rkey = region_mr_.rkey;
  me.credit_addr = reinterpret_cast<std::uintptr_t>(credit_area_.data());
  me.credit_rkey = credit_mr_.rkey;
  me.qps.resize(static_cast<std::size_t>(ranks));
  links_.assign(static_cast<std::size_t>(ranks), Link{});
  for (int r = 0; r < ranks; ++r) {
    if (r == session.rank) continue;
    Link& link = links_[static_cast<std::size_t>(r)];
    rdma::QpCaps caps;
    caps.max_send_wr = options_.send_depth;
    caps.max_recv_wr = options_.recv_depth;
    link.qp =
        ops_.CreateQp(pd_, rdma::QpType::kRc, cq_, cq_, caps, &link.qpn, &ec);
    if (link.qp == 0) return fail("create RC QP", ec);
    rdma::QpTransition init;
    init.to = rdma::QpState::kInit;
    init.port = port_.port;
    init.remote_write = true;
    if ((ec = ops_.ModifyQp(link.qp, rdma::QpType::kRc, init))) {
      return fail("RC QP to INIT", ec);
    }
    // Receives only collect immediates: no buffer, so a zero-length one.
    const std::uint64_t wr = kRecvFlag | (static_cast<std::uint64_t>(r) << 32);
    for (int i = 0; i < options_.recv_depth; ++i) {
      ec = ops_.PostRecv(link.qp, wr, me.credit_addr, 0, credit_mr_.lkey);
      if (ec) return fail("post receive", ec);
    }
    link.psn = rng() & 0xffffff;
    me.qps[static_cast<std::size_t>(r)] = {link.qpn, link.psn};
  }
  return EncodeRcEndpoint(me);
}

std::span<std::byte> RdmaRcTransport::Region() {
  return {region_, region_ == nullptr ? 0 : region_bytes_};
}

TransportStatus RdmaRcTransport::Connect(std::span<const Endpoint> endpoints,
                                         std::span<const int> send_to,
                                         std::span<const int> recv_from) {
  if (cq_ == 0) return Local("Connect before Prepare");
  const int ranks = session_.ranks();
  if (static_cast<int>(endpoints.size()) != ranks) {
    return Local(std::to_string(endpoints.size()) + " endpoints for " +
                 std::to_string(ranks) + " ranks");
  }
  std::set<int> peers(send_to.begin(), send_to.end());
  peers.insert(recv_from.begin(), recv_from.end());
  for (int r : peers) {
    if (r < 0 || r >= ranks || r == session_.rank) {
      return Local("invalid peer rank " + std::to_string(r));
    }
  }
  for (int r : peers) {
    Link& link = links_[static_cast<std::size_t>(r)];
    if (link.connected) continue;
    std::string why;
    auto remote =
        DecodeRcEndpoint(endpoints[static_cast<std::size_t>(r)], &why);
    if (!remote) return About(r, "bad endpoint: " + why);
    if (static_cast<int>(remote->qps.size()) != ranks ||
        remote->qps[static_cast<std::size_t>(session_.rank)].qpn == 0) {
      return About(
          r, "endpoint has no QP for rank " + std::to_string(session_.rank));
    }
    const bool roce = port_.link_layer == rdma::LinkLayer::kEthernet;
    if (remote->roce != roce) {
      return About(r, "its port is " +
                          std::string(remote->roce ? "RoCE" : "InfiniBand") +
                          ", ours is not");
    }
    link.remote = *remote;
    const RcEndpoint::Qp their =
        remote->qps[static_cast<std::size_t>(session_.rank)];
    rdma::QpTransition rtr;
    rtr.to = rdma::QpState::kRtr;
    rtr.port = port_.port;
    rtr.path.port = port_.port;
    rtr.path.dlid = remote->lid;
    const bool other_subnet = !std::equal(
        remote->gid.begin(), remote->gid.begin() + 8, port_.gid.gid.begin());
    rtr.path.global = roce || other_subnet;
    if (rtr.path.global) {
      rtr.path.dgid = remote->gid;
      rtr.path.sgid_index = port_.gid.index;
    }
    rtr.dest_qpn = their.qpn;
    rtr.rq_psn = their.psn;
    rtr.path_mtu_bytes = std::min<int>(port_.mtu_bytes, remote->mtu_bytes);
    if (auto ec = ops_.ModifyQp(link.qp, rdma::QpType::kRc, rtr)) {
      return About(r, "RC QP to RTR: " + ec.message());
    }
    rdma::QpTransition rts;
    rts.to = rdma::QpState::kRts;
    rts.sq_psn = link.psn;
    rts.timeout = options_.ack_timeout;
    rts.retry_cnt = options_.retry_cnt;
    rts.rnr_retry = 7;  // "infinite": a receiver reposts promptly
    if (auto ec = ops_.ModifyQp(link.qp, rdma::QpType::kRc, rts)) {
      return About(r, "RC QP to RTS: " + ec.message());
    }
    link.connected = true;
    rdma::RcWriteImm hello;
    hello.addr = reinterpret_cast<std::uintptr_t>(credit_area_.data());
    hello.lkey = credit_mr_.lkey;
    hello.remote_addr = remote->credit_addr;
    hello.rkey = remote->credit_rkey;
    hello.imm = kHello;
    if (auto e = Post(r, hello)) return e;
  }
  return Wait(
      [&] {
        for (int r : peers) {
          const Link& l = links_[static_cast<std::size_t>(r)];
          if (!l.hello || l.writes_in_flight > 0) return false;
        }
        return true;
      },
      [&] {
        for (int r : peers) {
          if (!links_[static_cast<std::size_t>(r)].hello) return r;
        }
        return *peers.begin();
      });
}

TransportStatus RdmaRcTransport::Post(int rank, const rdma::RcWriteImm& write) {
  Link& link = links_[static_cast<std::size_t>(rank)];
  rdma::RcWriteImm w = write;
  w.wr_id = static_cast<std::uint64_t>(rank) << 32;
  if (link.writes_in_flight >= options_.send_depth || !link.backlog.empty()) {
    link.backlog.push_back(w);
    return std::nullopt;
  }
  if (auto ec = ops_.PostWriteImm(link.qp, w)) {
    failed_ = true;
    return About(rank, "post RDMA write: " + ec.message());
  }
  ++link.writes_in_flight;
  return std::nullopt;
}

TransportStatus RdmaRcTransport::GrantCredit(int rank, const Op& op) {
  Link& link = links_[static_cast<std::size_t>(rank)];
  const std::uint32_t seq = link.credit_seq_out;
  link.credit_seq_out = NextSeq(seq);
  std::uint8_t* record = Outbox(rank, seq);
  Put(record, op.offset, 8);
  Put(record + 8, op.length, 4);
  Put(record + 12, seq, 4);
  // Our inbox for them sits at our rank's row of their credit area.
  rdma::RcWriteImm w;
  w.addr = reinterpret_cast<std::uintptr_t>(record);
  w.len = kCreditRecordBytes;
  w.lkey = credit_mr_.lkey;
  w.remote_addr = link.remote.credit_addr +
                  (static_cast<std::uint64_t>(session_.rank) * kCreditSlots +
                   seq % kCreditSlots) *
                      kCreditRecordBytes;
  w.rkey = link.remote.credit_rkey;
  w.imm = kCreditFlag | seq;
  link.recvs.push_back(op.length);
  return Post(rank, w);
}

TransportStatus RdmaRcTransport::PumpSends(int rank) {
  Link& link = links_[static_cast<std::size_t>(rank)];
  while (!link.sends.empty() && !link.credits.empty()) {
    const std::size_t offset = link.sends.front().offset;
    const std::size_t length = link.sends.front().length;
    link.sends.pop_front();
    const Credit credit = link.credits.front();
    link.credits.pop_front();
    if (credit.length != length) {
      failed_ = true;
      return About(rank, "sends " + std::to_string(length) +
                             " bytes where the peer expects " +
                             std::to_string(credit.length));
    }
    if (Overlaps(credit.offset, length, link.remote.region_bytes)) {
      failed_ = true;
      return About(rank, "granted bytes outside its own region");
    }
    std::size_t done = 0;
    do {
      const std::size_t chunk = std::min(options_.max_write, length - done);
      rdma::RcWriteImm w;
      w.addr = reinterpret_cast<std::uintptr_t>(region_ + offset + done);
      w.len = static_cast<std::uint32_t>(chunk);
      w.lkey = region_mr_.lkey;
      w.remote_addr = link.remote.region_addr + credit.offset + done;
      w.rkey = link.remote.region_rkey;
      w.imm = link.data_seq_out & kSeqMask;
      if (auto e = Post(rank, w)) return e;
      done += chunk;
    } while (done < length);
    link.data_seq_out = (link.data_seq_out + 1) & kSeqMask;
  }
  return std::nullopt;
}

TransportStatus RdmaRcTransport::OnCompletion(const rdma::Completion& wc) {
  const int rank = static_cast<int>((wc.wr_id >> 32) & kSeqMask);
  if (rank < 0 || rank >= static_cast<int>(links_.size()) ||
      rank == session_.rank) {
    return std::nullopt;
  }
  Link& link = links_[static_cast<std::size_t>(rank)];
  const bool recv = (wc.wr_id & kRecvFlag) != 0;
  if (wc.status != 0) {
    failed_ = true;
    return About(rank, std::string(recv ? "receive" : "RDMA write") +
                           " failed: " + wc.status_text);
  }
  if (!recv) {
    --link.writes_in_flight;
    while (!link.backlog.empty() &&
           link.writes_in_flight < options_.send_depth) {
      rdma::RcWriteImm w = link.backlog.front();
      link.backlog.pop_front();
      if (auto ec = ops_.PostWriteImm(link.qp, w)) {
        failed_ = true;
        return About(rank, "post RDMA write: " + ec.message());
      }
      ++link.writes_in_flight;
    }
    return std::nullopt;
  }
  if (auto ec =
          ops_.PostRecv(link.qp, wc.wr_id,
                        reinterpret_cast<std::uintptr_t>(credit_area_.data()),
                        0, credit_mr_.lkey)) {
    failed_ = true;
    return About(rank, "repost receive: " + ec.message());
  }
  if (!wc.has_imm) return About(rank, "receive without immediate");
  if (wc.imm == kHello) {
    link.hello = true;
    return std::nullopt;
  }
  if (wc.imm & kCreditFlag) {
    const std::uint32_t seq = wc.imm & kSeqMask;
    const std::uint8_t* record = Inbox(rank, seq);
    if (seq != link.credit_seq_in || Get(record + 12, 4) != seq) {
      failed_ = true;
      return About(rank, "credit " + std::to_string(seq) + " out of order");
    }
    link.credit_seq_in = NextSeq(seq);
    link.credits.push_back(
        Credit{Get(record, 8), static_cast<std::uint32_t>(Get(record + 8, 4))});
    return PumpSends(rank);
  }
  if (link.recvs.empty() || wc.byte_len > link.recvs.front()) {
    failed_ = true;
    return About(rank, "wrote " + std::to_string(wc.byte_len) +
                           " bytes that no receive asked for");
  }
  link.recvs.front() -= wc.byte_len;
  if (link.recvs.front() == 0) link.recvs.pop_front();
  return std::nullopt;
}

TransportStatus RdmaRcTransport::Drain(int* handled) {
  std::vector<rdma::Completion> wcs;
  while (true) {
    wcs.clear();
    if (ops_.Poll(cq_, 32, &wcs) == 0) return std::nullopt;
    for (const auto& wc : wcs) {
      ++*handled;
      if (auto e = OnCompletion(wc)) return e;
    }
  }
}

TransportStatus RdmaRcTransport::Wait(const std::function<bool()>& done,
                                      const std::function<int()>& waiting_for) {
  auto last = options_.now();
  while (true) {
    if (aborted_) return Local("aborted");
    int handled = 0;
    if (auto e = Drain(&handled)) return e;
    if (done()) return std::nullopt;
    if (handled > 0) {
      last = options_.now();
      continue;
    }
    const auto idle = options_.now() - last;
    if (idle >= session_.io_timeout) {
      failed_ = true;
      return About(waiting_for(),
                   "no progress for " +
                       std::to_string(session_.io_timeout.count()) + " ms");
    }
    if (auto ec = ops_.ArmCq(cq_)) {
      failed_ = true;
      return Local("arm CQ: " + ec.message());
    }
    if (auto e = Drain(&handled)) return e;
    if (handled > 0) {
      last = options_.now();
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        session_.io_timeout - idle);
    options_.wait(channel_fd_,
                  std::clamp(left, std::chrono::milliseconds(1), kSlice));
    ops_.TakeCqEvent(channel_);
  }
}

TransportStatus RdmaRcTransport::DoExchange(std::span<const Op> sends,
                                            std::span<const Op> recvs,
                                            const Arrived& /*arrived*/) {
  if (aborted_) return Local("aborted");
  if (failed_) return Local("transport failed earlier; only Close() is left");
  if (cq_ == 0) return Local("Exchange before Prepare");
  std::vector<int> per_peer(links_.size(), 0);
  auto check = [&](const Op& op) -> TransportStatus {
    if (op.peer < 0 || op.peer >= static_cast<int>(links_.size()) ||
        op.peer == session_.rank ||
        !links_[static_cast<std::size_t>(op.peer)].connected) {
      return Local("op names rank " + std::to_string(op.peer) +
                   ", which is not a connected peer");
    }
    if (Overlaps(op.offset, op.length, region_bytes_)) {
      return Local("op [" + std::to_string(op.offset) + ", +" +
                   std::to_string(op.length) + ") outside the region of " +
                   std::to_string(region_bytes_) + " bytes");
    }
    if (op.length > std::numeric_limits<std::uint32_t>::max()) {
      return Local("op of " + std::to_string(op.length) +
                   " bytes (a receive grants at most 4 GiB - 1)");
    }
    return std::nullopt;
  };
  for (const Op& op : sends) {
    if (auto e = check(op)) return e;
  }
  for (const Op& op : recvs) {
    if (auto e = check(op)) return e;
    if (++per_peer[static_cast<std::size_t>(op.peer)] > kCreditSlots) {
      return Local("more than " + std::to_string(kCreditSlots) +
                   " receives from one peer in one exchange");
    }
  }
  for (const Op& op : recvs) {
    if (auto e = GrantCredit(op.peer, op)) return e;
  }
  std::set<int> touched;
  for (const Op& op : sends) {
    Link& link = links_[static_cast<std::size_t>(op.peer)];
    link.sends.push_back(op);
    touched.insert(op.peer);
  }
  for (int r : touched) {
    if (auto e = PumpSends(r)) return e;
  }
  auto pending = [&](const Link& l) {
    return !l.sends.empty() || !l.recvs.empty() || !l.backlog.empty() ||
           l.writes_in_flight > 0;
  };
  return Wait(
      [&] { return std::none_of(links_.begin(), links_.end(), pending); },
      [&] {
        for (std::size_t r = 0; r < links_.size(); ++r) {
          if (pending(links_[r])) return static_cast<int>(r);
        }
        return -1;
      });
}

void RdmaRcTransport::Abort() { aborted_ = true; }

void RdmaRcTransport::Close() { Release(); }

void RdmaRcTransport::Release() {
  for (Link& link : links_) {
    if (link.qp != 0) ops_.DestroyQp(link.qp);
  }
  links_.clear();
  if (credit_mr_.mr != 0) ops_.DeregMr(credit_mr_.mr);
  credit_mr_ = {};
  if (region_mr_.mr != 0) ops_.DeregMr(region_mr_.mr);
  region_mr_ = {};
  std::free(region_);
  region_ = nullptr;
  region_bytes_ = 0;
  if (cq_ != 0) ops_.DestroyCq(cq_);
  cq_ = 0;
  if (channel_ != 0) ops_.DestroyChannel(channel_);
  channel_ = 0;
  channel_fd_ = -1;
  if (pd_ != 0) ops_.DeallocPd(pd_);
  pd_ = 0;
  if (context_ != 0) ops_.Close(context_);
  context_ = 0;
}

}  // namespace fabric::bench
