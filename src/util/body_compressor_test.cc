#include "util/body_compressor.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include "util/gzip.h"
#include "util/zstd_body.h"

namespace seedance::util {
namespace {

std::string Sample(int events) {
  std::string s = "[";
  for (int i = 0; i < events; ++i) {
    s += (i ? "," : "") + std::string("{\"device\":\"sensor-") + std::to_string(i % 7) +
         "\",\"temperature\":" + std::to_string(20 + i % 5) + ".5}";
  }
  return s + "]";
}

TEST(BodyCompressorTest, GzipRoundTripsAndShrinksRepetitiveJson) {
  BodyCompressor c(BodyCompression::kGzip, 0);
  std::string out;
  for (int events : {1, 50, 2000}) {  // one compressor, reset per body
    const std::string body = Sample(events);
    ASSERT_TRUE(c.Compress(body, out));
    auto back = Gunzip(out, 1 << 24);
    ASSERT_TRUE(back.has_value()) << back.error().message();
    EXPECT_EQ(*back, body);
    if (events >= 50) {
      EXPECT_LT(out.size(), body.size() / 4) << events;
    }
  }
}

TEST(BodyCompressorTest, ZstdRoundTripsAtEveryLevelItTakes) {
  const std::string body = Sample(500);
  for (int level : {0, 1, 3, 19}) {
    BodyCompressor c(BodyCompression::kZstd, level);
    std::string out;
    ASSERT_TRUE(c.Compress(body, out));
    ASSERT_TRUE(c.Compress(body, out));  // twice: the context is reused
    auto back = Unzstd(out, 1 << 24);
    ASSERT_TRUE(back.has_value()) << back.error().message();
    EXPECT_EQ(*back, body);
    EXPECT_LT(out.size(), body.size() / 4);
  }
}

TEST(BodyCompressorTest, SnappyWritesTheBlockFormatThatReadsBack) {
  BodyCompressor c(BodyCompression::kSnappy, 0);
  std::string out;
  for (int events : {0, 1, 2000}) {  // an empty body too: a valid block of length 0
    const std::string body = Sample(events);
    ASSERT_TRUE(c.Compress(body, out));
    std::string back;
    ASSERT_TRUE(snappy::Uncompress(out.data(), out.size(), &back)) << events;
    EXPECT_EQ(back, body);
    if (events >= 2000) {
      EXPECT_LT(out.size(), body.size() / 3);
    }
  }
  EXPECT_EQ(ContentEncoding(BodyCompression::kSnappy), "snappy");
  EXPECT_EQ(MaxCompressionLevel(BodyCompression::kSnappy), 0);
}

TEST(BodyCompressorTest, AnEmptyBodyIsAValidStream) {
  for (BodyCompression kind : {BodyCompression::kGzip, BodyCompression::kZstd}) {
    BodyCompressor c(kind, 0);
    std::string out = "stale";
    ASSERT_TRUE(c.Compress("", out));
    auto back = kind == BodyCompression::kGzip ? Gunzip(out, 10) : Unzstd(out, 10);
    ASSERT_TRUE(back.has_value()) << back.error().message();
    EXPECT_EQ(*back, "");
  }
}

TEST(BodyCompressorTest, NoneCopiesAndNamesNoEncoding) {
  BodyCompressor c(BodyCompression::kNone, 0);
  std::string out;
  ASSERT_TRUE(c.Compress("abc", out));
  EXPECT_EQ(out, "abc");
  EXPECT_EQ(ContentEncoding(BodyCompression::kNone), "");
  EXPECT_EQ(ContentEncoding(BodyCompression::kGzip), "gzip");
  EXPECT_EQ(ContentEncoding(BodyCompression::kZstd), "zstd");
}

}  // namespace
}  // namespace seedance::util
