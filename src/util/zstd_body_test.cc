#include "util/zstd_body.h"

#include <gtest/gtest.h>
#include <zstd.h>

namespace seedance::util {
namespace {

std::string Zstd(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

TEST(UnzstdTest, RoundTripsOneOrMoreFrames) {
  const std::string text = "{\"temperature\": 21.5}\n" + std::string(300000, 'x');
  auto one = Unzstd(Zstd(text), 1 << 20);
  ASSERT_TRUE(one.has_value()) << one.error().message();
  EXPECT_EQ(*one, text);
  auto two = Unzstd(Zstd("a\n") + Zstd("b\n"), 100);
  ASSERT_TRUE(two.has_value()) << two.error().message();
  EXPECT_EQ(*two, "a\nb\n");
}

TEST(UnzstdTest, ABombStopsAtTheBound) {
  const std::string bomb = Zstd(std::string(50 << 20, '\0'));
  EXPECT_LT(bomb.size(), 10000u);
  auto r = Unzstd(bomb, 1 << 20);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kResourceExhausted);
}

TEST(UnzstdTest, GarbageAndCutDataAreRefused) {
  auto garbage = Unzstd("{\"not\": \"zstd\"}", 1000);
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().code(), StatusCode::kInvalidArgument);
  const std::string full = Zstd(std::string(100000, 'y') + std::string(100000, 'z'));
  auto cut = Unzstd(std::string_view(full).substr(0, full.size() / 2), 1 << 20);
  ASSERT_FALSE(cut.has_value());
  EXPECT_EQ(cut.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace seedance::util
