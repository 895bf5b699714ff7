#include "probe/rdma_transport.h"

#include <time.h>

#include <cstdio>

#include "core/thread_annotations.h"
#include "probe/rdma_ports.h"

namespace fabric::probe {
namespace {

// A reply's send completion is of no use to the engine: it is not reported.
constexpr std::uint64_t kReplyCookie = ~std::uint64_t{0};
// Sources remembered for Reply (the responder answers while it handles
// the datagram, so the newest few suffice).
constexpr std::size_t kMaxSources = 4096;

std::int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string GidText(const rdma::Gid& gid) {
  char buf[40];
  std::snprintf(
      buf, sizeof buf,
      "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
      "%02x%02x",
      gid[0], gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7], gid[8],
      gid[9], gid[10], gid[11], gid[12], gid[13], gid[14], gid[15]);
  return buf;
}

// The rate-limit key of a sender: its GID, or its LID on IB without a GRH.
std::string SourceKey(const rdma::UdEvent& ev) {
  return ev.source_gid ? GidText(*ev.source_gid)
                       : "lid:" + std::to_string(ev.source_lid);
}

Timestamp ToTimestamp(const rdma::UdEvent& ev) {
  Timestamp t;
  t.software_ns = ev.polled_ns;
  if (ev.stamp.kind == rdma::ClockKind::kHardware) t.hardware_ns = ev.stamp.ns;
  return t;
}

}  // namespace

std::string RdmaTransport::Key(const Endpoint& peer) {
  const auto a = peer.address();
  const std::string host =
      a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
  return host + ":" + std::to_string(peer.port());
}

RdmaTransport::RdmaTransport(boost::asio::io_context& io,
                             std::unique_ptr<rdma::VerbsOps> ops,
                             SendingPort sending, rdma::UdOptions options)
    : io_(io),
      ops_(std::move(ops)),
      sending_(std::move(sending)),
      options_(std::move(options)) {
  // Software stamps on the same clock as the UDP transport's.
  if (!options_.now_ns) options_.now_ns = RealtimeNs;
}

RdmaTransport::~RdmaTransport() { Stop(); }

bool RdmaTransport::Start(Handlers handlers, std::string* error) {
  Stop();
  handlers_ = std::move(handlers);
  SetError("");
  if (!ops_) {
    *error = "built without rdma-core: no RDMA transport";
    return false;
  }
  std::string why;
  std::vector<rdma::RdmaPort> list = rdma::ListRdmaPorts(*ops_, &why);
  if (list.empty()) {
    *error = "no active RDMA port" + (why.empty() ? "" : ": " + why);
    return false;
  }
  std::string notes = why;
  const auto pick =
      sending_.device.empty()
          ? rdma::PickPortForAddress(list, sending_.listen_address)
          : rdma::FindPort(list, sending_.device, sending_.port);
  if (!pick) {
    std::string active;
    for (const rdma::RdmaPort& p : list) {
      active += (active.empty() ? "" : ", ") + p.device + " port " +
                std::to_string(p.port);
    }
    *error = sending_.device + " port " + std::to_string(sending_.port) +
             " is not an active RDMA port (active: " + active + ")";
    return false;
  }
  ports_.reserve(list.size());
  for (const rdma::RdmaPort& rp : list) {
    std::string e;
    auto ud = rdma::UdPort::Open(*ops_, rp, options_, &e);
    if (!ud) {
      notes += (notes.empty() ? "" : "; ") + e;
      continue;
    }
    if (rp.device == pick->device && rp.port == pick->port) {
      sender_ = ports_.size();
    }
    Port port;
    port.fd = std::make_unique<boost::asio::posix::stream_descriptor>(io_);
    boost::system::error_code ec;
    port.fd->assign(ud->fd(), ec);
    // Not a descriptor the reactor can wait on (a test's fake): the owner
    // calls PollNow() instead.
    if (ec) port.fd.reset();
    port.ud = std::move(ud);
    ports_.push_back(std::move(port));
  }
  SetError(notes);
  if (ports_.empty()) {
    *error = notes;
    return false;
  }
  for (std::size_t i = 0; i < ports_.size(); ++i) Arm(i);
  UpdateHealth();
  return true;
}

void RdmaTransport::Arm(std::size_t index) {
  Port& port = ports_[index];
  if (!port.fd) return;
  port.fd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this, index](const boost::system::error_code& ec) {
                        // Canceled by Stop(): the transport may be gone.
                        if (ec) return;
                        Dispatch(index);
                        Arm(index);
                      });
}

void RdmaTransport::Stop() {
  for (Port& port : ports_) {
    if (port.fd) {
      boost::system::error_code ec;
      port.fd->cancel(ec);
      // The completion channel owns the fd; ibv_destroy_comp_channel closes
      // it.
      port.fd->release();
    }
  }
  ports_.clear();
  sender_ = 0;
  last_from_.clear();
  UpdateHealth();
}

bool RdmaTransport::SenderWorks() const {
  return !ports_.empty() && ports_[sender_].ud->failure().empty();
}

void RdmaTransport::UpdateHealth() {
  MutexLock lock(status_mu_);
  healthy_ = SenderWorks();
}

void RdmaTransport::SetError(std::string error) {
  MutexLock lock(status_mu_);
  last_error_ = std::move(error);
}

bool RdmaTransport::Healthy() const {
  MutexLock lock(status_mu_);
  return healthy_;
}

