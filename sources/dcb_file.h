// File-backed DCB source: the DCB (IEEE 802.1Qaz) configuration of a netdev
// read from a text dump instead of rtnetlink, one file per netdev
// (`<dir>/<netdev>`), next to the ethtool dumps of `ethtool_dir`. The fabric
// simulator writes one per RoCE netdev (`<host>/dcb/<netdev>`); on a real
// host the same file is what iproute2's `dcb` tool prints:
//
//   { dcb -s pfc show dev eth0; dcb ets show dev eth0; dcb -N app show dev
//   eth0; } > dir/eth0
//
//   pfc-cap 8 macsec-bypass off delay 0
//   prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
//   requests 0:0 1:0 2:0 3:1234 4:0 5:0 6:0 7:0
//   indications 0:0 1:0 2:0 3:56 4:0 5:0 6:0 7:0
//   willing off ets-cap 8 cbs off
//   prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:0 7:0
//   dscp-prio 26:3 48:6
//
// Format: whitespace-separated `key value` pairs and `key p:v p:v ...` maps,
// in any order and line layout; `#` starts a comment to the end of the
// line. Keys read (the rest of `dcb`'s output, e.g. tc-bw, tc-tsa, is
// skipped): pfc-cap, delay, prio-pfc, requests, indications (ieee_pfc);
// willing, ets-cap, prio-tc (ieee_ets); dscp-prio (DSCP numbers or the
// names `dcb` prints without -N: CS0..CS7, AF11..AF43, EF, VA, LE),
// pcp-prio, default-prio, ethtype-prio, stream-port-prio, dgram-port-prio,
// port-prio (the APP table: present when any of them is; trust is "dscp"
// when a dscp-prio entry exists, as with netlink, dcb_netlink.h).
// A malformed value of a known key (priority outside 0..7, "on"/"off"
// expected, a number out of range) makes the whole dump EBADMSG: a half-read
// configuration would report wrong settings, which is worse than none.
//
// FileDcbSource: a missing file is EOPNOTSUPP ("no DCB for this netdev",
// like a netdev without dcbnl ops), other read errors their errno, a file
// larger than kMaxDcbDumpBytes EFBIG.
//
// Thread-safety: ParseDcbText is pure; FileDcbSource is stateless and may be
// called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "sources/dcb_netlink.h"

namespace fabric {

inline constexpr std::size_t kMaxDcbDumpBytes = 64 << 10;

// Parses a dump as described above. error is EBADMSG for malformed input.
DcbResult ParseDcbText(std::string_view text);

class FileDcbSource final : public DcbSource {
 public:
  explicit FileDcbSource(std::string dir) : dir_(std::move(dir)) {}
  DcbResult Ieee(const std::string& netdev) override;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

std::unique_ptr<DcbSource> MakeFileDcbSource(const std::string& dir);

}  // namespace fabric
