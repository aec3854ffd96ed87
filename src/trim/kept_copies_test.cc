#include "trim/kept_copies.h"

#include <gtest/gtest.h>

namespace seedance::trim {
namespace {

int a, b, c;  // addresses to keep

TEST(KeptCopiesTest, ACopyIsKeptFoundAndTakenOnceWithItsBytesOnItsTier) {
  KeptCopies k;
  k.Keep(1, KeptCopy{.ptr = &a, .tier = 1, .size = 1000});
  k.Keep(2, KeptCopy{.ptr = &b, .tier = 1, .size = 1000, .encoded = 40});
  EXPECT_EQ(k.bytes(), 1040u) << "an encoded copy holds its encoding's bytes";
  ASSERT_NE(k.Find(2), nullptr);
  EXPECT_EQ(k.Find(2)->ptr, &b);
  EXPECT_EQ(k.Find(3), nullptr);
  auto taken = k.Take(2);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->encoded, 40u);
  EXPECT_EQ(k.bytes(), 1000u);
  EXPECT_FALSE(k.Take(2).has_value()) << "taken once";
  EXPECT_EQ(k.Find(2), nullptr);
  EXPECT_EQ(k.size(), 1u);
}

TEST(KeptCopiesTest, RoomOnATierTakesOnlyCopiesOnThatTier) {
  KeptCopies k;
  k.Keep(1, KeptCopy{.ptr = &a, .tier = 1, .size = 10});
  k.Keep(2, KeptCopy{.ptr = &b, .tier = 2, .size = 20});
  k.Keep(3, KeptCopy{.ptr = &c, .tier = 2, .size = 30});
  EXPECT_FALSE(k.TakeOneOn(3).has_value());
  int seen = 0;
  while (auto copy = k.TakeOneOn(2)) {
    EXPECT_EQ(copy->tier, 2);
    ++seen;
  }
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(k.bytes(), 10u);
  ASSERT_NE(k.Find(1), nullptr) << "tier 1's copy stays";
}

}  // namespace
}  // namespace seedance::trim
