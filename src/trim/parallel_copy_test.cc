#include "trim/parallel_copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace seedance::trim {
namespace {

TEST(ParallelCopyTest, EveryByteArrivesWhateverTheSplit) {
  std::mt19937 rng(7);
  for (uint64_t size : {0ull, 1ull, 4095ull, 4096ull, 65537ull, (1ull << 20) + 123}) {
    std::vector<unsigned char> src(size), dst(size + 1, 0xEE);
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    for (int threads : {1, 2, 3, 8}) {
      std::fill(dst.begin(), dst.end(), 0xEE);
      ParallelCopy(dst.data(), src.data(), size, threads, /*min_chunk=*/4096);
      if (size > 0) {  // memcmp of an empty vector's null data() is UB
        ASSERT_EQ(std::memcmp(dst.data(), src.data(), size), 0) << size << " bytes, " << threads;
      }
      EXPECT_EQ(dst[size], 0xEE) << "nothing written past the end";
    }
  }
}

TEST(ParallelCopyTest, StreamingCopyHandlesEveryAlignment) {
  std::mt19937 rng(11);
  std::vector<unsigned char> src((256 << 10) + 128), dst((256 << 10) + 256);
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  for (uint64_t size : {0ull, 63ull, 65ull, 64ull << 10, (64ull << 10) + 1, 200000ull}) {
    for (int d_off : {0, 1, 17, 63}) {
      for (int s_off : {0, 5, 64}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        StreamingCopy(dst.data() + d_off, src.data() + s_off, size);
        ASSERT_EQ(std::memcmp(dst.data() + d_off, src.data() + s_off, size), 0)
            << size << " bytes, dst+" << d_off << ", src+" << s_off;
        EXPECT_EQ(dst[d_off + size], 0xEE) << "nothing written past the end";
        if (d_off > 0) {
          EXPECT_EQ(dst[d_off - 1], 0xEE) << "nor before the start";
        }
      }
    }
  }
}

}  // namespace
}  // namespace seedance::trim
