#include "sources/dcb_netlink.h"

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sources/roce_netlink_attrs.h"

namespace fabric {
namespace {

std::error_code Errno(int e) { return {e, std::system_category()}; }

using nl::Align4;
using nl::Attr;
using nl::SplitAttrs;

bool DecodeIeee(std::span<const std::uint8_t> nest, DcbIeee& out) {
  std::vector<Attr> attrs;
  if (!SplitAttrs(nest, attrs)) return false;
  for (const Attr& a : attrs) {
    switch (a.type) {
      case DCB_ATTR_IEEE_PFC: {
        if (a.payload.size() < sizeof(ieee_pfc)) break;  // unexpected size
        ieee_pfc raw;
        std::memcpy(&raw, a.payload.data(), sizeof(raw));
        DcbPfc pfc;
        pfc.cap = raw.pfc_cap;
        pfc.enabled = raw.pfc_en;
        pfc.mbc = raw.mbc;
        pfc.delay = raw.delay;
        for (int i = 0; i < 8; ++i) {
          pfc.requests[i] = raw.requests[i];
          pfc.indications[i] = raw.indications[i];
        }
        out.pfc = pfc;
        break;
      }
      case DCB_ATTR_IEEE_ETS: {
        if (a.payload.size() < sizeof(ieee_ets)) break;
        ieee_ets raw;
        std::memcpy(&raw, a.payload.data(), sizeof(raw));
        DcbEts ets;
        ets.willing = raw.willing != 0;
        ets.ets_cap = raw.ets_cap;
        for (int i = 0; i < 8; ++i) ets.prio_tc[i] = raw.prio_tc[i];
        out.ets = ets;
        break;
      }
      case DCB_ATTR_IEEE_APP_TABLE: {
        std::vector<Attr> apps;
        if (!SplitAttrs(a.payload, apps)) return false;
        out.has_app_table = true;
        for (const Attr& app : apps) {
          if (app.type != DCB_ATTR_IEEE_APP ||
              app.payload.size() < sizeof(dcb_app)) {
            continue;  // DCB_ATTR_DCB_APP (CEE selectors) etc.
          }
          dcb_app raw;
          std::memcpy(&raw, app.payload.data(), sizeof(raw));
          out.apps.push_back({raw.selector, raw.priority, raw.protocol});
        }
        break;
      }
      default:
        break;
    }
  }
  return true;
}

}  // namespace

std::string DcbIeee::Trust() const {
  if (!has_app_table) return "";
  for (const DcbApp& a : apps) {
    if (a.selector == IEEE_8021QAZ_APP_SEL_DSCP) return "dscp";
  }
  return "pcp";
}

std::vector<std::uint8_t> EncodeDcbIeeeGet(std::string_view ifname,
                                           std::uint32_t seq) {
  std::size_t name_len = std::min<std::size_t>(ifname.size(), IFNAMSIZ - 1);
  std::size_t attr_len = sizeof(nlattr) + name_len + 1;
  std::size_t total = NLMSG_HDRLEN + Align4(sizeof(dcbmsg)) + Align4(attr_len);
  std::vector<std::uint8_t> buf(total, 0);
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(total);
  h.nlmsg_type = RTM_GETDCB;
  h.nlmsg_flags = NLM_F_REQUEST;
  h.nlmsg_seq = seq;
  std::memcpy(buf.data(), &h, sizeof(h));
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = DCB_CMD_IEEE_GET;
  std::memcpy(buf.data() + NLMSG_HDRLEN, &d, sizeof(d));
  nlattr a{};
  a.nla_len = static_cast<std::uint16_t>(attr_len);
  a.nla_type = DCB_ATTR_IFNAME;
  std::uint8_t* p = buf.data() + NLMSG_HDRLEN + Align4(sizeof(dcbmsg));
  std::memcpy(p, &a, sizeof(a));
  std::memcpy(p + sizeof(a), ifname.data(), name_len);
  return buf;
}

DcbResult DecodeDcbIeeeReply(std::span<const std::uint8_t> bytes) {
  nlmsghdr h;
  if (bytes.size() < sizeof(h)) return Errno(EBADMSG);
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > bytes.size()) {
    return Errno(EBADMSG);
  }
  // NLMSG_HDRLEN == sizeof(nlmsghdr), checked above to fit in nlmsg_len.
  auto body = bytes.subspan(NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
  if (h.nlmsg_type == NLMSG_ERROR) {
    nlmsgerr err;
    if (body.size() < sizeof(err.error)) return Errno(EBADMSG);
    std::memcpy(&err.error, body.data(), sizeof(err.error));
    // error 0 is an ACK, which a DCB get never answers with alone. The
    // kernel's errors are -1..-4095; anything else (INT_MIN would overflow
    // the negation, found by fuzz/dcb_netlink_fuzz) is a bad message.
    return Errno(err.error < 0 && err.error >= -4095 ? -err.error : EBADMSG);
  }
  if (h.nlmsg_type != RTM_GETDCB || body.size() < Align4(sizeof(dcbmsg))) {
    return Errno(EBADMSG);
  }
  dcbmsg d;
  std::memcpy(&d, body.data(), sizeof(d));
  if (d.cmd != DCB_CMD_IEEE_GET) return Errno(EBADMSG);
  std::vector<Attr> attrs;
  if (!SplitAttrs(body.subspan(Align4(sizeof(dcbmsg))), attrs)) {
    return Errno(EBADMSG);
  }
  DcbIeee ieee;
  for (const Attr& a : attrs) {
    if (a.type == DCB_ATTR_IEEE) {
      if (!DecodeIeee(a.payload, ieee)) return Errno(EBADMSG);
    } else if (a.type == DCB_ATTR_DCBX && a.payload.size() >= 1) {
      ieee.dcbx = a.payload[0];
    }
  }
  return ieee;
}

namespace {

class NetlinkDcbSource final : public DcbSource {
 public:
  NetlinkDcbSource() {
    fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) {
      error_ = Errno(errno);
      return;
    }
    // A kernel that never answers must not hang the collector.
    timeval tv{0, 500 * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NetlinkDcbSource() override {
    if (fd_ >= 0) ::close(fd_);
  }

  DcbResult Ieee(const std::string& netdev) override {
    if (fd_ < 0) return error_;
    if (netdev.empty() || netdev.size() >= IFNAMSIZ) return Errno(EINVAL);
    std::uint32_t seq = ++seq_;
    std::vector<std::uint8_t> req = EncodeDcbIeeeGet(netdev, seq);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_, req.data(), req.size(), 0,
                 reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
      return Errno(errno);
    }
    std::vector<std::uint8_t> buf(64 * 1024);
    // Skip stale replies to an earlier request that timed out.
    for (int tries = 0; tries < 8; ++tries) {
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno(errno == EAGAIN ? ETIMEDOUT : errno);
      }
      std::span<const std::uint8_t> got(buf.data(),
                                        static_cast<std::size_t>(n));
      nlmsghdr h;
      if (got.size() >= sizeof(h)) {
        std::memcpy(&h, got.data(), sizeof(h));
        if (h.nlmsg_seq != seq) continue;
      }
      return DecodeDcbIeeeReply(got);
    }
    return Errno(EBADMSG);
  }

 private:
  int fd_ = -1;
  std::error_code error_;
  std::uint32_t seq_ = 0;
};

}  // namespace

std::unique_ptr<DcbSource> MakeRealDcbSource() {
  return std::make_unique<NetlinkDcbSource>();
}

}  // namespace fabric
