// DCB (IEEE 802.1Qaz) configuration of a netdev over rtnetlink: the request
// encoder and reply decoder are pure functions on bytes (tested on
// constructed messages); DcbSource is the injectable reader, with a real
// implementation on a NETLINK_ROUTE socket (RTM_GETDCB / DCB_CMD_IEEE_GET,
// <linux/dcbnl.h>). Read only: DCB_CMD_IEEE_SET is never sent.
//
// What we keep from the reply (kernel net/dcb/dcbnl.c dcbnl_ieee_fill):
//   DCB_ATTR_IEEE_PFC   struct ieee_pfc: pfc_cap, pfc_en (mlx5 and mlnx_qos
//                       treat it as a bitmap of *priorities*), requests[8]
//                       (PFC frames sent) and indications[8] (received).
//   DCB_ATTR_IEEE_ETS   struct ieee_ets: willing, prio_tc.
//   DCB_ATTR_IEEE_APP_TABLE  dcb_app entries; trust is "dscp" when any entry
//                       uses selector IEEE_8021QAZ_APP_SEL_DSCP (mlx5 switches
//                       trust to DSCP when the first DSCP APP entry is set and
//                       back to PCP when the last is removed), else "pcp".
//   DCB_ATTR_DCBX       DCBX mode bits (DCB_CAP_DCBX_*).
//
// Thread-safety: the functions are pure; a DcbSource is used by one thread
// at a time.
#pragma once

#include <array>
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

struct DcbPfc {
  std::uint8_t cap = 0;      // traffic classes that may have PFC at once
  std::uint8_t enabled = 0;  // bit p set = PFC on priority p
  std::uint8_t mbc = 0;
  std::uint16_t delay = 0;
  std::array<std::uint64_t, 8> requests{};     // PFC frames sent per prio
  std::array<std::uint64_t, 8> indications{};  // PFC frames received
};

struct DcbEts {
  bool willing = false;
  std::uint8_t ets_cap = 0;
  std::array<std::uint8_t, 8> prio_tc{};  // priority -> traffic class
};

struct DcbApp {
  std::uint8_t selector = 0;
  std::uint8_t priority = 0;
  std::uint16_t protocol = 0;  // DSCP value when selector == DSCP
};

struct DcbIeee {
  std::optional<DcbPfc> pfc;
  std::optional<DcbEts> ets;
  bool has_app_table = false;
  std::vector<DcbApp> apps;
  std::optional<std::uint8_t> dcbx;
  // "dscp" or "pcp" from the APP table (see header comment); empty when
  // the reply had no APP table.
  std::string Trust() const;
};

// The IEEE DCB state, or the kernel's errno (e.g. EOPNOTSUPP for veth) or
// EBADMSG for a malformed reply.
using DcbResult = Result<DcbIeee>;

// The RTM_GETDCB request for `ifname` (must be shorter than IFNAMSIZ).
std::vector<std::uint8_t> EncodeDcbIeeeGet(std::string_view ifname,
                                           std::uint32_t seq);

// Decodes one reply datagram. Every length is checked against the bytes
// actually present; an attribute whose length runs past its container
// makes the whole reply EBADMSG (we do not guess at half a message), while
// attributes of unknown type or unexpected size are skipped.
DcbResult DecodeDcbIeeeReply(std::span<const std::uint8_t> bytes);

class DcbSource {
 public:
  virtual ~DcbSource() = default;
  virtual DcbResult Ieee(const std::string& netdev) = 0;
};

// Real reader: one NETLINK_ROUTE socket (created in the caller's network
// namespace), one request and a bounded wait (receive timeout) per call.
std::unique_ptr<DcbSource> MakeRealDcbSource();

}  // namespace fabric
