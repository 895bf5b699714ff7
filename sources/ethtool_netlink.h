// ethtool over generic netlink (the "ethtool" family, kernel 5.6+): the
// requests fabricmon sends and the replies it reads, as pure encoders and
// decoders on bytes (tested on constructed messages, fuzzed), plus a thin
// socket reader. Two requests, both read only (no *_SET is ever built):
//   - ETHTOOL_MSG_FEC_GET with ETHTOOL_FLAG_STATS: the active FEC mode and,
//     where the driver reports them (kernel 5.13+), FEC corrected and
//     uncorrectable blocks and corrected bits, in total and per lane
//     (net/ethtool/fec.c: each statistic is an array of u64, the total first,
//     then one entry per lane when the driver counts per lane);
//   - ETHTOOL_MSG_MODULE_EEPROM_GET (kernel 5.13+): up to 128 bytes of a
//     transceiver module's EEPROM page (sources/module_eeprom.h uses it).
// The family ID is resolved once per socket (CTRL_CMD_GETFAMILY).
//
// Errors are the kernel's errno (EOPNOTSUPP: the driver has no such op, e.g.
// a veth's FEC; ENODEV: no such netdev), ENOENT when the kernel has no
// ethtool netlink family, EBADMSG for a malformed reply. Every length is
// checked against the bytes present (nl::SplitAttrs).
//
// Thread-safety: the functions are pure; an EthtoolNetlink (and the sources
// made on it) is used by one thread at a time.
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

// One FEC statistic: the total and, when the driver counts per lane, each
// lane's value (lane index = position).
struct FecCounter {
  std::uint64_t total = 0;
  std::vector<std::uint64_t> lanes;
};

struct EthtoolFec {
  // ETHTOOL_A_FEC_ACTIVE as a name: "none", "rs", "baser", "llrs", or
  // "mode<bit>" for a link mode bit this build does not know; nullopt when
  // the reply had none (link down, or the driver does not say).
  std::optional<std::string> active_mode;
  std::optional<FecCounter> corrected_blocks;  // ETHTOOL_A_FEC_STAT_CORRECTED
  std::optional<FecCounter> uncorrectable_blocks;  // ETHTOOL_A_FEC_STAT_UNCORR
  std::optional<FecCounter> corrected_bits;  // ETHTOOL_A_FEC_STAT_CORR_BITS
};

using EthtoolFecResult = Result<EthtoolFec>;

// Where one EEPROM read goes (ETHTOOL_A_MODULE_EEPROM_*). The kernel reads
// at most 128 bytes per request and never across the lower/upper half.
struct EepromRequest {
  std::uint8_t page = 0;
  std::uint8_t bank = 0;
  std::uint8_t i2c_address = 0x50;
  std::uint32_t offset = 0;  // 0..255: lower memory, then the page
  std::uint32_t length = 128;
};

using EepromBytesResult = Result<std::vector<std::uint8_t>>;

// CTRL_CMD_GETFAMILY for `name` ("ethtool").
std::vector<std::uint8_t> EncodeGenlFamilyGet(std::string_view name,
                                              std::uint32_t seq);
// The family ID from the reply.
Result<std::uint16_t> DecodeGenlFamilyReply(
    std::span<const std::uint8_t> bytes);

std::vector<std::uint8_t> EncodeFecGet(std::uint16_t family,
                                       std::string_view ifname,
                                       std::uint32_t seq);
EthtoolFecResult DecodeFecReply(std::span<const std::uint8_t> bytes);

std::vector<std::uint8_t> EncodeModuleEepromGet(std::uint16_t family,
                                                std::string_view ifname,
                                                const EepromRequest& request,
                                                std::uint32_t seq);
EepromBytesResult DecodeModuleEepromReply(std::span<const std::uint8_t> bytes);

// The FEC state of a netdev: the roce collector's seam.
class FecSource {
 public:
  virtual ~FecSource() = default;
  virtual EthtoolFecResult Fec(const std::string& netdev) = 0;
};

// The socket: NETLINK_GENERIC, created in the constructing thread's network
// namespace, one request and a bounded wait (500 ms receive timeout) per
// call.
class EthtoolNetlink {
 public:
  EthtoolNetlink();
  ~EthtoolNetlink();
  EthtoolNetlink(const EthtoolNetlink&) = delete;
  EthtoolNetlink& operator=(const EthtoolNetlink&) = delete;

  EthtoolFecResult Fec(const std::string& netdev);
  EepromBytesResult ModuleEeprom(const std::string& netdev,
                                 const EepromRequest& request);

 private:
  // Sends `request` (its seq already set to `seq`) and returns the reply
  // datagram with that seq.
  Result<std::vector<std::uint8_t>> Transact(
      const std::vector<std::uint8_t>& request, std::uint32_t seq);
  std::error_code Family();

  int fd_ = -1;
  std::error_code error_;
  std::uint32_t seq_ = 0;
  std::optional<std::uint16_t> family_;
};

std::unique_ptr<FecSource> MakeRealFecSource();

}  // namespace fabric
