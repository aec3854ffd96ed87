#include "util/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace seedance::util {
namespace {

std::string Gzip(std::string_view text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

TEST(GunzipTest, RoundTripsOneOrMoreMembers) {
  const std::string text = "{\"temperature\": 21.5}\n" + std::string(200000, 'x');
  auto one = Gunzip(Gzip(text), 1 << 20);
  ASSERT_TRUE(one.has_value()) << one.error().message();
  EXPECT_EQ(*one, text);
  auto two = Gunzip(Gzip("a\n") + Gzip("b\n"), 100);
  ASSERT_TRUE(two.has_value()) << two.error().message();
  EXPECT_EQ(*two, "a\nb\n");
}

TEST(GunzipTest, ABombStopsAtTheBound) {
  const std::string bomb = Gzip(std::string(50 << 20, '\0'));  // 50 MiB of zeros
  EXPECT_LT(bomb.size(), 100000u);
  auto r = Gunzip(bomb, 1 << 20);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kResourceExhausted);
}

TEST(GunzipTest, GarbageAndCutDataAreRefused) {
  auto garbage = Gunzip("{\"not\": \"gzip\"}", 1000);
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().code(), StatusCode::kInvalidArgument);
  const std::string full = Gzip(std::string(10000, 'y'));
  auto cut = Gunzip(std::string_view(full).substr(0, full.size() / 2), 100000);
  ASSERT_FALSE(cut.has_value());
  EXPECT_EQ(cut.error().message(), "gzip data cut short");
  EXPECT_FALSE(Gunzip("", 100).has_value());
}

}  // namespace
}  // namespace seedance::util
