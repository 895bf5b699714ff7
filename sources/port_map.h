// The port map: what this host knows about one RDMA port
// (class/infiniband/<device>/ports/<n>) — its netdevs, link layer, GUIDs,
// LID and PCI address — worked out in one place with one rule. Every
// collector that needs a port's netdev (ib_port, roce, congestion,
// transceiver, fabric_class), fabricmon-bench's rail facts and the probe
// rails (sources/netdev_port.h) ask it; none has a rule of its own.
//
// The netdev rule, for port <n> of <device>:
//   1. the names its GID table gives (ports/<n>/gid_attrs/ndevs/<i>, every
//      readable entry, in GID index order; unused entries fail with EINVAL
//      and are skipped): a RoCE port's netdev, its VLANs, its bond master;
//   2. else the device's device/net/*: a single entry is the port's; with
//      several (one PCI function serving two ports: mlx4, IPoIB P_Key
//      children) those whose device/net/<if>/dev_port, or on older kernels
//      whose dev_id, is n - 1; when no entry has either file, all of them
//      (a tree that cannot tell them apart);
//   3. else, on a port that is not Ethernet, the IPoIB netdevs
//      (class/net/<if>/type 32) whose hardware address carries the port's
//      gids/0: a parent and its P_Key children, in name order. This scans
//      every netdev, so PortMap keeps its answer (kRescanSeconds).
// Each name once, and only plausible ones (non-empty, no '/', shorter than
// IFNAMSIZ). Then every bonding master among them (class/net/<if>/
// bonding/slaves, RoCE LAG: mlx5_bond_N) adds its slaves, in the bond's
// order, as `bond_slaves`: the physical-port counters, ECN settings and
// module EEPROMs are on the slaves, the addresses on the master.
//
// The reverse, the port behind a netdev (a probe's source address), is
// sources/netdev_port.h's FabricPortOfNetdev, which goes by the GID the
// netdev's packets carry and takes the rest of the port's facts from here.
//
// Read through the caller's SysfsReader, so the real reader's caching,
// recorded trees and the test fakes all apply.
//
// Thread-safety: the Read* functions are pure apart from reads through the
// caller's SysfsReader. A PortMap belongs to one owner (a collector, a
// probe rail), like the reader it is used with: not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sources/sysfs.h"

namespace fabric {

// The netdevs of one port by the rule above.
struct PortNetdevs {
  // The port's own netdevs; the first is its primary netdev (the RoCE
  // netdev of GID 0, the IPoIB parent).
  std::vector<std::string> netdevs;
  // Slaves of the bonding masters among `netdevs`, not repeated there.
  std::vector<std::string> bond_slaves;
  // Step 3 found them (a scan of every netdev): worth keeping a while.
  bool scanned = false;

  // The primary netdev, or "" when the port has none.
  const std::string& Primary() const;
  // `netdevs` then `bond_slaves`.
  std::vector<std::string> All() const;
  bool operator==(const PortNetdevs& o) const {
    return netdevs == o.netdevs && bond_slaves == o.bond_slaves;
  }
};

// Everything the map knows about one port.
struct PortFacts {
  std::string device;           // "mlx5_0"
  std::string port;             // "1", as ports/ names it
  std::string link_layer;       // "InfiniBand", "Ethernet", or "" (unreadable)
  std::uint64_t node_guid = 0;  // 0 when unreadable
  // The interface id of gids/0 (on IB the port GUID; on RoCE made from the
  // MAC); 0 when unreadable.
  std::uint64_t port_guid = 0;
  std::uint16_t lid = 0;  // 0 on RoCE or unreadable
  // "0000:17:00.0" from the device's device/uevent (PCI_SLOT_NAME); empty
  // for a device that is not PCI (rxe, siw) or a tree without it.
  std::string pci_address;
  PortNetdevs netdevs;
};

// The netdev rule (uncached). `link_layer` is the port's, as read (empty
// when unknown: step 3 then runs too).
PortNetdevs ReadPortNetdevs(SysfsReader& reader, const std::string& device,
                            const std::string& port,
                            std::string_view link_layer);

// Everything, read now. Unreadable facts stay at their zero value.
PortFacts ReadPortFacts(SysfsReader& reader, const std::string& device,
                        const std::string& port);
// The same without the netdevs (for a caller that found the port by one).
PortFacts ReadPortIdentity(SysfsReader& reader, const std::string& device,
                           const std::string& port);

// "class/infiniband/<device>/ports/<port>"
std::string PortPath(const std::string& device, const std::string& port);

// A netdev name as sysfs shows it: non-empty, no '/', not "." or "..",
// shorter than IFNAMSIZ.
bool PlausibleNetdev(std::string_view name);

// One owner's cache of the rule's answers. Steps 1 and 2 read a handful of
// files the real SysfsReader keeps open, so they are read again at every
// call and a renamed or new netdev shows at once; a step-3 answer (a scan
// of every netdev's type and address) is kept for kRescanSeconds, as the
// probe rails keep theirs, and dropped sooner when one of its netdevs is
// gone from class/net.
class PortMap {
 public:
  static constexpr double kRescanSeconds = 60;
  // `now`: seconds on a monotonic clock (tests inject one).
  explicit PortMap(std::function<double()> now = nullptr);

  const PortNetdevs& Netdevs(SysfsReader& reader, const std::string& device,
                             const std::string& port,
                             std::string_view link_layer);
  // Forget every answer (a SIGHUP, a failed bind).
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    PortNetdevs netdevs;
    double read_at = 0;
  };
  std::function<double()> now_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;
};

}  // namespace fabric
