#include "sources/roce_rdma_netlink.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sources/roce_netlink_attrs.h"

namespace fabric {
namespace {

using nl::Align4;
using nl::Attr;
using nl::SplitAttrs;

std::error_code Errno(int e) { return {e, std::system_category()}; }

constexpr std::uint16_t kGetType =
    RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
constexpr std::uint16_t kStatType =
    RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET);

void PutU32Attr(std::vector<std::uint8_t>& buf, std::uint16_t type,
                std::uint32_t v) {
  nlattr a{static_cast<std::uint16_t>(sizeof(nlattr) + sizeof(v)), type};
  std::size_t at = buf.size();
  buf.resize(at + Align4(a.nla_len));
  std::memcpy(buf.data() + at, &a, sizeof(a));
  std::memcpy(buf.data() + at + sizeof(a), &v, sizeof(v));
}

std::vector<std::uint8_t> Header(std::uint16_t type, std::uint16_t flags,
                                 std::uint32_t seq) {
  std::vector<std::uint8_t> buf(NLMSG_HDRLEN, 0);
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  std::memcpy(buf.data(), &h, sizeof(h));
  return buf;
}

void FixLength(std::vector<std::uint8_t>& buf) {
  std::uint32_t len = static_cast<std::uint32_t>(buf.size());
  std::memcpy(buf.data(), &len, sizeof(len));
}

std::string AttrString(std::span<const std::uint8_t> p) {
  const char* s = reinterpret_cast<const char*>(p.data());
  return std::string(s, strnlen(s, p.size()));
}

// Calls fn(header, payload) for each message of a datagram. False when a
// message header or length runs past the datagram.
template <typename Fn>
bool ForEachMessage(std::span<const std::uint8_t> bytes, Fn fn) {
  if (bytes.size() < sizeof(nlmsghdr)) return false;
  while (bytes.size() >= sizeof(nlmsghdr)) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > bytes.size()) return false;
    if (!fn(h, bytes.subspan(NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN))) {
      return true;  // fn asked to stop
    }
    bytes = bytes.subspan(
        std::min<std::size_t>(NLMSG_ALIGN(h.nlmsg_len), bytes.size()));
  }
  return bytes.empty();
}

std::error_code ErrorOf(std::span<const std::uint8_t> payload) {
  std::int32_t err = 0;
  if (payload.size() < sizeof(err)) return Errno(EBADMSG);
  std::memcpy(&err, payload.data(), sizeof(err));
  // The kernel's errors are -1..-4095; a lower value (INT_MIN would
  // overflow the negation) is a bad message, not an errno.
  if (err < 0) return Errno(err >= -4095 ? -err : EBADMSG);
  return std::error_code();
}

}  // namespace

std::optional<std::uint64_t> ParseNodeGuid(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  // Four groups of four hex digits separated by ':'.
  if (text.size() != 19) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i % 5 == 4) {
      if (c != ':') return std::nullopt;
      continue;
    }
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

std::vector<std::uint8_t> EncodeRdmaDeviceDump(std::uint32_t seq) {
  auto buf = Header(kGetType, NLM_F_REQUEST | NLM_F_DUMP, seq);
  FixLength(buf);
  return buf;
}

std::vector<std::uint8_t> EncodeRdmaStatGet(std::uint32_t dev_index,
                                            std::uint32_t port,
                                            std::uint32_t seq) {
  auto buf = Header(kStatType, NLM_F_REQUEST, seq);
  PutU32Attr(buf, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
  PutU32Attr(buf, RDMA_NLDEV_ATTR_PORT_INDEX, port);
  FixLength(buf);
  return buf;
}

std::error_code DecodeRdmaDeviceDump(std::span<const std::uint8_t> bytes,
                                     std::vector<RdmaDevice>& out, bool* done) {
  std::error_code error;
  bool ok = ForEachMessage(bytes, [&](const nlmsghdr& h, auto payload) {
    if (h.nlmsg_type == NLMSG_DONE) {
      *done = true;
      return false;
    }
    if (h.nlmsg_type == NLMSG_ERROR) {
      error = ErrorOf(payload);
      if (!error) return true;  // an ACK
      return false;
    }
    if (h.nlmsg_type != kGetType) return true;  // not ours; ignore
    std::vector<Attr> attrs;
    if (!SplitAttrs(payload, attrs)) {
      error = Errno(EBADMSG);
      return false;
    }
    RdmaDevice dev;
    bool has_index = false;
    for (const Attr& a : attrs) {
      if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX && a.payload.size() >= 4) {
        std::memcpy(&dev.index, a.payload.data(), 4);
        has_index = true;
      } else if (a.type == RDMA_NLDEV_ATTR_DEV_NAME) {
        dev.name = AttrString(a.payload);
      } else if (a.type == RDMA_NLDEV_ATTR_NODE_GUID && a.payload.size() >= 8) {
        std::memcpy(&dev.node_guid, a.payload.data(), 8);
      }
    }
    if (has_index && !dev.name.empty()) out.push_back(std::move(dev));
    return true;
  });
  if (!ok && !error) error = Errno(EBADMSG);
  return error;
}

