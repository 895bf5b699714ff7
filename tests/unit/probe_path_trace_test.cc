// probe/path_trace.h on bytes and events: error-queue records as the kernel
// lays them out (IP_RECVERR with a sockaddr_in offender, IPV6_RECVERR with
// a v4-mapped or IPv6 one), hostile records (short, other origins), the
// trace payload, and the per-peer state machine (hops in order, silence as
// the end, stale answers ignored, unreachable and too many hops as errors).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>

#include <array>
#include <cstring>

#include "probe/path_trace.h"

namespace fabric::probe {
namespace {

using boost::asio::ip::make_address;
using Clock = PathTrace::Clock;

const Hmac& TestHmac() {
  static const Hmac hmac(Key(32, 7));
  return hmac;
}

// One error-queue record, laid out as recvmsg(MSG_ERRQUEUE) fills it.
struct Record {
  alignas(cmsghdr) std::array<char, 256> control{};
  sockaddr_storage name{};
  msghdr msg{};

  static sock_extended_err Ee(std::uint8_t origin, int type, int code) {
    sock_extended_err ee{};
    ee.ee_errno = EHOSTUNREACH;
    ee.ee_origin = origin;
    ee.ee_type = static_cast<std::uint8_t>(type);
    ee.ee_code = static_cast<std::uint8_t>(code);
    return ee;
  }

  // An IPv4 record: ICMP `type`/`code` from `offender` about a datagram to
  // `dest`:`port`. `offender_len` cuts the offender short (0: none).
  static Record V4(int type, int code, const char* offender, const char* dest,
                   int port, std::size_t offender_len = sizeof(sockaddr_in)) {
    Record r;
    sock_extended_err ee = Ee(SO_EE_ORIGIN_ICMP, type, code);
    sockaddr_in off{};
    off.sin_family = AF_INET;
    ::inet_pton(AF_INET, offender, &off.sin_addr);
    r.Put(IPPROTO_IP, IP_RECVERR, ee, &off, offender_len);
    auto* to = reinterpret_cast<sockaddr_in*>(&r.name);
    to->sin_family = AF_INET;
    to->sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, dest, &to->sin_addr);
    r.msg.msg_namelen = sizeof(sockaddr_in);
    return r;
  }

  // A dual-stack socket's record: IPV6_RECVERR with sockaddr_in6s.
  static Record V6(std::uint8_t origin, int type, int code,
                   const char* offender, const char* dest, int port) {
    Record r;
    sock_extended_err ee = Ee(origin, type, code);
    sockaddr_in6 off{};
    off.sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, offender, &off.sin6_addr);
    r.Put(IPPROTO_IPV6, IPV6_RECVERR, ee, &off, sizeof(off));
    auto* to = reinterpret_cast<sockaddr_in6*>(&r.name);
    to->sin6_family = AF_INET6;
    to->sin6_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET6, dest, &to->sin6_addr);
    r.msg.msg_namelen = sizeof(sockaddr_in6);
    return r;
  }

  void Put(int level, int type, const sock_extended_err& ee, const void* off,
           std::size_t off_len) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(ee) + off_len);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(sizeof(ee) + off_len);
    std::memcpy(CMSG_DATA(c), &ee, sizeof(ee));
    std::memcpy(CMSG_DATA(c) + sizeof(ee), off, off_len);
  }

  // msg_name must point at this record's own storage (copies move it).
  const msghdr& Msg() {
    msg.msg_name = &name;
    msg.msg_control = control.data();
    return msg;
  }
};

