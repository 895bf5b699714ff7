// core/bytes.h: the byte order of each writer and reader, exact bytes for
// both orders, and the bounds checks the four wire formats rely on (a read
// or write past the end fails, stays failed and returns zero/empty).
#include "core/bytes.h"

#include <gtest/gtest.h>

#include <array>

namespace fabric {
namespace {

using V = std::vector<std::uint8_t>;

TEST(Bytes, StoreAndLoadInEachOrder) {
  std::array<std::uint8_t, 4> b{};
  StoreUint<Endian::kBig>(b.data(), 0x01020304, 4);
  EXPECT_EQ(b, (std::array<std::uint8_t, 4>{1, 2, 3, 4}));
  EXPECT_EQ(LoadUint<Endian::kBig>(b.data(), 4), 0x01020304u);
  EXPECT_EQ(LoadUint<Endian::kLittle>(b.data(), 4), 0x04030201u);
  StoreUint<Endian::kLittle>(b.data(), 0x0a0b, 2);
  EXPECT_EQ(b[0], 0x0b);
  EXPECT_EQ(b[1], 0x0a);
}

TEST(Bytes, WriterAndReaderRoundTrip) {
  ByteWriter<Endian::kBig> w;
  w.U8(0xfe);
  w.U16(0x1234);
  w.U32(0xdeadbeef);
  w.U64(0x0102030405060708);
  w.Str("mlx5_0");
  const V big = w.Take();
  EXPECT_EQ(V(big.begin(), big.begin() + 3), (V{0xfe, 0x12, 0x34}));
  ByteReader<Endian::kBig> r(big);
  EXPECT_EQ(r.U8(), 0xfe);
  EXPECT_EQ(r.U16(), 0x1234);
  EXPECT_EQ(r.U32(), 0xdeadbeefu);
  EXPECT_EQ(r.U64(), 0x0102030405060708u);
  EXPECT_EQ(r.Str(16), "mlx5_0");
  EXPECT_TRUE(r.done());

  ByteWriter<Endian::kLittle> lw(V{9});  // appends
  lw.U16(0x1234);
  EXPECT_EQ(lw.Take(), (V{9, 0x34, 0x12}));
}

TEST(Bytes, ReaderFailsPastTheEndAndStaysFailed) {
  const V b = {1, 2, 3};
  ByteReader<Endian::kLittle> r(b);
  EXPECT_EQ(r.U16(), 0x0201);
  EXPECT_EQ(r.U32(), 0u);  // one byte left
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U8(), 0);  // sticky, although a byte is left
  EXPECT_TRUE(r.Bytes(1).empty());
  EXPECT_FALSE(r.done());
}

TEST(Bytes, StringLongerThanItsMaxOrThanTheInputFails) {
  ByteWriter<Endian::kBig> w;
  w.Str("abcdef");
  const V b = w.Take();
  ByteReader<Endian::kBig> too_long(b);
  EXPECT_EQ(too_long.Str(5), "");
  EXPECT_FALSE(too_long.ok());
  ByteReader<Endian::kBig> cut(std::span<const std::uint8_t>(b).first(5));
  EXPECT_EQ(cut.Str(64), "");
  EXPECT_FALSE(cut.ok());
}

TEST(Bytes, SpanWriterNeverWritesPastItsBuffer) {
  std::array<std::uint8_t, 6> buf{};
  buf.fill(0xaa);
  SpanWriter<Endian::kLittle> w(std::span<std::uint8_t>(buf).first(5));
  w.U32(0x04030201);
  EXPECT_TRUE(w.ok());
  w.U16(0xffff);  // one byte left: nothing written
  EXPECT_FALSE(w.ok());
  w.U8(0x55);  // sticky
  EXPECT_EQ(w.size(), 4u);
  EXPECT_EQ(buf, (std::array<std::uint8_t, 6>{1, 2, 3, 4, 0xaa, 0xaa}));
  SpanWriter<Endian::kBig> z(buf);
  z.Zeros(2);
  z.Bytes(V{7, 8});
  EXPECT_EQ(buf[1], 0);
  EXPECT_EQ(buf[3], 8);
}

}  // namespace
}  // namespace fabric
