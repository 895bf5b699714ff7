#include "sources/ethtool_netlink.h"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sources/roce_netlink_attrs.h"

namespace fabric {
namespace {

using nl::Align4;
using nl::Attr;
using nl::SplitAttrs;

// More lanes than any link has (ETHTOOL_MAX_LANES is 8): a longer array is
// a malformed reply, not allocated.
constexpr std::size_t kMaxFecEntries = 1 + 16;

// Builds one generic netlink request: header, genlmsghdr, attributes.
class Request {
 public:
  Request(std::uint16_t type, std::uint8_t cmd, std::uint8_t version,
          std::uint32_t seq) {
    buf_.resize(NLMSG_HDRLEN + GENL_HDRLEN, 0);
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = NLM_F_REQUEST;
    h.nlmsg_seq = seq;
    std::memcpy(buf_.data(), &h, sizeof(h));
    genlmsghdr g{};
    g.cmd = cmd;
    g.version = version;
    std::memcpy(buf_.data() + NLMSG_HDRLEN, &g, sizeof(g));
  }
  void Put(std::uint16_t type, const void* data, std::size_t len) {
    const std::size_t at = buf_.size();
    buf_.resize(at + Align4(sizeof(nlattr) + len), 0);
    nlattr a{};
    a.nla_len = static_cast<std::uint16_t>(sizeof(nlattr) + len);
    a.nla_type = type;
    std::memcpy(buf_.data() + at, &a, sizeof(a));
    if (len) std::memcpy(buf_.data() + at + sizeof(a), data, len);
  }
  void PutString(std::uint16_t type, std::string_view s) {
    std::string z(s.substr(0, IFNAMSIZ - 1));
    Put(type, z.c_str(), z.size() + 1);
  }
  void PutU32(std::uint16_t type, std::uint32_t v) { Put(type, &v, sizeof(v)); }
  void PutU8(std::uint16_t type, std::uint8_t v) { Put(type, &v, sizeof(v)); }
  std::size_t BeginNest(std::uint16_t type) {
    const std::size_t at = buf_.size();
    Put(static_cast<std::uint16_t>(type | NLA_F_NESTED), nullptr, 0);
    return at;
  }
  void EndNest(std::size_t at) {
    const auto len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof(len));
  }
  std::vector<std::uint8_t> Finish() {
    const auto len = static_cast<std::uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, sizeof(len));
    return std::move(buf_);
  }

 private:
  std::vector<std::uint8_t> buf_;
};

// The ethtool request header nest: the netdev by name, and flags.
void PutHeader(Request& r, std::uint16_t type, std::string_view ifname,
               std::uint32_t flags) {
  const std::size_t nest = r.BeginNest(type);
  r.PutString(ETHTOOL_A_HEADER_DEV_NAME, ifname);
  if (flags) r.PutU32(ETHTOOL_A_HEADER_FLAGS, flags);
  r.EndNest(nest);
}

// Checks the netlink and genetlink headers of a reply and splits its
// attributes; the error for NLMSG_ERROR or a malformed message.
std::error_code Split(std::span<const std::uint8_t> bytes,
                      std::vector<Attr>& attrs, std::uint8_t* cmd) {
  nlmsghdr h;
  if (bytes.size() < sizeof(h)) return ErrnoError(EBADMSG);
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > bytes.size()) {
    return ErrnoError(EBADMSG);
  }
  auto body = bytes.subspan(NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
  if (h.nlmsg_type == NLMSG_ERROR) {
    std::int32_t error;
    if (body.size() < sizeof(error)) return ErrnoError(EBADMSG);
    std::memcpy(&error, body.data(), sizeof(error));
    // The kernel's errors are -1..-4095; 0 (an ACK alone) answers no get.
    return ErrnoError(error < 0 && error >= -4095 ? -error : EBADMSG);
  }
  if (h.nlmsg_type < NLMSG_MIN_TYPE || body.size() < GENL_HDRLEN) {
    return ErrnoError(EBADMSG);
  }
  genlmsghdr g;
  std::memcpy(&g, body.data(), sizeof(g));
  *cmd = g.cmd;
  if (!SplitAttrs(body.subspan(GENL_HDRLEN), attrs)) {
    return ErrnoError(EBADMSG);
  }
  return {};
}

