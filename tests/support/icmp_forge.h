// Forged ICMPv4 errors for the probe's attack tests (issue 40): an ICMP
// error about a UDP flow, from any source, quoting any payload, sent on a
// raw socket (needs CAP_NET_RAW; the netns tests run as root). Anyone on
// the path can send these: they carry no proof of having seen the flow.
// Thread-safety: pure functions plus one socket per call.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace fabric::testing {

// The flow an ICMP error claims to answer, and what it quotes of it.
struct QuotedUdp {
  std::string src, dst;  // IPv4 literals
  std::uint16_t sport = 0, dport = 0;
  std::vector<std::uint8_t> payload;
};

inline std::uint16_t InternetChecksum(std::span<const std::uint8_t> b) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < b.size(); i += 2) {
    sum += static_cast<std::uint32_t>(b[i] << 8 | b[i + 1]);
  }
  if (b.size() % 2) sum += static_cast<std::uint32_t>(b.back() << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

// An IPv4 header (20 bytes) of `total` bytes, protocol `proto`.
inline void PutIpv4(std::vector<std::uint8_t>& out, std::size_t total,
                    std::uint8_t proto, const std::string& src,
                    const std::string& dst, std::uint8_t ttl) {
  const std::size_t at = out.size();
  out.resize(at + 20, 0);
  out[at] = 0x45;
  out[at + 2] = static_cast<std::uint8_t>(total >> 8);
  out[at + 3] = static_cast<std::uint8_t>(total);
  out[at + 6] = 0x40;  // DF
  out[at + 8] = ttl;
  out[at + 9] = proto;
  ::inet_pton(AF_INET, src.c_str(), out.data() + at + 12);
  ::inet_pton(AF_INET, dst.c_str(), out.data() + at + 16);
  const std::uint16_t c =
      InternetChecksum(std::span<const std::uint8_t>(out.data() + at, 20));
  out[at + 10] = static_cast<std::uint8_t>(c >> 8);
  out[at + 11] = static_cast<std::uint8_t>(c);
}

// The whole datagram: IPv4 from `from` to `to`, ICMP `type`/`code`,
// quoting `flow` (its IP and UDP headers and payload).
inline std::vector<std::uint8_t> ForgedIcmp(const std::string& from,
                                            const std::string& to, int type,
                                            int code, const QuotedUdp& flow) {
  const std::size_t quoted = 20 + 8 + flow.payload.size();
  std::vector<std::uint8_t> out;
  PutIpv4(out, 20 + 8 + quoted, IPPROTO_ICMP, from, to, 64);
  const std::size_t icmp = out.size();
  out.resize(icmp + 8, 0);
  out[icmp] = static_cast<std::uint8_t>(type);
  out[icmp + 1] = static_cast<std::uint8_t>(code);
  PutIpv4(out, quoted, IPPROTO_UDP, flow.src, flow.dst, 1);
  const std::size_t udp = out.size();
  out.resize(udp + 8, 0);
  const std::size_t udp_len = 8 + flow.payload.size();
  out[udp] = static_cast<std::uint8_t>(flow.sport >> 8);
  out[udp + 1] = static_cast<std::uint8_t>(flow.sport);
  out[udp + 2] = static_cast<std::uint8_t>(flow.dport >> 8);
  out[udp + 3] = static_cast<std::uint8_t>(flow.dport);
  out[udp + 4] = static_cast<std::uint8_t>(udp_len >> 8);
  out[udp + 5] = static_cast<std::uint8_t>(udp_len);
  out.insert(out.end(), flow.payload.begin(), flow.payload.end());
  const std::uint16_t c = InternetChecksum(
      std::span<const std::uint8_t>(out.data() + icmp, out.size() - icmp));
  out[icmp + 2] = static_cast<std::uint8_t>(c >> 8);
  out[icmp + 3] = static_cast<std::uint8_t>(c);
  return out;
}

// Sends `datagram` (a whole IPv4 packet) `count` times on a raw socket of
// the calling thread's network namespace. False with the reason.
inline bool SendRaw(const std::vector<std::uint8_t>& datagram, int count,
                    std::string* error) {
  const int fd = ::socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
  if (fd < 0) {
    *error = std::string("raw socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  std::memcpy(&to.sin_addr, datagram.data() + 16, 4);
  bool ok = true;
  for (int i = 0; i < count && ok; ++i) {
    if (::sendto(fd, datagram.data(), datagram.size(), 0,
                 reinterpret_cast<const sockaddr*>(&to), sizeof(to)) < 0) {
      *error = std::string("raw sendto: ") + std::strerror(errno);
      ok = false;
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace fabric::testing
