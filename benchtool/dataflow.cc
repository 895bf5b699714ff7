#include "benchtool/dataflow.h"

#include <algorithm>
#include <cstring>

namespace fabric::bench {
namespace {

struct Range {
  std::size_t begin, end;
  bool Overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

Range Of(std::size_t offset, std::size_t length) {
  return {offset, offset + length};
}

// What an op reads and writes: a send reads its bytes; a receive writes its
// bytes and, for each reduction, reads and writes the destination.
struct Access {
  std::vector<Range> reads, writes;
};

Access AccessOf(const FlowOp& f) {
  Access a;
  if (f.send) {
    a.reads.push_back(Of(f.op->offset, f.op->length));
    return a;
  }
  a.writes.push_back(Of(f.op->offset, f.op->length));
  for (const Reduce* r : f.reduces) {
    a.reads.push_back(Of(r->dst, r->length));
    a.writes.push_back(Of(r->dst, r->length));
  }
  return a;
}

bool AnyOverlap(const std::vector<Range>& a, const std::vector<Range>& b) {
  for (const Range& x : a) {
    for (const Range& y : b) {
      if (x.begin < x.end && y.begin < y.end && x.Overlaps(y)) return true;
    }
  }
  return false;
}

bool Conflict(const Access& a, const Access& b) {
  return AnyOverlap(a.writes, b.writes) || AnyOverlap(a.writes, b.reads) ||
         AnyOverlap(a.reads, b.writes);
}

}  // namespace

std::vector<FlowOp> Schedule(std::span<const Step> steps) {
  std::vector<FlowOp> ops;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (const Op& o : steps[k].sends) ops.push_back({&o, true, k, {}, {}});
    for (const Op& o : steps[k].recvs) {
      FlowOp f{&o, false, k, {}, {}};
      for (const Reduce& r : steps[k].reduce) {
        if (r.src >= o.offset && r.src + r.length <= o.offset + o.length) {
          f.reduces.push_back(&r);
        }
      }
      ops.push_back(std::move(f));
    }
  }
  std::vector<Access> access;
  for (const FlowOp& f : ops) access.push_back(AccessOf(f));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::size_t j = 0; j < i && ops[j].step < ops[i].step; ++j) {
      if (Conflict(access[j], access[i])) ops[i].after.push_back(j);
    }
  }
  return ops;
}

void AddFloats(std::byte* dst, const std::byte* src, std::size_t length) {
  std::size_t floats = length / 4;
  for (std::size_t i = 0; i < floats; ++i) {
    float a, b;
    std::memcpy(&a, dst + 4 * i, 4);
    std::memcpy(&b, src + 4 * i, 4);
    a += b;
    std::memcpy(dst + 4 * i, &a, 4);
  }
  for (std::size_t i = floats * 4; i < length; ++i) {
    dst[i] = static_cast<std::byte>(static_cast<unsigned>(dst[i]) +
                                    static_cast<unsigned>(src[i]));
  }
}

ArrivalReducer::ArrivalReducer(std::span<std::byte> region, const Op& in,
                               std::vector<const Reduce*> reduces)
    : region_(region),
      in_(&in),
      reduces_(std::move(reduces)),
      done_(reduces_.size(), 0) {}

void ArrivalReducer::Arrived(std::size_t bytes) {
  for (std::size_t k = 0; k < reduces_.size(); ++k) {
    const Reduce& r = *reduces_[k];
    if (in_->offset + bytes <= r.src) continue;
    std::size_t have = std::min(r.length, in_->offset + bytes - r.src);
    if (have < r.length) have = have / 4 * 4;
    if (have <= done_[k]) continue;
    AddFloats(region_.data() + r.dst + done_[k],
              region_.data() + r.src + done_[k], have - done_[k]);
    done_[k] = have;
  }
}

}  // namespace fabric::bench
