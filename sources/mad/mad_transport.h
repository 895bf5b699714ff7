// MadTransport: many 256-byte management datagrams (MADs) in flight at once,
// as a fabric sweep needs. A transport implements only the wire (Post one
// MAD with a transaction id, Poll for answers); the shared engine Run()
// does the rest: transaction-id matching, a global and a per-destination
// in-flight limit, a per-MAD timeout with retries (each retry a new
// transaction id, so a late answer to an abandoned try is ignored), and a
// deadline for the whole run.
//
// Implementations: the real one over libibumad (sources/mad/umad_transport.h)
// and the fabric simulator's (simulator/mad.h). Callers build and decode MADs
// with sources/mad/codec.h (libibmad field accessors).
//
// Wire format: whole MADs in network byte order as the IBA defines them.
// Classes: SMI LID-routed (0x01), SMI directed-route (0x81; the path is in
// the MAD itself, the packet goes to the permissive LID) and PerfMgt (0x04).
// fabricmon never writes to the fabric: Run() refuses, without sending,
// every method but Get (so no Set, and never a counter clear).
//
// Results: error std::errc::timed_out when no answer came after every retry,
// operation_canceled when the run's deadline passed first,
// operation_not_permitted for a non-Get request, invalid_argument for a
// request of another class, io_error when the transport could not send,
// permission_denied when the MAD broker refused it (sources/mad/broker.h). A
// MAD answered with a non-zero MAD status is NOT an error here: the status
// is in the response header (sources/mad/codec.h MadStatus).
//
// Thread-safety: one Run() at a time per instance (a umad fd and its
// transaction ids are per instance); the completion callback runs on the
// caller's thread inside Run(), and may push more requests to `pending`.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "core/result.h"
#include "core/thread_annotations.h"

namespace fabric {

inline constexpr std::size_t kMadSize = 256;
using Mad = std::array<std::uint8_t, kMadSize>;

inline constexpr std::uint8_t kMadClassSmiLid = 0x01;
inline constexpr std::uint8_t kMadClassSmiDirected = 0x81;
inline constexpr std::uint8_t kMadClassPerf = 0x04;
inline constexpr std::uint8_t kMadMethodGet = 0x01;
inline constexpr std::uint8_t kMadMethodGetResp = 0x81;
inline constexpr std::uint16_t kPermissiveLid = 0xffff;

struct MadRequest {
  // Destination LID; ignored for directed-route SMPs (the route is in the
  // MAD; they go to the permissive LID).
  std::uint16_t dlid = 0;
  Mad mad{};
  // The caller's, passed back unchanged with the result.
  std::uint64_t cookie = 0;
};

// The response MAD, or an error as the header comment says. (How many sends
// it took is in MadStats: retries.)
using MadResult = Result<Mad>;

struct MadOptions {
  std::chrono::milliseconds timeout{500};  // per try
  int retries = 2;                         // tries after the first
  int max_outstanding = 64;                // in flight overall
  int max_per_destination = 4;             // in flight per LID / DR route
  // No MAD is sent after this; what is left completes operation_canceled.
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
};

struct MadStats {
  std::uint64_t ok = 0;        // answered (any MAD status)
  std::uint64_t timeouts = 0;  // gave up after every retry
  std::uint64_t errors = 0;    // refused, send failed, canceled
  std::uint64_t retries = 0;   // extra sends after a try timed out
};

class MadTransport {
 public:
  using Completion =
      std::function<void(const MadRequest& request, const MadResult& result)>;

  virtual ~MadTransport() = default;

  // Sends every request in `pending`, and every request `done` pushes onto
  // `pending` while Run() works, until none is left or the deadline
  // passes. `done` is called exactly once per request. Virtual only so that
  // a shared transport (ShareMadTransport) can hold its lock around it.
  virtual MadStats Run(std::deque<MadRequest>& pending,
                       const MadOptions& options, const Completion& done);

  // One request, waited for (a convenience over Run()).
  MadResult Send(const MadRequest& request, const MadOptions& options);

  // The wire, for the engine and for the MAD broker (which forwards single
  // MADs and keeps its own limits): most callers use Run().
  struct Answer {
    std::uint32_t tid = 0;  // low 32 bits of the transaction id
    Mad mad{};
    bool timed_out = false;  // the transport itself reported a timeout
    // Not sent after all (the broker refused it): completes with this.
    std::errc error{};
    // An answer carrying `mad`, its tid read from the MAD's header.
    static Answer Of(const Mad& mad) {
      Answer a;
      a.mad = mad;
      for (int i = 12; i < 16; ++i) a.tid = (a.tid << 8) | mad[i];
      return a;
    }
  };
  // Sends `mad` (its transaction id already set to `tid`) towards `dlid`
  // (kPermissiveLid for directed route). False when it could not be sent.
  virtual bool Post(std::uint16_t dlid, const Mad& mad,
                    std::chrono::milliseconds timeout) = 0;
  // Waits up to `wait` for answers and appends every one available.
  virtual void Poll(std::chrono::microseconds wait,
                    std::vector<Answer>* answers) = 0;
};

// A handle on `target` for one of several users (collectors on their own
// threads): Run() holds `target`'s lock for the whole run, so runs take
// turns on the one umad fd and never steal each other's answers. One umad
// port per process also suits umad2sim, which cannot open a second.
std::unique_ptr<MadTransport> ShareMadTransport(
    std::shared_ptr<MadTransport> target, std::shared_ptr<Mutex> lock);

}  // namespace fabric
