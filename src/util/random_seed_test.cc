#include "util/random_seed.h"

#include <gtest/gtest.h>

#include <set>

namespace seedance::util {
namespace {

TEST(RandomSeedTest, SeedsDiffer) {
  std::set<uint32_t> seeds;
  for (int i = 0; i < 16; ++i) seeds.insert(RandomSeed());
  EXPECT_GE(seeds.size(), 15u);  // 16 draws of 32 bits: a repeat is a one-in-10^7 event
}

}  // namespace
}  // namespace seedance::util
