// roce collector: the RoCE side of the fabric, per netdev that backs an
// Ethernet (RoCE) RDMA port, plus extra netdevs named in the options.
//   - ethtool driver statistics (PFC pause frames/durations/transitions,
//     pause storms, per-priority discards/ECN marks/bytes/packets, global
//     pause, phy discards) via an EthtoolSource;
//   - RoCE configuration audit: ECN enable per priority for the notification
//     and reaction points (class/net/<if>/ecn/roce_{np,rp}/enable/<prio>,
//     MLNX_OFED), PFC enabled priorities, ETS willing, prio->TC map, trust
//     and the ieee_pfc pause counts via a DcbSource (DCB netlink, or the
//     dumps of sources/dcb_file.h with setting dcb_dir);
//   - RoCE GID types per port (ports/<n>/gid_attrs/types/*);
//   - mlx5 optional counters (cc_*) via RDMA netlink, read only, when an
//     administrator enabled them (sources/roce_rdma_netlink.h);
//   - cable and link health: mlx5's physical-layer error counters from the
//     same ethtool statistics (corrected bits, per-lane raw errors, symbol
//     and CRC errors, link-down events), and the active FEC mode with the
//     FEC corrected/uncorrectable block statistics over ethtool netlink
//     (sources/ethtool_netlink.h) where the kernel and driver have them;
//     the link's active speed against the fastest link mode this end and
//     its link partner advertise (EthtoolSource::Link: the
//     ETHTOOL_GLINKSETTINGS ioctl, or `<ethtool_dir>/<netdev>.link`).
// Absent sources give absent metrics (never zeros). See docs/roce.md and the
// "## roce" section of docs/metrics.md.
//
// Netdev discovery (DiscoverRoceNetdevs), for each allowed device and each
// port of the shared walk (sources/ib_walk.h) whose link_layer is
// Ethernet: the port's netdevs by the port map's rule (sources/port_map.h:
// the names in ports/<n>/gid_attrs/ndevs/*, else the port's device/net/*
// entries), and a bonding master's slaves, which carry the physical-port
// counters of a RoCE LAG (mlx5_bond_N). Only netdevs present in class/net/ of
// the monitored tree are read, and one whose kernel address
// (EthtoolStats.hw_address) differs from the tree's class/net/<if>/address is
// skipped, so a recorded tree never gets a same-named host interface's
// counters. Both checks guard the kernel: with a file-backed ethtool source
// (RoceOptions.ethtool_is_kernel false, config `ethtool_dir`) they are skipped.
//
// Thread-safety: one Collect() at a time per instance (collector.h); the
// sources are owned by the instance.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "sources/dcb_netlink.h"
#include "sources/ethtool_netlink.h"
#include "sources/ethtool_parse.h"
#include "sources/ethtool_source.h"
#include "sources/roce_rdma_netlink.h"

namespace fabric {

// One netdev to read and the RDMA port it backs (device/port empty for an
// extra netdev that backs no RDMA port).
struct RoceNetdev {
  std::string device;
  std::string port;
  std::string netdev;
  bool operator==(const RoceNetdev&) const = default;
};

struct RoceOptions {
  // Which RDMA devices' netdevs discovery reads.
  DeviceFilter devices;
  // Read these too (config), labelled device="" port="" unless discovery
  // also found them.
  std::vector<std::string> extra_netdevs;
  // Tests: replaces discovery entirely when set.
  std::optional<std::vector<RoceNetdev>> netdevs;
  // False when the EthtoolSource does not ask the running kernel (the
  // file-backed source of sources/ethtool_file.h): its netdev names then
  // belong to the monitored tree by construction, so the class/net filter
  // and the kernel address check are skipped.
  bool ethtool_is_kernel = true;
};

// Reads through the collector's reader, within its collection.
std::vector<RoceNetdev> DiscoverRoceNetdevs(SysfsReader& reader,
                                            const DeviceFilter& devices);
// The same through a reader of its own (tests, one-off callers).
std::vector<RoceNetdev> DiscoverRoceNetdevs(const Sysfs& sysfs,
                                            const DeviceFilter& devices);

// Writes the ethtool-derived samples of one netdev. Pure: exposed for tests
// and the benchmark.
void EmitEthtoolMetrics(const RoceEthtoolStats& stats, const RoceNetdev& where,
                        MetricSink& sink);

// The physical-layer (cable and link health) part of EmitEthtoolMetrics:
// `base` = the netdev's device/port/netdev labels.
void EmitPhyMetrics(const RoceEthtoolStats& stats, const Labels& base,
                    MetricSink& sink);

// Writes the link speed samples of one netdev (ethtool link settings):
// active speed, the fastest this end and its link partner can do.
void EmitLinkMetrics(const EthtoolLink& link, const RoceNetdev& where,
                     MetricSink& sink);

// Writes the ethtool-netlink FEC samples of one netdev.
void EmitFecMetrics(const EthtoolFec& fec, const RoceNetdev& where,
                    MetricSink& sink);

// Writes the DCB-derived samples of one netdev.
void EmitDcbMetrics(const DcbIeee& dcb, const RoceNetdev& where,
                    MetricSink& sink);

// "IB/RoCE v1" -> "roce_v1", "RoCE v2" -> "roce_v2"; other text lowercased
// with non-alphanumerics as '_'.
std::string GidTypeLabel(std::string_view sysfs_text);

// Any source may be null (that part is then not collected).
std::unique_ptr<Collector> MakeRoceCollector(
    const CollectorEnv& env, RoceOptions options,
    std::unique_ptr<EthtoolSource> ethtool, std::unique_ptr<DcbSource> dcb,
    std::unique_ptr<RdmaStatSource> rdma = nullptr,
    std::unique_ptr<FecSource> fec = nullptr);

// `collectors.roce` keys of its own.
struct RoceSettings {
  // `netdevs`: extra network interfaces to read besides those backing RDMA
  // ports.
  std::vector<std::string> netdevs;
  // `dcb_dir`: absolute directory of DCB dumps, one file per netdev
  // (`<dcb_dir>/<netdev>`, the text iproute2's `dcb` prints;
  // sources/dcb_file.h), read instead of DCB netlink. Empty = netlink.
  // The simulator writes them to `<host>/dcb/`, next to `<host>/ethtool/`.
  std::string dcb_dir;
  bool operator==(const RoceSettings&) const = default;
};

// The registry's factory: env's ethtool source, DCB and RDMA netlink
// sources, the settings' netdevs as extra netdevs; FEC over ethtool
// netlink only when env's ethtool source is the kernel's (as DCB). DCB: the
// file-backed
// source on the settings' dcb_dir when set; else netlink, except when env's
// ethtool source reads dumps (config `ethtool_dir`): DCB netlink asks the
// kernel, and without the ioctl's address nothing tells whether the
// kernel's same-named netdev is the tree's.
std::unique_ptr<Collector> MakeRoceCollector(const CollectorEnv& env,
                                             const CollectorConfig& config);
// The registry row (keys `netdevs`, `dcb_dir`).
CollectorSpec RoceCollectorSpec();

}  // namespace fabric
