#include "trim/tier_moves.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace seedance::trim {
namespace {

constexpr uint64_t kMoveSize = 256 * 1024;

struct Pair {
  std::unique_ptr<Tier> fast = MakeHostTier("fast", 4 * kMoveSize);
  std::unique_ptr<Tier> slow = MakeHostTier("slow", 4 * kMoveSize);
};

std::vector<unsigned char> Pattern(bool sparse) {
  std::vector<unsigned char> v(kMoveSize, 0);
  for (uint64_t i = 0; i < kMoveSize; ++i) {
    if (!sparse || (i / 256) % 8 == 0) v[i] = static_cast<unsigned char>(i * 31 + 1) | 1;
  }
  return v;
}

TEST(TierMovesTest, APlainMoveDownAndUpKeepsTheBytesAndMeasuresTheLink) {
  Pair t;
  TierMoves moves;
  const auto want = Pattern(false);
  void* fast = t.fast->Allocate(kMoveSize).value();
  void* slow = t.slow->Allocate(kMoveSize).value();
  std::memcpy(fast, want.data(), kMoveSize);
  EXPECT_EQ(moves.rates().link_rate(), 0);
  ASSERT_TRUE(moves.Down(*t.fast, *t.slow, slow, fast, kMoveSize, 0).ok());
  std::memset(fast, 0, kMoveSize);
  ASSERT_TRUE(moves.Up(*t.fast, *t.slow, fast, slow, kMoveSize, 0).ok());
  EXPECT_EQ(std::memcmp(fast, want.data(), kMoveSize), 0);
  EXPECT_GT(moves.rates().link_rate(), 0);
  EXPECT_GT(moves.counters().copy_seconds, 0);
  EXPECT_EQ(moves.counters().codec_seconds, 0);
  t.fast->Free(fast);
  t.slow->Free(slow);
}

TEST(TierMovesTest, TheCodecIsUsedOnlyWhereAskedAndWhereItShrinksOrPays) {
  Pair t;
  TierMoves moves;
  const auto sparse = Pattern(true);
  const auto dense = Pattern(false);
  EXPECT_EQ(moves.EncodingFor(*t.fast, *t.slow, sparse.data(), kMoveSize, BufferCodec::kNone), 0u);
  EXPECT_EQ(moves.counters().codec_declined, 0u) << "no codec asked: nothing declined";
  EXPECT_EQ(moves.EncodingFor(*t.fast, *t.slow, sparse.data(), kMoveSize, BufferCodec::kZeroBlocks),
            0u)
      << "the link is not measured yet: nothing is known to pay";
  EXPECT_EQ(moves.counters().codec_declined, 1u);
  EXPECT_EQ(moves.counters().codec_seconds, 0) << "and no sizing pass was spent";
  const uint64_t encoded =
      moves.EncodingFor(*t.fast, *t.slow, sparse.data(), kMoveSize, BufferCodec::kZeroBlocksAlways);
  EXPECT_GT(encoded, 0u);
  EXPECT_LT(encoded, kMoveSize / 4) << "one block in eight is non-zero";
  EXPECT_EQ(
      moves.EncodingFor(*t.fast, *t.slow, dense.data(), kMoveSize, BufferCodec::kZeroBlocksAlways),
      0u)
      << "a dense buffer's encoding is no smaller";
  EXPECT_EQ(moves.counters().codec_declined, 2u);
}

TEST(TierMovesTest, AnEncodedMoveCrossesItsEncodingAndComesBackExact) {
  Pair t;
  TierMoves moves;
  const auto want = Pattern(true);
  void* fast = t.fast->Allocate(kMoveSize).value();
  std::memcpy(fast, want.data(), kMoveSize);
  const uint64_t encoded =
      moves.EncodingFor(*t.fast, *t.slow, fast, kMoveSize, BufferCodec::kZeroBlocksAlways);
  ASSERT_GT(encoded, 0u);
  void* slow = t.slow->Allocate(encoded).value();  // only the encoding's bytes
  ASSERT_TRUE(moves.Down(*t.fast, *t.slow, slow, fast, kMoveSize, encoded).ok());
  moves.CountLanded(kMoveSize, encoded);
  std::memset(fast, 0xAB, kMoveSize);
  ASSERT_TRUE(moves.Up(*t.fast, *t.slow, fast, slow, kMoveSize, encoded).ok());
  EXPECT_EQ(std::memcmp(fast, want.data(), kMoveSize), 0);
  EXPECT_EQ(moves.counters().moved_encoded, kMoveSize);
  EXPECT_EQ(moves.counters().codec_saved, kMoveSize - encoded);
  EXPECT_EQ(moves.rates().link_rate(), 0) << "encoded moves measure the codec, not the link";
  EXPECT_GT(moves.rates().codec_rate(), 0);
  t.fast->Free(fast);
  t.slow->Free(slow);
}

}  // namespace
}  // namespace seedance::trim
