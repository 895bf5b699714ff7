// Byte readers and writers for fabricmon's hand-written wire formats
// (benchtool/wire: big-endian; sources/mad/broker_protocol: little-endian;
// osm/event_wire: little-endian; probe/wire: big-endian at fixed offsets),
// so each format keeps its own byte order and layout but none hand-rolls
// the shifting or the bounds checks.
//
//  - StoreUint / LoadUint: an n-byte unsigned integer (n <= 8) at a place
//    the caller has checked (fixed-offset layouts).
//  - ByteWriter: appends to a growing buffer.
//  - SpanWriter: writes into a buffer the caller sized; a write past its
//    end writes nothing and sets !ok() (sticky).
//  - ByteReader: reads in order; a read past the end returns zero/empty and
//    sets !ok() (sticky), so a decoder checks once at the end.
//
// Thread-safety: the functions are pure; readers and writers belong to one
// thread (value types over the caller's bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabric {

enum class Endian { kBig, kLittle };

template <Endian kOrder>
void StoreUint(std::uint8_t* at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    const int shift = 8 * (kOrder == Endian::kBig ? bytes - 1 - i : i);
    at[i] = static_cast<std::uint8_t>(v >> shift);
  }
}

template <Endian kOrder>
std::uint64_t LoadUint(const std::uint8_t* at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    const int shift = 8 * (kOrder == Endian::kBig ? bytes - 1 - i : i);
    v |= std::uint64_t{at[i]} << shift;
  }
  return v;
}

template <Endian kOrder>
class ByteWriter {
 public:
  ByteWriter() = default;
  // Appends to `out`.
  explicit ByteWriter(std::vector<std::uint8_t> out) : out_(std::move(out)) {}
  void U8(std::uint8_t v) { out_.push_back(v); }
  void U16(std::uint16_t v) { Uint(v, 2); }
  void U32(std::uint32_t v) { Uint(v, 4); }
  void U64(std::uint64_t v) { Uint(v, 8); }
  void Bytes(std::span<const std::uint8_t> b) {
    out_.insert(out_.end(), b.begin(), b.end());
  }
  // A string after its length as a U16 (the caller bounds the length).
  void Str(std::string_view s) {
    U16(static_cast<std::uint16_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::size_t size() const { return out_.size(); }
  std::vector<std::uint8_t> Take() { return std::move(out_); }

 private:
  void Uint(std::uint64_t v, int bytes) {
    const std::size_t at = out_.size();
    out_.resize(at + static_cast<std::size_t>(bytes));
    StoreUint<kOrder>(out_.data() + at, v, bytes);
  }
  std::vector<std::uint8_t> out_;
};

template <Endian kOrder>
class SpanWriter {
 public:
  explicit SpanWriter(std::span<std::uint8_t> out) : out_(out) {}
  void U8(std::uint8_t v) { Uint(v, 1); }
  void U16(std::uint16_t v) { Uint(v, 2); }
  void U32(std::uint32_t v) { Uint(v, 4); }
  void U64(std::uint64_t v) { Uint(v, 8); }
  void Bytes(std::span<const std::uint8_t> b) {
    if (std::uint8_t* at = Claim(b.size())) {
      if (!b.empty()) std::memcpy(at, b.data(), b.size());
    }
  }
  void Zeros(std::size_t n) {
    if (std::uint8_t* at = Claim(n)) std::memset(at, 0, n);
  }
  bool ok() const { return ok_; }
  std::size_t size() const { return pos_; }

 private:
  std::uint8_t* Claim(std::size_t n) {
    if (!ok_ || out_.size() - pos_ < n) {
      ok_ = false;
      return nullptr;
    }
    std::uint8_t* at = out_.data() + pos_;
    pos_ += n;
    return at;
  }
  void Uint(std::uint64_t v, int bytes) {
    if (std::uint8_t* at = Claim(static_cast<std::size_t>(bytes))) {
      StoreUint<kOrder>(at, v, bytes);
    }
  }
  std::span<std::uint8_t> out_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

template <Endian kOrder>
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> b) : b_(b) {}
  std::uint8_t U8() { return static_cast<std::uint8_t>(Uint(1)); }
  std::uint16_t U16() { return static_cast<std::uint16_t>(Uint(2)); }
  std::uint32_t U32() { return static_cast<std::uint32_t>(Uint(4)); }
  std::uint64_t U64() { return Uint(8); }
  // The next `n` bytes (empty and !ok() when fewer are left).
  std::span<const std::uint8_t> Bytes(std::size_t n) {
    if (!Have(n)) return Fail(), std::span<const std::uint8_t>();
    auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }
  void Skip(std::size_t n) { Bytes(n); }
  // A string after its U16 length, at most `max` bytes.
  std::string Str(std::size_t max) {
    const std::size_t n = U16();
    if (n > max) return Fail(), std::string();
    const auto s = Bytes(n);
    return std::string(reinterpret_cast<const char*>(s.data()), s.size());
  }
  // Bytes not yet read.
  std::size_t remaining() const { return b_.size() - at_; }
  bool ok() const { return ok_; }
  // Everything read and nothing failed.
  bool done() const { return ok_ && at_ == b_.size(); }
  // Marks the input bad (a decoder's own check failed).
  void Fail() { ok_ = false; }

 private:
  bool Have(std::size_t n) const { return ok_ && b_.size() - at_ >= n; }
  std::uint64_t Uint(int bytes) {
    if (!Have(static_cast<std::size_t>(bytes))) return Fail(), 0;
    const std::uint64_t v = LoadUint<kOrder>(b_.data() + at_, bytes);
    at_ += static_cast<std::size_t>(bytes);
    return v;
  }
  std::span<const std::uint8_t> b_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace fabric
