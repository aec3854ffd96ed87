#include "trim/address_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace seedance::trim {
namespace {

TEST(AddressIndexTest, AnAddressInsideAnEntryFindsItsBufferAndNoOtherDoes) {
  std::vector<char> memory(1000);
  char* m = memory.data();
  AddressIndex index;
  index.Insert(m + 100, 50, 1);
  index.Insert(m + 150, 10, 2);  // right after the first
  index.Insert(m + 400, 1, 3);
  EXPECT_EQ(index.Find(m + 100), std::optional<uint64_t>(1));
  EXPECT_EQ(index.Find(m + 149), std::optional<uint64_t>(1));
  EXPECT_EQ(index.Find(m + 150), std::optional<uint64_t>(2));
  EXPECT_EQ(index.Find(m + 159), std::optional<uint64_t>(2));
  EXPECT_FALSE(index.Find(m + 160).has_value()) << "past the end of the second";
  EXPECT_FALSE(index.Find(m + 99).has_value()) << "before the first";
  EXPECT_EQ(index.Find(m + 400), std::optional<uint64_t>(3));
  EXPECT_FALSE(index.Find(m + 401).has_value());
}

TEST(AddressIndexTest, AnEntryEnteredAgainWithFewerBytesEndsThere) {
  std::vector<char> memory(1000);
  char* m = memory.data();
  AddressIndex index;
  index.Insert(m, 512, 7);  // a buffer, then the same block holding its 64-byte encoding
  index.Erase(m);
  index.Insert(m, 64, 7);
  EXPECT_EQ(index.Find(m + 63), std::optional<uint64_t>(7));
  EXPECT_FALSE(index.Find(m + 64).has_value());
  index.Erase(m);
  EXPECT_FALSE(index.Find(m).has_value());
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace seedance::trim