TEST(PathTracePayload, RoundTripsAndRejectsOthers) {
  auto p = TracePayload(7, 0xdeadbeef01234567, TestHmac());
  ASSERT_EQ(p.size(), kTracePayloadBytes);
  EXPECT_TRUE(IsTracePayload(p));
  auto tag = ParseTracePayload(p);
  ASSERT_TRUE(tag);
  EXPECT_EQ(tag->ttl, 7);
  EXPECT_EQ(tag->trace_id, 0xdeadbeef01234567u);
  ASSERT_TRUE(tag->mac);
  EXPECT_TRUE(TraceTagAuthentic(*tag, TestHmac()));
  // Another key's MAC, or a changed TTL or id under ours: not ours.
  EXPECT_FALSE(TraceTagAuthentic(*tag, Hmac(Key(32, 8))));
  auto bent = *tag;
  bent.ttl = 8;
  EXPECT_FALSE(TraceTagAuthentic(bent, TestHmac()));
  // A quote cut before the MAC: the tag alone (its id unguessable).
  auto cut = ParseTracePayload(std::span(p).first(kTraceTagBytes));
  ASSERT_TRUE(cut);
  EXPECT_FALSE(cut->mac);
  EXPECT_TRUE(TraceTagAuthentic(*cut, TestHmac()));
  // Truncated by a router that quoted 8 bytes: no tag, still a trace.
  EXPECT_FALSE(ParseTracePayload(std::span(p).first(8)));
  EXPECT_TRUE(IsTracePayload(std::span(p).first(8)));
  const std::uint8_t probe[] = {'F', 'M', 'P', 'B', 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE(IsTracePayload(probe));
  EXPECT_FALSE(IsTracePayload({}));
}

TEST(ParseErrorRecord, Ipv4TimeExceededNamesRouterAndDestination) {
  auto rec = Record::V4(ICMP_TIME_EXCEEDED, 0, "10.9.0.2", "10.0.2.1", 10916);
  auto payload = TracePayload(2, 5, TestHmac());
  auto r = ParseErrorRecord(rec.Msg(), payload);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, IcmpReport::Kind::kTimeExceeded);
  ASSERT_TRUE(r->offender);
  EXPECT_EQ(r->offender->to_string(), "10.9.0.2");
  ASSERT_TRUE(r->destination);
  EXPECT_EQ(r->destination->address().to_string(), "10.0.2.1");
  EXPECT_EQ(r->destination->port(), 10916);
  ASSERT_TRUE(r->tag);
  EXPECT_EQ(r->tag->ttl, 2);
  EXPECT_EQ(r->error, EHOSTUNREACH);
}

TEST(ParseErrorRecord, PortAndOtherUnreachable) {
  auto port = Record::V4(ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, "10.0.2.1",
                         "10.0.2.1", 10916);
  EXPECT_EQ(ParseErrorRecord(port.Msg(), {})->kind,
            IcmpReport::Kind::kPortUnreachable);
  auto host = Record::V4(ICMP_DEST_UNREACH, ICMP_HOST_UNREACH, "10.0.1.254",
                         "10.0.2.1", 10916);
  EXPECT_EQ(ParseErrorRecord(host.Msg(), {})->kind,
            IcmpReport::Kind::kUnreachable);
  auto other = Record::V4(ICMP_REDIRECT, 0, "10.0.1.254", "10.0.2.1", 10916);
  EXPECT_EQ(ParseErrorRecord(other.Msg(), {})->kind, IcmpReport::Kind::kOther);
}

TEST(ParseErrorRecord, DualStackRecordsShowIpv4Plainly) {
  auto rec = Record::V6(SO_EE_ORIGIN_ICMP, ICMP_TIME_EXCEEDED, 0,
                        "::ffff:10.9.0.2", "::ffff:10.0.2.1", 10916);
  auto r = ParseErrorRecord(rec.Msg(), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, IcmpReport::Kind::kTimeExceeded);
  EXPECT_EQ(r->offender->to_string(), "10.9.0.2");
  EXPECT_EQ(r->destination->address().to_string(), "10.0.2.1");
  EXPECT_FALSE(r->tag);

  auto v6 = Record::V6(SO_EE_ORIGIN_ICMP6, ICMP6_TIME_EXCEEDED, 0, "fd00::1",
                       "fd00:2::1", 10916);
  auto r6 = ParseErrorRecord(v6.Msg(), {});
  ASSERT_TRUE(r6);
  EXPECT_EQ(r6->kind, IcmpReport::Kind::kTimeExceeded);
  EXPECT_EQ(r6->offender->to_string(), "fd00::1");
  auto port6 =
      Record::V6(SO_EE_ORIGIN_ICMP6, ICMP6_DST_UNREACH,
                 ICMP6_DST_UNREACH_NOPORT, "fd00:2::1", "fd00:2::1", 10916);
  EXPECT_EQ(ParseErrorRecord(port6.Msg(), {})->kind,
            IcmpReport::Kind::kPortUnreachable);
}

TEST(ParseErrorRecord, HostileRecords) {
  // No offender room: a report without a router address, no crash.
  auto cut =
      Record::V4(ICMP_TIME_EXCEEDED, 0, "10.9.0.2", "10.0.2.1", 10916, 4);
  auto r = ParseErrorRecord(cut.Msg(), {});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->offender);
  // A local error (not ICMP): not a report.
  auto local = Record::V4(ICMP_TIME_EXCEEDED, 0, "10.9.0.2", "10.0.2.1", 1);
  reinterpret_cast<sock_extended_err*>(CMSG_DATA(CMSG_FIRSTHDR(&local.Msg())))
      ->ee_origin = SO_EE_ORIGIN_LOCAL;
  EXPECT_FALSE(ParseErrorRecord(local.Msg(), {}));
  // A control message too short for the record.
  auto shortc = Record::V4(ICMP_TIME_EXCEEDED, 0, "10.9.0.2", "10.0.2.1", 1);
  CMSG_FIRSTHDR(&shortc.Msg())->cmsg_len = CMSG_LEN(4);
  EXPECT_FALSE(ParseErrorRecord(shortc.Msg(), {}));
  // No control messages at all, no name.
  msghdr empty{};
  EXPECT_FALSE(ParseErrorRecord(empty, {}));
}

