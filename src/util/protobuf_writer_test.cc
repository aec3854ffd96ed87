#include "util/protobuf_writer.h"

#include <gtest/gtest.h>

namespace seedance::util {
namespace {

std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// The examples of the encoding guide (protobuf.dev, "Encoding").
TEST(ProtobufWriterTest, WritesTheEncodingGuidesExamples) {
  std::string out;
  ProtobufWriter w(out);
  w.Varint(1, 150);  // message Test1 { int32 a = 1; } with a = 150
  EXPECT_EQ(Hex(out), "089601");
  out.clear();
  w.Bytes(2, "testing");  // message Test2 { string b = 2; }
  EXPECT_EQ(Hex(out), "120774657374696e67");
  out.clear();
  const size_t m = w.BeginMessage(3);  // message Test3 { Test1 c = 3; }
  w.Varint(1, 150);
  w.EndMessage(m);
  EXPECT_EQ(Hex(out), "1a03089601");
}

TEST(ProtobufWriterTest, NegativeInt64TakesTenBytesAndDoublesAreLittleEndian) {
  std::string out;
  ProtobufWriter w(out);
  w.Int64(2, -1);
  EXPECT_EQ(Hex(out), "10ffffffffffffffffff01");
  out.clear();
  w.Double(1, 1.0);
  EXPECT_EQ(Hex(out), "09000000000000f03f");
}

TEST(ProtobufWriterTest, ALongNestedMessageGetsItsFullLengthInFront) {
  for (size_t n : {0u, 127u, 128u, 16383u, 16384u, 300000u}) {
    std::string out = "x";  // something before: the message starts mid-buffer
    ProtobufWriter w(out);
    const size_t outer = w.BeginMessage(1);
    const size_t inner = w.BeginMessage(2);
    w.Bytes(3, std::string(n, 'a'));
    w.EndMessage(inner);
    w.EndMessage(outer);
    // Read it back by hand: tag, length, tag, length, tag, length, bytes.
    size_t pos = 1;
    auto varint = [&] {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        const auto b = static_cast<unsigned char>(out.at(pos++));
        v |= uint64_t{b & 0x7Fu} << shift;
        if (b < 0x80) return v;
      }
    };
    EXPECT_EQ(varint(), (1u << 3) | 2);
    const uint64_t outer_len = varint();
    EXPECT_EQ(outer_len, out.size() - pos) << n;
    EXPECT_EQ(varint(), (2u << 3) | 2);
    const uint64_t inner_len = varint();
    EXPECT_EQ(inner_len, out.size() - pos) << n;
    EXPECT_EQ(varint(), (3u << 3) | 2);
    const uint64_t bytes_len = varint();
    EXPECT_EQ(bytes_len, n);
    EXPECT_EQ(out.size() - pos, n);
    EXPECT_EQ(ProtobufWriter::VarintSize(n), n < 128 ? 1u : n < 16384 ? 2u : 3u);
  }
}

}  // namespace
}  // namespace seedance::util
