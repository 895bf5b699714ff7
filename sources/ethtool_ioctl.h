// The real EthtoolSource: SIOCETHTOOL ioctls on a datagram socket
// (ETHTOOL_GDRVINFO, ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS, ETHTOOL_GSTATS),
// the same kernel path `ethtool -S` uses, without shelling out; and
// ETHTOOL_GLINKSETTINGS for the link's speed and modes (`ethtool <netdev>`).
//
// The socket is created in the constructor, so the source reads netdevs of
// the network namespace the constructing thread was in (tests construct one
// inside a namespace they created). The string table of each netdev is
// cached and re-read when the driver or its statistic count changes (mlx5 adds
// rx/tx_prioN_pause* when PFC is enabled on a priority), so a steady-state
// collection is four ioctls: GDRVINFO, GSSET_INFO, GSTATS and SIOCGIFHWADDR
// (the address lets the collector check it reads the tree's interface).
//
// Thread-safety: one Stats() call at a time per instance (it updates the
// cache); ioctl_count() may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sources/ethtool_source.h"

namespace fabric {

class IoctlEthtoolSource final : public EthtoolSource {
 public:
  IoctlEthtoolSource();
  ~IoctlEthtoolSource() override;
  IoctlEthtoolSource(const IoctlEthtoolSource&) = delete;
  IoctlEthtoolSource& operator=(const IoctlEthtoolSource&) = delete;

  EthtoolResult Stats(const std::string& netdev) override;
  // ETHTOOL_GLINKSETTINGS (the nwords handshake: two ioctls), its mask bits
  // named by the kernel's ETH_SS_LINK_MODES strings, read once per source.
  EthtoolLinkResult Link(const std::string& netdev) override;

  // Number of ioctl() calls made so far (for the benchmark's syscall count).
  std::uint64_t ioctl_count() const { return ioctls_.load(); }

 private:
  int Ioctl(const std::string& netdev, void* data);
  // SIOCGIFHWADDR, formatted like class/net/<if>/address; "" if not Ethernet.
  std::string HwAddress(const std::string& netdev);

  int fd_ = -1;
  std::error_code socket_error_;
  struct StringTable {
    std::string driver;  // a re-created netdev with another driver re-reads
    std::vector<std::string> names;
  };
  std::map<std::string, StringTable, std::less<>> strings_;
  std::vector<std::string> link_modes_;  // ETH_SS_LINK_MODES, by bit
  std::atomic<std::uint64_t> ioctls_{0};
};

std::unique_ptr<EthtoolSource> MakeRealEthtoolSource();

}  // namespace fabric
