// MadTransport: send one 256-byte management datagram (MAD) to a LID and get
// the response, or an error. The real implementation wraps libibumad
// (umad_open_port/umad_register/umad_send/umad_recv on one local HCA port,
// chosen at construction); the fabric simulator answers from its model; tests
// replay captured bytes. Collectors (SMInfo, PMA sweeps) only see this.
//
// Wire format: the request and the response are whole MADs in network byte
// order as defined by the IBA (e.g. opensm's <iba/ib_types.h> ib_smp_t,
// ib_perfmgt_mad_t). The transport does not interpret them beyond routing;
// callers build and decode them.
//
// Errors: std::errc::timed_out when no response came within `timeout` (a
// dead or hung responder), std::errc::host_unreachable for a LID nobody
// answers at, std::errc::invalid_argument for a malformed request; a MAD
// that was answered with a non-zero MAD status is NOT a transport error (the
// status is in the response header).
//
// fabricmon only sends Get requests: a transport may refuse Set methods
// (fabricmon never writes to the fabric or resets counters).
//
// Thread-safety: one Send() at a time per instance (a umad fd and its
// transaction ids are per instance); different instances are independent.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <system_error>

namespace fabric {

inline constexpr std::size_t kMadSize = 256;
using Mad = std::array<std::uint8_t, kMadSize>;

struct MadResult {
  Mad response{};         // valid when ok()
  std::error_code error;  // see the header comment
  bool ok() const { return !error; }
};

class MadTransport {
 public:
  virtual ~MadTransport() = default;
  // Sends `request` to destination LID `dlid` (LID-routed; SMPs use the
  // LID-routed class 0x01) and waits up to `timeout` for the response with
  // the same transaction id.
  virtual MadResult Send(std::uint16_t dlid, const Mad& request,
                         std::chrono::milliseconds timeout) = 0;
};

}  // namespace fabric