std::optional<std::uint32_t> U32(const Attr& a) {
  if (a.payload.size() < sizeof(std::uint32_t)) return std::nullopt;
  std::uint32_t v;
  std::memcpy(&v, a.payload.data(), sizeof(v));
  return v;
}

std::string FecModeName(std::uint32_t link_mode_bit) {
  switch (link_mode_bit) {
    case ETHTOOL_LINK_MODE_FEC_NONE_BIT:
      return "none";
    case ETHTOOL_LINK_MODE_FEC_RS_BIT:
      return "rs";
    case ETHTOOL_LINK_MODE_FEC_BASER_BIT:
      return "baser";
    case ETHTOOL_LINK_MODE_FEC_LLRS_BIT:
      return "llrs";
    default:
      return "mode" + std::to_string(link_mode_bit);
  }
}

// An array of u64: the total, then per lane. Empty (the driver counts
// nothing) is absent; a size that is not a whole number of u64 or longer
// than any link is malformed.
std::optional<FecCounter> FecArray(const Attr& a, bool* bad) {
  const std::size_t n = a.payload.size() / sizeof(std::uint64_t);
  if (a.payload.size() % sizeof(std::uint64_t) != 0 || n > kMaxFecEntries) {
    *bad = true;
    return std::nullopt;
  }
  if (n == 0) return std::nullopt;
  std::vector<std::uint64_t> v(n);
  std::memcpy(v.data(), a.payload.data(), n * sizeof(std::uint64_t));
  FecCounter c;
  c.total = v[0];
  c.lanes.assign(v.begin() + 1, v.end());
  return c;
}

}  // namespace

std::vector<std::uint8_t> EncodeGenlFamilyGet(std::string_view name,
                                              std::uint32_t seq) {
  Request r(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, seq);
  std::string z(name);
  r.Put(CTRL_ATTR_FAMILY_NAME, z.c_str(), z.size() + 1);
  return r.Finish();
}

Result<std::uint16_t> DecodeGenlFamilyReply(
    std::span<const std::uint8_t> bytes) {
  std::vector<Attr> attrs;
  std::uint8_t cmd = 0;
  if (auto e = Split(bytes, attrs, &cmd)) return e;
  for (const Attr& a : attrs) {
    if (a.type == CTRL_ATTR_FAMILY_ID && a.payload.size() >= 2) {
      std::uint16_t id;
      std::memcpy(&id, a.payload.data(), sizeof(id));
      return id;
    }
  }
  return ErrnoError(EBADMSG);
}

std::vector<std::uint8_t> EncodeFecGet(std::uint16_t family,
                                       std::string_view ifname,
                                       std::uint32_t seq) {
  Request r(family, ETHTOOL_MSG_FEC_GET, ETHTOOL_GENL_VERSION, seq);
  PutHeader(r, ETHTOOL_A_FEC_HEADER, ifname, ETHTOOL_FLAG_STATS);
  return r.Finish();
}

EthtoolFecResult DecodeFecReply(std::span<const std::uint8_t> bytes) {
  std::vector<Attr> attrs;
  std::uint8_t cmd = 0;
  if (auto e = Split(bytes, attrs, &cmd)) return e;
  if (cmd != ETHTOOL_MSG_FEC_GET_REPLY) return ErrnoError(EBADMSG);
  EthtoolFec fec;
  for (const Attr& a : attrs) {
    if (a.type == ETHTOOL_A_FEC_ACTIVE) {
      if (auto v = U32(a)) fec.active_mode = FecModeName(*v);
    } else if (a.type == ETHTOOL_A_FEC_STATS) {
      std::vector<Attr> stats;
      if (!SplitAttrs(a.payload, stats)) return ErrnoError(EBADMSG);
      bool bad = false;
      for (const Attr& s : stats) {
        switch (s.type) {
          case ETHTOOL_A_FEC_STAT_CORRECTED:
            fec.corrected_blocks = FecArray(s, &bad);
            break;
          case ETHTOOL_A_FEC_STAT_UNCORR:
            fec.uncorrectable_blocks = FecArray(s, &bad);
            break;
          case ETHTOOL_A_FEC_STAT_CORR_BITS:
            fec.corrected_bits = FecArray(s, &bad);
            break;
          default:
            break;  // ETHTOOL_A_FEC_STAT_PAD, newer histograms
        }
      }
      if (bad) return ErrnoError(EBADMSG);
    }
  }
  return fec;
}