IcmpReport Exceeded(const char* router, int ttl, std::uint64_t id) {
  IcmpReport r;
  r.kind = IcmpReport::Kind::kTimeExceeded;
  r.offender = make_address(router);
  r.tag = TraceTag{ttl, id, std::nullopt};
  return r;
}

TEST(PathTrace, HopsInOrderThenSilenceEnds) {
  const Endpoint peer(make_address("10.0.2.1"), 10916);
  TraceOptions o;
  o.tries = 2;
  PathTrace t(peer, 9, o);
  auto now = Clock::now();
  ASSERT_EQ(t.Start(now), PathTrace::Step::kSend);
  EXPECT_EQ(t.ttl(), 1);
  EXPECT_EQ(t.OnReport(Exceeded("10.0.1.254", 1, 9), now),
            PathTrace::Step::kSend);
  // A late answer to TTL 1 (or another trace) changes nothing.
  EXPECT_EQ(t.OnReport(Exceeded("10.9.9.9", 1, 9), now),
            PathTrace::Step::kWait);
  EXPECT_EQ(t.OnReport(Exceeded("10.9.9.9", 2, 8), now),
            PathTrace::Step::kWait);
  // A timeout, then the answer to the retry.
  EXPECT_EQ(t.OnTimeout(now), PathTrace::Step::kSend);
  // Issue 40: an error that quotes no tag (a forger, or a router that
  // quoted 8 bytes) proves nothing and changes nothing.
  IcmpReport untagged = Exceeded("10.66.6.6", 0, 0);
  untagged.tag.reset();
  EXPECT_EQ(t.OnReport(untagged, now), PathTrace::Step::kWait);
  EXPECT_EQ(t.OnReport(Exceeded("10.9.0.2", 2, 9), now),
            PathTrace::Step::kSend);
  EXPECT_EQ(t.OnReport(Exceeded("10.0.2.254", 3, 9), now),
            PathTrace::Step::kSend);
  EXPECT_EQ(t.OnTimeout(now), PathTrace::Step::kSend);
  EXPECT_EQ(t.OnTimeout(now), PathTrace::Step::kDone);
  ASSERT_TRUE(t.result().ok);
  ASSERT_EQ(t.result().hops.size(), 3u);
  EXPECT_EQ(t.result().hops[0].to_string(), "10.0.1.254");
  EXPECT_EQ(t.result().hops[1].to_string(), "10.9.0.2");
  EXPECT_EQ(t.result().hops[2].to_string(), "10.0.2.254");
}

TEST(PathTrace, EndsAndFails) {
  const Endpoint peer(make_address("10.0.2.1"), 10916);
  auto now = Clock::now();
  {
    PathTrace t(peer, 1, {});
    t.Start(now);
    IcmpReport port;
    port.kind = IcmpReport::Kind::kPortUnreachable;
    port.offender = make_address("10.0.2.1");
    // Untagged: ignored; tagged: the end.
    EXPECT_EQ(t.OnReport(port, now), PathTrace::Step::kWait);
    port.tag = TraceTag{1, 1, std::nullopt};
    EXPECT_EQ(t.OnReport(port, now), PathTrace::Step::kDone);
    EXPECT_TRUE(t.result().ok);
    EXPECT_TRUE(t.result().hops.empty());
  }
  {
    PathTrace t(peer, 1, {});
    t.Start(now);
    IcmpReport host;
    host.kind = IcmpReport::Kind::kUnreachable;
    host.type = 3;
    host.code = 1;
    host.offender = make_address("10.0.1.254");
    host.tag = TraceTag{1, 1, std::nullopt};
    EXPECT_EQ(t.OnReport(host, now), PathTrace::Step::kDone);
    EXPECT_FALSE(t.result().ok);
    EXPECT_NE(t.result().error.find("10.0.1.254"), std::string::npos);
  }
  {
    TraceOptions o;
    o.max_hops = 2;
    PathTrace t(peer, 1, o);
    t.Start(now);
    t.OnReport(Exceeded("10.0.0.1", 1, 1), now);
    EXPECT_EQ(t.OnReport(Exceeded("10.0.0.2", 2, 1), now),
              PathTrace::Step::kDone);
    EXPECT_FALSE(t.result().ok);
  }
  {
    PathTrace t(peer, 1, {});
    t.Start(now);
    IcmpReport anonymous;
    anonymous.kind = IcmpReport::Kind::kTimeExceeded;
    anonymous.tag = TraceTag{1, 1, std::nullopt};
    EXPECT_EQ(t.OnReport(anonymous, now), PathTrace::Step::kDone);
    EXPECT_FALSE(t.result().ok);
    EXPECT_EQ(t.OnSendFailed("x"), PathTrace::Step::kDone);
  }
}

