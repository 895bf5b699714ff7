#include "probe/path_trace.h"

#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <openssl/rand.h>

#include <cstring>
#include <random>

namespace fabric::probe {
namespace {

using boost::asio::ip::address;

constexpr std::uint8_t kTraceMagic[4] = {'F', 'M', 'T', 'R'};

// IPv4 addresses as IPv4, whatever socket family carried them.
address Plain(const address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped,
                                            a.to_v6());
  }
  return a;
}

// The address in a sockaddr of `len` bytes at `p`; nullopt when it is
// shorter than its family needs or of another family.
std::optional<Endpoint> EndpointAt(const void* p, std::size_t len) {
  sa_family_t family = AF_UNSPEC;
  if (len < sizeof(family)) return std::nullopt;
  std::memcpy(&family, p, sizeof(family));
  if (family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in in;
    std::memcpy(&in, p, sizeof(in));
    boost::asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), &in.sin_addr, b.size());
    return Endpoint(boost::asio::ip::address_v4(b), ntohs(in.sin_port));
  }
  if (family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 in;
    std::memcpy(&in, p, sizeof(in));
    boost::asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), &in.sin6_addr, b.size());
    return Endpoint(Plain(boost::asio::ip::address_v6(b)), ntohs(in.sin6_port));
  }
  return std::nullopt;
}

IcmpReport::Kind KindOf(bool v6, int type, int code) {
  using Kind = IcmpReport::Kind;
  if (!v6) {
    if (type == ICMP_TIME_EXCEEDED) return Kind::kTimeExceeded;
    if (type == ICMP_DEST_UNREACH) {
      return code == ICMP_PORT_UNREACH ? Kind::kPortUnreachable
                                       : Kind::kUnreachable;
    }
    return Kind::kOther;
  }
  if (type == ICMP6_TIME_EXCEEDED) return Kind::kTimeExceeded;
  if (type == ICMP6_DST_UNREACH) {
    return code == ICMP6_DST_UNREACH_NOPORT ? Kind::kPortUnreachable
                                            : Kind::kUnreachable;
  }
  return Kind::kOther;
}

}  // namespace

std::vector<std::uint8_t> TracePayload(int ttl, std::uint64_t trace_id,
                                       const Hmac& hmac) {
  std::vector<std::uint8_t> out(kTracePayloadBytes, 0);
  std::memcpy(out.data(), kTraceMagic, sizeof(kTraceMagic));
  out[4] = static_cast<std::uint8_t>(ttl);
  for (int i = 0; i < 8; ++i) {
    out[8 + i] = static_cast<std::uint8_t>(trace_id >> (56 - 8 * i));
  }
  const Mac mac =
      hmac.Sign(std::span<const std::uint8_t>(out.data(), kTraceTagBytes));
  std::memcpy(out.data() + kTraceTagBytes, mac.data(), mac.size());
  return out;
}

bool IsTracePayload(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= sizeof(kTraceMagic) &&
         std::memcmp(bytes.data(), kTraceMagic, sizeof(kTraceMagic)) == 0;
}

std::uint64_t RandomTraceId() {
  std::uint64_t id = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof(id)) != 1) {
    std::random_device rd;
    id = (std::uint64_t{rd()} << 32) | rd();
  }
  return id;
}

std::optional<TraceTag> ParseTracePayload(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kTraceTagBytes || !IsTracePayload(bytes)) {
    return std::nullopt;
  }
  TraceTag tag;
  tag.ttl = bytes[4];
  for (int i = 0; i < 8; ++i) tag.trace_id = (tag.trace_id << 8) | bytes[8 + i];
  if (bytes.size() >= kTracePayloadBytes) {
    Mac mac;
    std::memcpy(mac.data(), bytes.data() + kTraceTagBytes, mac.size());
    tag.mac = mac;
  }
  return tag;
}

bool TraceTagAuthentic(const TraceTag& tag, const Hmac& hmac) {
  if (!tag.mac) return true;
  const auto expected = TracePayload(tag.ttl, tag.trace_id, hmac);
  return hmac.Verify(
      std::span<const std::uint8_t>(expected.data(), kTraceTagBytes), *tag.mac);
}

std::optional<IcmpReport> ParseErrorRecord(
    const msghdr& msg, std::span<const std::uint8_t> payload) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    const bool v4 = c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 =
        c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if ((!v4 && !v6) || c->cmsg_len < CMSG_LEN(sizeof(sock_extended_err))) {
      continue;
    }
    sock_extended_err ee;
    std::memcpy(&ee, CMSG_DATA(c), sizeof(ee));
    const bool icmp6 = ee.ee_origin == SO_EE_ORIGIN_ICMP6;
    if (ee.ee_origin != SO_EE_ORIGIN_ICMP && !icmp6) return std::nullopt;
    IcmpReport r;
    r.type = ee.ee_type;
    r.code = ee.ee_code;
    r.error = static_cast<int>(ee.ee_errno);
    r.kind = KindOf(icmp6, r.type, r.code);
    // The offender follows the record (SO_EE_OFFENDER), as long as the
    // control message is.
    const std::size_t data = c->cmsg_len - CMSG_LEN(0);
    if (data > sizeof(ee)) {
      if (auto e = EndpointAt(CMSG_DATA(c) + sizeof(ee), data - sizeof(ee))) {
        r.offender = e->address();
      }
    }
    if (msg.msg_name) r.destination = EndpointAt(msg.msg_name, msg.msg_namelen);
    r.tag = ParseTracePayload(payload);
    return r;
  }
  return std::nullopt;
}

