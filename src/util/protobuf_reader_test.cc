#include "util/protobuf_reader.h"

#include <gtest/gtest.h>

#include <bit>

#include "util/protobuf_writer.h"

namespace seedance::util {
namespace {

TEST(ProtobufReaderTest, ReadsBackWhatTheWriterWrote) {
  std::string out;
  ProtobufWriter w(out);
  w.Varint(1, 150);
  w.Int64(2, -7);
  w.Double(3, 2.5);
  w.Fixed32(4, 0xDEADBEEF);
  const size_t m = w.BeginMessage(5);
  w.Bytes(1, "inner");
  w.EndMessage(m);
  ProtobufReader r(out);
  ProtobufField f;
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.number_value, 150u);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(static_cast<int64_t>(f.number_value), -7);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.wire_type, 1u);
  EXPECT_EQ(std::bit_cast<double>(f.number_value), 2.5);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.wire_type, 5u);
  EXPECT_EQ(f.number_value, 0xDEADBEEFu);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.number, 5u);
  ProtobufReader inner(f.bytes);
  ASSERT_TRUE(inner.Next(&f));
  EXPECT_EQ(f.bytes, "inner");
  EXPECT_FALSE(inner.Next(&f));
  EXPECT_FALSE(r.Next(&f));
  EXPECT_TRUE(r.error().empty());
}

TEST(ProtobufReaderTest, MalformedBytesStopWithAReasonNeverReadingPastTheEnd) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string("\x0a\x05"
                   "abc",
                   5),
       "cut short"},                                  // length 5, 3 bytes
      {std::string("\x08\xff\xff", 3), "cut short"},  // varint unfinished
      {std::string("\x08") + std::string(11, '\xff'), "longer than 10"},
      {std::string("\x09\x01\x02", 3), "cut short"},              // fixed64 of 2 bytes
      {std::string("\x0b", 1), "wire type 3"},                    // a group
      {std::string("\x00\x01", 2), "field number"},               // field 0
      {std::string("\x0a\xff\xff\xff\xff\x0f", 6), "cut short"},  // length 4 GiB
  };
  for (const auto& [bytes, why] : cases) {
    ProtobufReader r(bytes);
    ProtobufField f;
    while (r.Next(&f)) {
    }
    EXPECT_NE(r.error().find(why), std::string::npos) << r.error();
  }
}

}  // namespace
}  // namespace seedance::util
