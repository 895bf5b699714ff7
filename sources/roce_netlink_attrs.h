// Bounds-checked splitting of a netlink attribute stream, shared by the DCB
// (rtnetlink) and RDMA (NETLINK_RDMA) decoders. Pure; thread-safe.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace fabric::nl {

inline constexpr std::size_t Align4(std::size_t n) {
  return (n + 3) & ~std::size_t{3};
}

struct Attr {
  std::uint16_t type;  // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
  std::span<const std::uint8_t> payload;
};

// Splits `buf` into attributes. Returns false when a header or length runs
// past the buffer or is shorter than a header (truncated or hostile input);
// `out` then holds the attributes before the bad one.
inline bool SplitAttrs(std::span<const std::uint8_t> buf,
                       std::vector<Attr>& out) {
  while (buf.size() >= sizeof(nlattr)) {
    nlattr h;
    std::memcpy(&h, buf.data(), sizeof(h));
    if (h.nla_len < sizeof(nlattr) || h.nla_len > buf.size()) return false;
    out.push_back({static_cast<std::uint16_t>(h.nla_type & NLA_TYPE_MASK),
                   buf.subspan(sizeof(nlattr), h.nla_len - sizeof(nlattr))});
    buf = buf.subspan(std::min(Align4(h.nla_len), buf.size()));
  }
  return buf.empty();  // trailing bytes shorter than a header = truncated
}

}  // namespace fabric::nl
