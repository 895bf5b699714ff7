#include "sources/ethtool_ioctl.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>

namespace fabric {
namespace {

// More statistics than any real driver has (mlx5 with 256 channels is a few
// thousand); a larger count is treated as a driver bug, not allocated.
constexpr std::uint32_t kMaxStats = 1u << 16;

// The kernel ignores the caller's length for GSTRINGS/GSTATS and writes
// however many entries the driver reports *now*; if the set grew between
// GSSET_INFO and GSTATS it would write past a tight buffer. Slack absorbs
// that race and the returned count tells us to discard the reading.
std::uint32_t Slack(std::uint32_t n) { return n / 4 + 64; }

std::error_code Errno(int e) { return {e, std::system_category()}; }

}  // namespace

IoctlEthtoolSource::IoctlEthtoolSource() {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    // Kernels without IPv4 still route SIOCETHTOOL through any socket.
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  if (fd_ < 0) socket_error_ = Errno(errno);
}

IoctlEthtoolSource::~IoctlEthtoolSource() {
  if (fd_ >= 0) ::close(fd_);
}

int IoctlEthtoolSource::Ioctl(const std::string& netdev, void* data) {
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof(ifr));
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(data);
  ioctls_.fetch_add(1, std::memory_order_relaxed);
  int rc;
  do {
    rc = ::ioctl(fd_, SIOCETHTOOL, &ifr);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? errno : 0;
}

EthtoolResult IoctlEthtoolSource::Stats(const std::string& netdev) {
  if (fd_ < 0) return socket_error_;
  if (netdev.empty() || netdev.size() >= IFNAMSIZ ||
      netdev.find('/') != std::string::npos) {
    return Errno(EINVAL);
  }
  EthtoolStats stats;

  struct ethtool_drvinfo drv;
  std::memset(&drv, 0, sizeof(drv));
  drv.cmd = ETHTOOL_GDRVINFO;
  if (int e = Ioctl(netdev, &drv)) {
    // EOPNOTSUPP: a netdev without ethtool ops at all; no stats, not an error.
    strings_.erase(netdev);  // gone or stat-less: keep the cache bounded
    if (e != EOPNOTSUPP) return Errno(e);
    return stats;
  }
  stats.driver.assign(drv.driver, strnlen(drv.driver, sizeof(drv.driver)));

  // GSSET_INFO returns the count for each requested set whose bit stays set.
  // One requested set, so one u32 of data after the header.
  alignas(8)
      std::uint8_t sset_buf[sizeof(ethtool_sset_info) + sizeof(std::uint32_t)] =
          {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  std::uint32_t n = 0;
  if (int e = Ioctl(netdev, sset_buf)) {
    if (e != EOPNOTSUPP) return Errno(e);
    n = drv.n_stats;  // very old drivers: count only in drvinfo
  } else if (sset->sset_mask & (1ULL << ETH_SS_STATS)) {
    std::memcpy(&n, sset_buf + sizeof(ethtool_sset_info), sizeof(n));
  }
  if (n == 0) {
    strings_.erase(netdev);
    return stats;  // driver offers no statistics
  }
  if (n > kMaxStats) return Errno(E2BIG);

  auto cached = strings_.find(netdev);
  if (cached == strings_.end() || cached->second.names.size() != n ||
      cached->second.driver != stats.driver) {
    std::uint32_t cap = n + Slack(n);
    std::vector<std::uint8_t> buf(sizeof(ethtool_gstrings) +
                                  std::size_t{cap} * ETH_GSTRING_LEN);
    auto* gs = reinterpret_cast<ethtool_gstrings*>(buf.data());
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_STATS;
    gs->len = n;
    if (int e = Ioctl(netdev, buf.data())) return Errno(e);
    if (gs->len != n) {  // the set changed under us; try next collection
      strings_.erase(netdev);
      return Errno(EAGAIN);
    }
    std::vector<std::string> names;
    names.reserve(n);
    const char* base = reinterpret_cast<const char*>(gs->data);
    for (std::uint32_t i = 0; i < n; ++i) {
      const char* s = base + std::size_t{i} * ETH_GSTRING_LEN;
      names.emplace_back(s, strnlen(s, ETH_GSTRING_LEN));
    }
    cached = strings_
                 .insert_or_assign(netdev,
                                   StringTable{stats.driver, std::move(names)})
                 .first;
  }

  std::uint32_t cap = n + Slack(n);
  std::vector<std::uint64_t> buf(
      (sizeof(ethtool_stats) + sizeof(std::uint64_t) - 1) /
          sizeof(std::uint64_t) +
      cap);
  auto* st = reinterpret_cast<ethtool_stats*>(buf.data());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = n;
  if (int e = Ioctl(netdev, buf.data())) return Errno(e);
  if (st->n_stats != n) {
    strings_.erase(netdev);
    return Errno(EAGAIN);
  }
  stats.names = cached->second.names;
  stats.hw_address = HwAddress(netdev);
  stats.values.assign(st->data, st->data + n);
  return stats;
}

EthtoolLinkResult IoctlEthtoolSource::Link(const std::string& netdev) {
  if (fd_ < 0) return socket_error_;
  if (netdev.empty() || netdev.size() >= IFNAMSIZ ||
      netdev.find('/') != std::string::npos) {
    return Errno(EINVAL);
  }
  if (link_modes_.empty()) {
    // The kernel's link mode names, the same for every netdev.
    alignas(8) std::uint8_t
        sset_buf[sizeof(ethtool_sset_info) + sizeof(std::uint32_t)] = {};
    auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
    sset->cmd = ETHTOOL_GSSET_INFO;
    sset->sset_mask = 1ULL << ETH_SS_LINK_MODES;
    std::uint32_t n = 0;
    if (int e = Ioctl(netdev, sset_buf)) return Errno(e);
    if (sset->sset_mask & (1ULL << ETH_SS_LINK_MODES)) {
      std::memcpy(&n, sset_buf + sizeof(ethtool_sset_info), sizeof(n));
    }
    if (n == 0 || n > 1024) return Errno(EOPNOTSUPP);
    std::vector<std::uint8_t> buf(sizeof(ethtool_gstrings) +
                                  std::size_t{n} * ETH_GSTRING_LEN);
    auto* gs = reinterpret_cast<ethtool_gstrings*>(buf.data());
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_LINK_MODES;
    gs->len = n;
    if (int e = Ioctl(netdev, buf.data())) return Errno(e);
    const char* base = reinterpret_cast<const char*>(gs->data);
    for (std::uint32_t i = 0; i < std::min(n, gs->len); ++i) {
      const char* str = base + std::size_t{i} * ETH_GSTRING_LEN;
      link_modes_.emplace_back(str, strnlen(str, ETH_GSTRING_LEN));
    }
  }
  // The handshake: the kernel answers a request with nwords 0 with minus
  // the number of u32 words each of the three masks takes.
  constexpr int kMaxWords = 127;  // link_mode_masks_nwords is an s8
  alignas(8) std::uint8_t buf[sizeof(ethtool_link_settings) +
                              3 * kMaxWords * sizeof(std::uint32_t)] = {};
  auto* ls = reinterpret_cast<ethtool_link_settings*>(buf);
  ls->cmd = ETHTOOL_GLINKSETTINGS;
  if (int e = Ioctl(netdev, buf)) return Errno(e);
  const int nwords = -ls->link_mode_masks_nwords;
  if (ls->cmd != ETHTOOL_GLINKSETTINGS || nwords <= 0 || nwords > kMaxWords) {
    return Errno(EPROTO);
  }
  std::memset(buf, 0, sizeof(buf));
  ls->cmd = ETHTOOL_GLINKSETTINGS;
  ls->link_mode_masks_nwords = static_cast<std::int8_t>(nwords);
  if (int e = Ioctl(netdev, buf)) return Errno(e);
  if (ls->link_mode_masks_nwords != nwords) return Errno(EAGAIN);
  EthtoolLink link;
  if (ls->speed != 0 &&
      ls->speed != static_cast<std::uint32_t>(SPEED_UNKNOWN)) {
    link.speed_mbps = ls->speed;
  }
  std::uint32_t words[3 * kMaxWords];
  std::memcpy(words, buf + sizeof(ethtool_link_settings),
              3 * nwords * sizeof(std::uint32_t));
  const auto n = static_cast<std::size_t>(nwords);
  const std::span<const std::uint32_t> all(words, 3 * n);
  link.supported = LinkModeNames(all.subspan(0, n), link_modes_);
  link.advertised = LinkModeNames(all.subspan(n, n), link_modes_);
  link.partner = LinkModeNames(all.subspan(2 * n, n), link_modes_);
  return link;
}

std::string IoctlEthtoolSource::HwAddress(const std::string& netdev) {
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof(ifr));
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ioctls_.fetch_add(1, std::memory_order_relaxed);
  if (::ioctl(fd_, SIOCGIFHWADDR, &ifr) != 0 ||
      ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
    return "";
  }
  char buf[18];
  const auto* a =
      reinterpret_cast<const unsigned char*>(ifr.ifr_hwaddr.sa_data);
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1],
                a[2], a[3], a[4], a[5]);
  return buf;
}

std::unique_ptr<EthtoolSource> MakeRealEthtoolSource() {
  return std::make_unique<IoctlEthtoolSource>();
}

}  // namespace fabric