std::vector<std::uint8_t> EncodeModuleEepromGet(std::uint16_t family,
                                                std::string_view ifname,
                                                const EepromRequest& request,
                                                std::uint32_t seq) {
  Request r(family, ETHTOOL_MSG_MODULE_EEPROM_GET, ETHTOOL_GENL_VERSION, seq);
  PutHeader(r, ETHTOOL_A_MODULE_EEPROM_HEADER, ifname, 0);
  r.PutU32(ETHTOOL_A_MODULE_EEPROM_OFFSET, request.offset);
  r.PutU32(ETHTOOL_A_MODULE_EEPROM_LENGTH, request.length);
  r.PutU8(ETHTOOL_A_MODULE_EEPROM_PAGE, request.page);
  r.PutU8(ETHTOOL_A_MODULE_EEPROM_BANK, request.bank);
  r.PutU8(ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS, request.i2c_address);
  return r.Finish();
}

EepromBytesResult DecodeModuleEepromReply(std::span<const std::uint8_t> bytes) {
  std::vector<Attr> attrs;
  std::uint8_t cmd = 0;
  if (auto e = Split(bytes, attrs, &cmd)) return e;
  if (cmd != ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY) return ErrnoError(EBADMSG);
  for (const Attr& a : attrs) {
    if (a.type == ETHTOOL_A_MODULE_EEPROM_DATA) {
      return std::vector<std::uint8_t>(a.payload.begin(), a.payload.end());
    }
  }
  return ErrnoError(EBADMSG);
}

EthtoolNetlink::EthtoolNetlink() {
  fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd_ < 0) {
    error_ = ErrnoError(errno);
    return;
  }
  // A kernel that never answers must not hang the collector.
  timeval tv{0, 500 * 1000};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

EthtoolNetlink::~EthtoolNetlink() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<std::uint8_t>> EthtoolNetlink::Transact(
    const std::vector<std::uint8_t>& request, std::uint32_t seq) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = ::sendto(fd_, request.data(), request.size(), 0,
                    reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel));
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return ErrnoError(errno);
  std::vector<std::uint8_t> buf(16 * 1024);
  // Skip stale replies to an earlier request that timed out.
  for (int tries = 0; tries < 8; ++tries) {
    ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno == EAGAIN ? ETIMEDOUT : errno);
    }
    nlmsghdr h;
    if (static_cast<std::size_t>(n) >= sizeof(h)) {
      std::memcpy(&h, buf.data(), sizeof(h));
      if (h.nlmsg_seq != seq) continue;
    }
    buf.resize(static_cast<std::size_t>(n));
    return buf;
  }
  return ErrnoError(EBADMSG);
}

std::error_code EthtoolNetlink::Family() {
  if (fd_ < 0) return error_;
  if (family_) return {};
  const std::uint32_t seq = ++seq_;
  auto reply = Transact(EncodeGenlFamilyGet(ETHTOOL_GENL_NAME, seq), seq);
  if (!reply.ok()) return reply.error();
  auto id = DecodeGenlFamilyReply(*reply);
  if (!id.ok()) return id.error();  // ENOENT: no ethtool netlink here
  family_ = *id;
  return {};
}

EthtoolFecResult EthtoolNetlink::Fec(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) return ErrnoError(EINVAL);
  if (auto e = Family()) return e;
  const std::uint32_t seq = ++seq_;
  auto reply = Transact(EncodeFecGet(*family_, netdev, seq), seq);
  if (!reply.ok()) return reply.error();
  return DecodeFecReply(*reply);
}

EepromBytesResult EthtoolNetlink::ModuleEeprom(const std::string& netdev,
                                               const EepromRequest& request) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) return ErrnoError(EINVAL);
  if (auto e = Family()) return e;
  const std::uint32_t seq = ++seq_;
  auto reply =
      Transact(EncodeModuleEepromGet(*family_, netdev, request, seq), seq);
  if (!reply.ok()) return reply.error();
  return DecodeModuleEepromReply(*reply);
}

namespace {

class NetlinkFecSource final : public FecSource {
 public:
  EthtoolFecResult Fec(const std::string& netdev) override {
    return nl_.Fec(netdev);
  }

 private:
  EthtoolNetlink nl_;
};

}  // namespace

std::unique_ptr<FecSource> MakeRealFecSource() {
  return std::make_unique<NetlinkFecSource>();
}

}  // namespace fabric