std::string RdmaTransport::LastError() const {
  MutexLock lock(status_mu_);
  return last_error_;
}

void RdmaTransport::PollNow() {
  for (std::size_t i = 0; i < ports_.size(); ++i) Dispatch(i);
}

void RdmaTransport::Dispatch(std::size_t index) {
  events_.clear();
  rdma::UdPort& ud = *ports_[index].ud;
  ud.Poll(&events_);
  if (!ud.failure().empty()) SetError(ud.failure());
  for (rdma::UdEvent& ev : events_) {
    switch (ev.kind) {
      case rdma::UdEvent::Kind::kSent:
        if (ev.cookie != kReplyCookie && handlers_.on_sent) {
          handlers_.on_sent(ev.cookie, ToTimestamp(ev));
        }
        break;
      case rdma::UdEvent::Kind::kSendFailed:
      case rdma::UdEvent::Kind::kDropped:
        // The probe engine counts the probe lost when no answer comes.
        SetError(ev.error);
        break;
      case rdma::UdEvent::Kind::kReceived: {
        Received r;
        r.from.key = SourceKey(ev);
        r.from.rdma.gid = ev.source_gid.value_or(rdma::Gid{});
        r.from.rdma.qpn = ev.source_qpn;
        r.from.rdma.qkey = options_.qkey;
        r.from.rdma.lid = ev.source_lid;
        r.from.rdma.port = static_cast<std::uint8_t>(ud.port().port);
        if (auto it = udp_of_.find(ev.peer); it != udp_of_.end()) {
          r.from.udp = it->second;
        }
        r.rx = ToTimestamp(ev);
        const std::string reply_key =
            r.from.key + "/" + std::to_string(ev.source_qpn);
        if (last_from_.size() >= kMaxSources) last_from_.clear();
        auto& slot = last_from_[reply_key];
        slot.first = index;
        slot.second = std::move(ev);
        r.bytes = slot.second.payload;
        if (handlers_.on_receive) handlers_.on_receive(r);
        break;
      }
    }
  }
  UpdateHealth();
}

bool RdmaTransport::CanReach(const Endpoint& peer) const {
  return SenderWorks() && ports_[sender_].ud->HasPeer(Key(peer));
}

std::optional<Timestamp> RdmaTransport::Send(
    const Endpoint& peer, std::span<const std::uint8_t> packet,
    std::uint64_t tx_id) {
  if (ports_.empty()) return std::nullopt;
  Timestamp t;
  t.software_ns = options_.now_ns();
  if (auto ec = ports_[sender_].ud->Send(Key(peer), packet, tx_id)) {
    SetError(Key(peer) + ": " + ec.message());
    UpdateHealth();
    return std::nullopt;
  }
  return t;
}

bool RdmaTransport::Reply(const Source& to,
                          std::span<const std::uint8_t> packet) {
  auto it = last_from_.find(to.key + "/" + std::to_string(to.rdma.qpn));
  if (it == last_from_.end() || it->second.first >= ports_.size()) {
    return false;
  }
  if (auto ec = ports_[it->second.first].ud->Reply(it->second.second, packet,
                                                   kReplyCookie)) {
    SetError("reply to " + to.key + ": " + ec.message());
    UpdateHealth();
    return false;
  }
  return true;
}

std::optional<RdmaAddress> RdmaTransport::LocalAddress() const {
  if (ports_.empty()) return std::nullopt;
  const rdma::UdPort& ud = *ports_[sender_].ud;
  const rdma::UdAddress a = ud.local();
  RdmaAddress out;
  out.gid = a.gid;
  out.qpn = a.qpn;
  out.qkey = a.qkey;
  out.lid = a.lid;
  out.port = static_cast<std::uint8_t>(ud.port().port);
  return out;
}

void RdmaTransport::SetPeerAddress(const Endpoint& peer,
                                   const RdmaAddress& address) {
  if (ports_.empty()) return;
  std::string error;
  const std::string key = Key(peer);
  if (!ports_[sender_].ud->SetPeer(
          key,
          rdma::UdAddress{address.gid, address.lid, address.qpn, address.qkey},
          &error)) {
    SetError(error);
    return;
  }
  udp_of_[key] = peer;
}

std::vector<std::pair<std::string, std::string>> RdmaTransport::PeerLabels()
    const {
  if (ports_.empty()) return {};
  const rdma::RdmaPort& p = ports_[sender_].ud->port();
  return {{"device", p.device}, {"port", std::to_string(p.port)}};
}

std::string_view RdmaTransport::ClockName() const {
  if (ports_.empty()) return rdma::ClockKindName(rdma::ClockKind::kSoftware);
  return rdma::ClockKindName(ports_[sender_].ud->clock());
}

std::unique_ptr<RdmaTransport> MakeRdmaTransport(
    boost::asio::io_context& io, RdmaTransport::SendingPort sending,
    std::string* error) {
  std::unique_ptr<rdma::VerbsOps> ops = rdma::MakeIbverbsOps();
  if (!ops) {
    *error = "built without rdma-core: no RDMA transport";
    return nullptr;
  }
  std::string why;
  if (rdma::ListRdmaPorts(*ops, &why).empty()) {
    *error = "no active RDMA port" + (why.empty() ? "" : ": " + why);
    return nullptr;
  }
  return std::make_unique<RdmaTransport>(io, std::move(ops),
                                         std::move(sending));
}

}  // namespace fabric::probe