// The driver sends only to the traced peer, with rising TTLs, and reports
// once.
TEST(PathTracer, DrivesSendsAndReportsOnce) {
  boost::asio::io_context io;
  const Endpoint peer(make_address("10.0.2.1"), 10916);
  std::vector<int> ttls;
  std::shared_ptr<PathTracer> tracer;
  tracer = std::make_shared<PathTracer>(
      io,
      [&](const Endpoint& to, std::span<const std::uint8_t> payload, int ttl,
          std::string*) {
        EXPECT_EQ(to, peer);
        auto tag = ParseTracePayload(payload);
        EXPECT_TRUE(tag && tag->ttl == ttl);
        ttls.push_back(ttl);
        if (ttl == 1) {
          // The router answers at once (re-entrantly, as a drained error
          // queue could).
          IcmpReport r = Exceeded("10.0.1.254", 1, tag->trace_id);
          r.tag = tag;  // quoted whole, MAC and all
          r.destination = peer;
          boost::asio::post(io, [&tracer, r] { tracer->OnReport(r); });
        }
        return true;
      },
      TraceOptions{4, 2, std::chrono::milliseconds(1)}, TestHmac());
  int done = 0;
  PathResult result;
  ASSERT_TRUE(tracer->Trace(peer, [&](const PathResult& r) {
    ++done;
    result = r;
  }));
  EXPECT_FALSE(tracer->Trace(peer, nullptr));
  io.run();
  EXPECT_EQ(done, 1);
  EXPECT_TRUE(result.ok);
  ASSERT_EQ(result.hops.size(), 1u);
  EXPECT_EQ(ttls, (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(tracer->running(), 0u);
}

// Issue 40: forged ICMP errors about a traced flow (no tag, a guessed id,
// another key's MAC, a replayed old trace's tag) never become hops; trace
// ids are random, not counted up.
TEST(PathTracer, ForgedErrorsDoNotWriteAPath) {
  boost::asio::io_context io;
  const Endpoint peer(make_address("10.0.2.1"), 10916);
  std::vector<std::uint64_t> ids;
  std::shared_ptr<PathTracer> tracer;
  const Hmac other(Key(32, 9));
  tracer = std::make_shared<PathTracer>(
      io,
      [&](const Endpoint&, std::span<const std::uint8_t> payload, int ttl,
          std::string*) {
        auto tag = ParseTracePayload(payload);
        EXPECT_TRUE(tag && tag->mac && TraceTagAuthentic(*tag, TestHmac()));
        ids.push_back(tag->trace_id);
        if (ttl != 1) return true;
        auto forge = [&](std::optional<TraceTag> t) {
          IcmpReport r = Exceeded("10.66.6.6", 1, 0);
          r.tag = t;
          r.destination = peer;
          boost::asio::post(io, [&tracer, r] { tracer->OnReport(r); });
        };
        forge(std::nullopt);                                  // no tag
        forge(TraceTag{1, tag->trace_id + 1, std::nullopt});  // guessed id
        auto wrong = ParseTracePayload(TracePayload(1, tag->trace_id, other));
        forge(wrong);  // the right id, another key's MAC
        return true;
      },
      TraceOptions{3, 2, std::chrono::milliseconds(5)}, TestHmac());
  PathResult result;
  int done = 0;
  ASSERT_TRUE(tracer->Trace(peer, [&](const PathResult& r) {
    ++done;
    result = r;
  }));
  io.run();
  ASSERT_EQ(done, 1);
  EXPECT_TRUE(result.ok);
  EXPECT_TRUE(result.hops.empty()) << result.hops[0].to_string();
  // Two sends at TTL 1 (silence), three forgeries each, two counted (the
  // guessed id is simply not this trace's).
  EXPECT_EQ(tracer->unverified(), 4u);
  // A second trace: a fresh random id, not the first one plus one.
  io.restart();
  ASSERT_TRUE(tracer->Trace(peer, [](const PathResult&) {}));
  io.run();
  ASSERT_GE(ids.size(), 3u);
  EXPECT_NE(ids.back(), ids.front());
  EXPECT_NE(ids.back(), ids.front() + 1);
  EXPECT_NE(ids.front(), 1u);
}

}  // namespace
}  // namespace fabric::probe
