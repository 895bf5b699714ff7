// The dependencies of a plan's operations when a transport runs them as a
// dataflow instead of step by step (TcpTransport): every op waits only for
// the ops of earlier steps that touch the same bytes, one of them writing
// (a receive, with its reductions, writes; a send reads). A pipelined ring
// (patterns.h, Plan's slice) then forwards a slice as soon as that slice
// has arrived and been reduced, while the rest of the step is still on the
// wire, as NCCL's pipelined rings do, and a receive never overwrites bytes
// an earlier send has yet to hand to the kernel. Ops of one step run
// concurrently, as in lock step, so a plan keeps one step's ops apart.
//
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "benchtool/transport.h"

namespace fabric::bench {

struct FlowOp {
  const Op* op = nullptr;
  bool send = false;
  std::size_t step = 0;
  std::vector<const Reduce*> reduces;  // a receive's: src inside op's bytes
  std::vector<std::size_t> after;      // indices into the schedule
};

// Every send and receive of `steps` in program order (step, then sends
// before receives, each in the step's order), with what it waits for.
// Reductions whose source lies in no receive of their step are left out
// (TcpTransport runs such a plan in lock step instead).
std::vector<FlowOp> Schedule(std::span<const Step> steps);

// dst += src over `length` bytes: float32 sums, then bytes for a tail
// shorter than 4.
void AddFloats(std::byte* dst, const std::byte* src, std::size_t length);

// Applies one receive's reductions as its bytes arrive: whole floats while
// the receive is under way, the tail once it is complete, each byte once.
class ArrivalReducer {
 public:
  ArrivalReducer(std::span<std::byte> region, const Op& in,
                 std::vector<const Reduce*> reduces);
  // The first `bytes` of the receive are in the region (never shrinks).
  void Arrived(std::size_t bytes);

 private:
  std::span<std::byte> region_;
  const Op* in_;
  std::vector<const Reduce*> reduces_;
  std::vector<std::size_t> done_;
};

}  // namespace fabric::bench
