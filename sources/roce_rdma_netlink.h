// RDMA netlink (NETLINK_RDMA, RDMA_NL_NLDEV) port statistics: what
// `rdma statistic show link <dev>/<port>` prints. The roce collector uses it
// only for the counters sysfs does not show: mlx5's *optional* counters
// (cc_rx_ce_pkts, cc_rx_cnp_pkts, cc_tx_cnp_pkts, rdma_{tx,rx}_{packets,bytes})
// which the kernel leaves out of hw_counters/ and reports over netlink once
// an administrator enabled them (`rdma statistic set link ... optional-
// counters ...`). fabricmon never enables them and never sends a SET.
//
// Two steps per port: an RDMA_NLDEV_CMD_GET dump maps device names to
// indexes, then RDMA_NLDEV_CMD_STAT_GET (DEV_INDEX, PORT_INDEX) returns the
// STAT_HWCOUNTERS table of (name, u64 value) entries; disabled optional
// counters are not in it. The encoders/decoders are pure and tested on
// constructed messages; the socket reader is thin.
//
// Thread-safety: pure functions are thread-safe; a source is used by one
// thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/result.h"

namespace fabric {

struct RdmaDevice {
  std::uint32_t index = 0;
  std::string name;
  std::uint64_t node_guid = 0;  // RDMA_NLDEV_ATTR_NODE_GUID, host order
};

struct RdmaCounter {
  std::string name;
  std::uint64_t value = 0;
};

// A port's counters, or the socket's / the kernel's errno.
using RdmaStatResult = Result<std::vector<RdmaCounter>>;

std::vector<std::uint8_t> EncodeRdmaDeviceDump(std::uint32_t seq);
std::vector<std::uint8_t> EncodeRdmaStatGet(std::uint32_t dev_index,
                                            std::uint32_t port,
                                            std::uint32_t seq);

// Decodes one datagram of the device dump: appends devices to `out`, sets
// *done when NLMSG_DONE was seen. Returns an error for NLMSG_ERROR (the
// kernel's errno) or malformed messages (EBADMSG).
std::error_code DecodeRdmaDeviceDump(std::span<const std::uint8_t> bytes,
                                     std::vector<RdmaDevice>& out, bool* done);

// Decodes the reply to EncodeRdmaStatGet. Entries missing a name or value
// are skipped; lengths running past their container make it EBADMSG.
RdmaStatResult DecodeRdmaStatReply(std::span<const std::uint8_t> bytes);

// Parses a sysfs node_guid ("0002:c903:0000:1a2c") into the number the
// kernel reports over netlink; nullopt for anything else.
std::optional<std::uint64_t> ParseNodeGuid(std::string_view text);

class RdmaStatSource {
 public:
  virtual ~RdmaStatSource() = default;
  // Counters of `device` port `port`. The device must also have node GUID
  // `node_guid` (from the sysfs tree being monitored), so a recorded tree
  // never picks up a host device that only shares its name: ENODEV then.
  virtual RdmaStatResult PortCounters(const std::string& device,
                                      std::uint64_t node_guid,
                                      std::uint32_t port) = 0;
};

// Real reader on a NETLINK_RDMA socket (absent when ib_core is not loaded:
// every call then returns the socket error).
std::unique_ptr<RdmaStatSource> MakeRealRdmaStatSource();

}  // namespace fabric