PathTrace::PathTrace(Endpoint peer, std::uint64_t trace_id,
                     TraceOptions options)
    : options_(options), trace_id_(trace_id) {
  result_.peer = peer;
}

PathTrace::Step PathTrace::Start(Clock::time_point now) { return Send(now); }

PathTrace::Step PathTrace::Send(Clock::time_point now) {
  ++tries_;
  deadline_ = now + options_.wait;
  return Step::kSend;
}

PathTrace::Step PathTrace::Finish(bool ok, const std::string& error) {
  result_.ok = ok;
  result_.error = error;
  return Step::kDone;
}

PathTrace::Step PathTrace::OnReport(const IcmpReport& report,
                                    Clock::time_point now) {
  // No tag (a router that quoted 8 bytes, or a forger), or one that is not
  // the current send's (a late answer to an earlier TTL or trace): nothing
  // proves it answers this send.
  if (!report.tag || report.tag->trace_id != trace_id_ ||
      report.tag->ttl != ttl_) {
    return Step::kWait;
  }
  const std::string at = " at hop " + std::to_string(ttl_);
  const std::string from =
      report.offender ? " from " + report.offender->to_string() : "";
  switch (report.kind) {
    case IcmpReport::Kind::kTimeExceeded:
      if (!report.offender) return Finish(false, "no router address" + at);
      result_.hops.push_back(Plain(*report.offender));
      ++ttl_;
      tries_ = 0;
      if (ttl_ > options_.max_hops) {
        return Finish(false, "peer not reached within " +
                                 std::to_string(options_.max_hops) + " hops");
      }
      return Send(now);
    case IcmpReport::Kind::kPortUnreachable:
      // The peer itself (no responder there now): its path is known.
      if (!report.offender ||
          Plain(*report.offender) == result_.peer.address()) {
        return Finish(true, "");
      }
      return Finish(false, "port unreachable" + from + at);
    case IcmpReport::Kind::kUnreachable:
      return Finish(false, "unreachable (ICMP type " +
                               std::to_string(report.type) + " code " +
                               std::to_string(report.code) + ")" + from + at);
    case IcmpReport::Kind::kOther:
      break;
  }
  return Step::kWait;
}

PathTrace::Step PathTrace::OnTimeout(Clock::time_point now) {
  if (tries_ < options_.tries) return Send(now);
  // No router answered this TTL `tries` times: the datagram reached the
  // peer (which answers trace datagrams with silence).
  return Finish(true, "");
}

PathTrace::Step PathTrace::OnSendFailed(const std::string& why) {
  return Finish(false, "send at hop " + std::to_string(ttl_) + ": " + why);
}

PathTracer::PathTracer(boost::asio::io_context& io, SendFn send,
                       TraceOptions options, Hmac hmac)
    : io_(io),
      send_(std::move(send)),
      options_(options),
      hmac_(std::move(hmac)) {}

bool PathTracer::Trace(const Endpoint& peer, DoneFn done) {
  if (running_.count(peer)) return false;
  auto run = std::make_unique<Running>(
      Running{PathTrace(peer, RandomTraceId(), options_), std::move(done),
              boost::asio::steady_timer(io_)});
  const auto step = run->trace.Start(PathTrace::Clock::now());
  running_.emplace(peer, std::move(run));
  Do(peer, step);
  return true;
}

void PathTracer::OnReport(const IcmpReport& report) {
  if (!report.destination) return;
  auto it = running_.find(*report.destination);
  if (it == running_.end()) return;
  const PathTrace& trace = it->second->trace;
  if (!report.tag || report.tag->trace_id != trace.trace_id() ||
      !TraceTagAuthentic(*report.tag, hmac_)) {
    // Not an answer to this trace (a late one to an earlier trace quotes
    // its own id and MAC: not counted).
    if (!report.tag || !TraceTagAuthentic(*report.tag, hmac_)) ++unverified_;
    return;
  }
  Do(it->first, it->second->trace.OnReport(report, PathTrace::Clock::now()));
}

void PathTracer::Stop() { running_.clear(); }

void PathTracer::Do(const Endpoint& peer_ref, PathTrace::Step step) {
  const Endpoint peer = peer_ref;  // the map key may go
  auto it = running_.find(peer);
  if (it == running_.end()) return;
  Running& run = *it->second;
  while (step == PathTrace::Step::kSend) {
    std::string error;
    const auto payload =
        TracePayload(run.trace.ttl(), run.trace.trace_id(), hmac_);
    step = send_(peer, payload, run.trace.ttl(), &error)
               ? PathTrace::Step::kWait
               : run.trace.OnSendFailed(error);
  }
  if (step == PathTrace::Step::kDone) {
    auto done = std::move(run.done);
    PathResult result = run.trace.result();
    running_.erase(it);  // cancels its timer
    if (done) done(result);
    return;
  }
  run.timer.expires_at(run.trace.deadline());
  std::weak_ptr<PathTracer> weak = weak_from_this();
  const std::uint64_t id = run.trace.trace_id();
  run.timer.async_wait([weak, peer, id](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    auto it = self->running_.find(peer);
    if (it == self->running_.end() || it->second->trace.trace_id() != id) {
      return;
    }
    // A wait that completed just as an answer re-armed the timer.
    if (PathTrace::Clock::now() < it->second->trace.deadline()) return;
    self->Do(peer, it->second->trace.OnTimeout(PathTrace::Clock::now()));
  });
}

}  // namespace fabric::probe
