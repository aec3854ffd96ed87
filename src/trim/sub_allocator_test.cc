#include "trim/sub_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace seedance::trim {
namespace {

TEST(SubAllocatorTest, AlignsAndFillsExactly) {
  SubAllocator a(4096);
  EXPECT_EQ(*a.Allocate(1), 0u);
  EXPECT_EQ(*a.Allocate(256), 256u);
  EXPECT_EQ(*a.Allocate(257), 512u);  // takes 512
  EXPECT_EQ(a.used(), 1024u);
  EXPECT_TRUE(a.Allocate(3072).has_value());
  EXPECT_FALSE(a.Allocate(1).has_value());
  EXPECT_DOUBLE_EQ(a.Fragmentation(), 0.0);  // nothing free
}

TEST(SubAllocatorTest, FragmentationOnACraftedLayout) {
  // Ten 256-byte blocks, free every other one: five separate free blocks of 256 B.
  SubAllocator a(2560);
  std::vector<uint64_t> off;
  for (int i = 0; i < 10; ++i) off.push_back(*a.Allocate(256));
  for (int i = 0; i < 10; i += 2) a.Free(off[i]);
  EXPECT_EQ(a.free_bytes(), 1280u);
  EXPECT_EQ(a.largest_free(), 256u);
  EXPECT_DOUBLE_EQ(a.Fragmentation(), 1.0 - 256.0 / 1280.0);  // 0.8
  // Freeing block 1 joins blocks 0..2 into one 768-byte hole.
  a.Free(off[1]);
  EXPECT_EQ(a.largest_free(), 768u);
  EXPECT_DOUBLE_EQ(a.Fragmentation(), 1.0 - 768.0 / 1536.0);  // 0.5
  EXPECT_EQ(a.free_blocks(), 4u);
  for (int i = 3; i < 10; i += 2) a.Free(off[i]);
  EXPECT_EQ(a.free_blocks(), 1u);  // everything coalesced
  EXPECT_DOUBLE_EQ(a.Fragmentation(), 0.0);
}

TEST(SubAllocatorTest, BestFitPicksTheSmallestHoleThatFits) {
  SubAllocator a(4096);
  uint64_t a0 = *a.Allocate(1024), a1 = *a.Allocate(256), a2 = *a.Allocate(512),
           a3 = *a.Allocate(256);
  (void)a1;
  (void)a3;
  a.Free(a0);                          // hole of 1024 at 0
  a.Free(a2);                          // hole of 512 at 1280
  EXPECT_EQ(*a.Allocate(300), 1280u);  // the 512 hole, not the 1024 one
}

TEST(SubAllocatorTest, RandomAllocFreeKeepsAccountingConsistent) {
  SubAllocator a(1 << 20);
  std::mt19937 rng(7);
  std::vector<uint64_t> live;
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && (rng() % 2 == 0 || !a.free_bytes())) {
      size_t k = rng() % live.size();
      a.Free(live[k]);
      live.erase(live.begin() + static_cast<long>(k));
    } else if (auto off = a.Allocate(1 + rng() % 8192)) {
      live.push_back(*off);
    }
    ASSERT_LE(a.largest_free(), a.free_bytes());
    ASSERT_GE(a.Fragmentation(), 0.0);
    ASSERT_LT(a.Fragmentation(), 1.0);
  }
  for (uint64_t off : live) a.Free(off);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.free_blocks(), 1u);
}

}  // namespace
}  // namespace seedance::trim