RdmaStatResult DecodeRdmaStatReply(std::span<const std::uint8_t> bytes) {
  std::vector<RdmaCounter> counters;
  std::error_code error;
  bool seen = false;
  bool ok = ForEachMessage(bytes, [&](const nlmsghdr& h, auto payload) {
    if (h.nlmsg_type == NLMSG_ERROR) {
      error = ErrorOf(payload);
      if (!error) error = Errno(EBADMSG);  // a bare ACK is no answer
      return false;
    }
    if (h.nlmsg_type != kStatType) {
      error = Errno(EBADMSG);
      return false;
    }
    seen = true;
    std::vector<Attr> attrs;
    if (!SplitAttrs(payload, attrs)) {
      error = Errno(EBADMSG);
      return false;
    }
    for (const Attr& a : attrs) {
      if (a.type != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) continue;
      std::vector<Attr> entries;
      if (!SplitAttrs(a.payload, entries)) {
        error = Errno(EBADMSG);
        return false;
      }
      for (const Attr& e : entries) {
        if (e.type != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY) continue;
        std::vector<Attr> fields;
        if (!SplitAttrs(e.payload, fields)) {
          error = Errno(EBADMSG);
          return false;
        }
        RdmaCounter c;
        bool has_value = false;
        for (const Attr& f : fields) {
          if (f.type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
            c.name = AttrString(f.payload);
          } else if (f.type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE &&
                     f.payload.size() >= 8) {
            std::memcpy(&c.value, f.payload.data(), 8);
            has_value = true;
          }
        }
        if (has_value && !c.name.empty()) counters.push_back(std::move(c));
      }
    }
    return false;  // one reply message
  });
  if (!error && (!ok || !seen)) error = Errno(EBADMSG);
  if (error) return error;
  return counters;
}

namespace {

class NetlinkRdmaStatSource final : public RdmaStatSource {
 public:
  NetlinkRdmaStatSource() {
    fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
    if (fd_ < 0) {
      error_ = Errno(errno);
      return;
    }
    timeval tv{0, 500 * 1000};  // a silent kernel must not hang a collection
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NetlinkRdmaStatSource() override {
    if (fd_ >= 0) ::close(fd_);
  }

  RdmaStatResult PortCounters(const std::string& device,
                              std::uint64_t node_guid,
                              std::uint32_t port) override {
    if (fd_ < 0) return error_;
    std::vector<RdmaDevice> devices;
    if (auto e = Dump(devices)) return e;
    const RdmaDevice* dev = nullptr;
    for (const auto& d : devices) {
      if (d.name == device && d.node_guid == node_guid) dev = &d;
    }
    if (!dev) return Errno(ENODEV);
    std::uint32_t seq = ++seq_;
    if (auto e = Send(EncodeRdmaStatGet(dev->index, port, seq))) return e;
    std::vector<std::uint8_t> buf(kBuf);
    for (int tries = 0; tries < 8; ++tries) {
      std::span<const std::uint8_t> got;
      if (auto e = Recv(buf, got)) return e;
      if (SeqOf(got) != seq) continue;  // stale reply of a timed-out request
      return DecodeRdmaStatReply(got);
    }
    return Errno(EBADMSG);
  }

 private:
  static constexpr std::size_t kBuf = 64 * 1024;

  std::error_code Dump(std::vector<RdmaDevice>& devices) {
    std::uint32_t seq = ++seq_;
    if (auto e = Send(EncodeRdmaDeviceDump(seq))) return e;
    std::vector<std::uint8_t> buf(kBuf);
    bool done = false;
    for (int i = 0; i < 256 && !done; ++i) {  // bounded: one device a message
      std::span<const std::uint8_t> got;
      if (auto e = Recv(buf, got)) return e;
      if (SeqOf(got) != seq) continue;
      if (auto e = DecodeRdmaDeviceDump(got, devices, &done)) return e;
    }
    return done ? std::error_code() : Errno(EBADMSG);
  }

  std::error_code Send(const std::vector<std::uint8_t>& req) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_, req.data(), req.size(), 0,
                 reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
      return Errno(errno);
    }
    return {};
  }

  std::error_code Recv(std::vector<std::uint8_t>& buf,
                       std::span<const std::uint8_t>& got) {
    for (;;) {
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n >= 0) {
        got = std::span<const std::uint8_t>(buf.data(),
                                            static_cast<std::size_t>(n));
        return {};
      }
      if (errno != EINTR) return Errno(errno == EAGAIN ? ETIMEDOUT : errno);
    }
  }

  static std::uint32_t SeqOf(std::span<const std::uint8_t> got) {
    nlmsghdr h{};
    if (got.size() >= sizeof(h)) std::memcpy(&h, got.data(), sizeof(h));
    return h.nlmsg_seq;
  }

  int fd_ = -1;
  std::error_code error_;
  std::uint32_t seq_ = 0;
};

}  // namespace

std::unique_ptr<RdmaStatSource> MakeRealRdmaStatSource() {
  return std::make_unique<NetlinkRdmaStatSource>();
}

}  // namespace fabric
