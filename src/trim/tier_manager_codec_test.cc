// TierManager with the zero-block codec (BufferCodec): what crosses, what the slower tier
// holds, and what comes back. The random sequences with codec buffers are in
// tier_manager_test.cc (ContentSurvivesAnySequenceOfMoves); the decision from measured rates
// in codec_rates_test.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "seedance/trim.h"
#include "trim/size_units_testing.h"
#include "trim/zero_block_codec.h"

namespace seedance::trim {
namespace {

constexpr uint64_t kTrimmedSize = 512 * kKiB;

std::unique_ptr<TierManager> Make(std::unique_ptr<Tier> fast, bool async) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(std::move(fast));
  tiers.push_back(MakeHostTier("slow", 4096 * kKiB));
  PolicyOptions o;
  o.min_victim_bytes = 0;
  o.async_copies = async;
  return TierManager::Create(std::move(tiers), o).value();
}

// One block in ten non-zero: its pattern tells the blocks apart.
std::vector<unsigned char> Sparse(uint64_t size) {
  std::vector<unsigned char> v(size, 0);
  for (uint64_t block = 0; block * 256 < size; block += 10) {
    for (uint64_t i = 0; i < 256 && block * 256 + i < size; ++i) {
      v[block * 256 + i] = static_cast<unsigned char>(block * 7 + i + 1);
    }
  }
  return v;
}

void Write(TierManager& m, BufferId id, const std::vector<unsigned char>& v) {
  auto p = m.Acquire(id);
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  std::memcpy(*p, v.data(), v.size());
  ASSERT_TRUE(m.Release(id).ok());
}

void ExpectContent(TierManager& m, BufferId id, const std::vector<unsigned char>& v,
                   bool read_only) {
  const void* p = nullptr;
  if (read_only) {
    auto r = m.AcquireRead(id);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    p = *r;
  } else {
    auto w = m.Acquire(id);
    ASSERT_TRUE(w.has_value()) << w.error().ToString();
    p = *w;
  }
  EXPECT_EQ(std::memcmp(p, v.data(), v.size()), 0) << "the bytes that came back differ";
  ASSERT_TRUE(m.Release(id).ok());
}

// Moves everything idle off the fast tier: a Step (so the buffers count as idle) and a Trim.
void TrimAll(TierManager& m) {
  m.Step();
  m.Step();
  m.Trim();
  (void)m.Stats();  // lands moves in flight
}

TEST(TierManagerCodecTest, AMostlyZeroBufferTakesOnlyItsNonZeroBlocksOnTheSlowerTier) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async copies" : "sync copies");
    auto m = Make(MakeHostTier("fast", kTrimmedSize + 4 * kKiB), async);
    const auto data = Sparse(kTrimmedSize);
    std::vector<std::byte> reference;
    ZeroBlockEncode(std::as_bytes(std::span(data)), reference);
    auto id = *m->Register(kTrimmedSize);
    ASSERT_TRUE(m->SetCodec(id, BufferCodec::kZeroBlocksAlways).ok());
    Write(*m, id, data);
    TrimAll(*m);
    ASSERT_EQ(*m->TierOf(id), 1);
    TrimStats s = m->Stats();
    // 205 of 2048 blocks: about a tenth of the buffer, plus the header and bitmap.
    EXPECT_EQ(s.tiers[1].used, (reference.size() + 255) / 256 * 256) << "the encoding only";
    EXPECT_LT(s.tiers[1].used, kTrimmedSize / 9);
    EXPECT_EQ(s.tiers[0].used, 0u);
    EXPECT_EQ(s.bytes_moved_down, kTrimmedSize);
    EXPECT_EQ(s.bytes_moved_encoded, kTrimmedSize);
    EXPECT_EQ(s.bytes_codec_saved, kTrimmedSize - reference.size());
    EXPECT_GT(s.codec_seconds, 0.0);
    // Back (a stall), the bytes as written; read only, so the encoding stays as its copy ...
    ExpectContent(*m, id, data, /*read_only=*/true);
    s = m->Stats();
    EXPECT_EQ(s.bytes_moved_encoded, 2 * kTrimmedSize);
    EXPECT_EQ(s.retained_bytes, reference.size());
    // ... and the next move down needs no pass at all.
    TrimAll(*m);
    s = m->Stats();
    EXPECT_EQ(s.bytes_down_without_copy, kTrimmedSize);
    EXPECT_EQ(s.bytes_moved_encoded, 2 * kTrimmedSize);
    ExpectContent(*m, id, data, /*read_only=*/false);
    // Written: the kept encoding is stale and dropped; new content is encoded anew.
    auto changed = data;
    changed[5 * 256 + 3] = 0xAB;  // a zero block becomes non-zero
    changed[0] = 0;
    Write(*m, id, changed);
    EXPECT_EQ(m->Stats().retained_bytes, 0u);
    TrimAll(*m);
    ASSERT_EQ(*m->TierOf(id), 1);
    EXPECT_EQ(m->Stats().bytes_moved_encoded, 4 * kTrimmedSize);
    ExpectContent(*m, id, changed, /*read_only=*/false);
    ASSERT_TRUE(m->Unregister(id).ok());
    EXPECT_EQ(m->Stats().tiers[1].used, 0u);
  }
}

TEST(TierManagerCodecTest, ADenseBufferCrossesAsItIs) {
  auto m = Make(MakeHostTier("fast", kTrimmedSize + 4 * kKiB), /*async=*/false);
  std::vector<unsigned char> dense(kTrimmedSize);
  for (uint64_t i = 0; i < kTrimmedSize; ++i) dense[i] = static_cast<unsigned char>(i % 251 + 1);
  auto id = *m->Register(kTrimmedSize);
  ASSERT_TRUE(m->SetCodec(id, BufferCodec::kZeroBlocksAlways).ok());
  Write(*m, id, dense);
  TrimAll(*m);
  ASSERT_EQ(*m->TierOf(id), 1);
  TrimStats s = m->Stats();
  EXPECT_EQ(s.tiers[1].used, kTrimmedSize) << "an encoding no smaller is not used";
  EXPECT_EQ(s.bytes_moved_encoded, 0u);
  EXPECT_EQ(s.codec_declined, 1u);
  ExpectContent(*m, id, dense, /*read_only=*/false);
}

TEST(TierManagerCodecTest, WhenItPaysNothingIsEncodedBeforeTheLinkIsMeasured) {
  auto m = Make(MakeHostTier("fast", kTrimmedSize + 4 * kKiB), /*async=*/false);
  const std::vector<unsigned char> zeros(kTrimmedSize, 0);
  auto id = *m->Register(kTrimmedSize);
  ASSERT_TRUE(m->SetCodec(id, BufferCodec::kZeroBlocks).ok());
  Write(*m, id, zeros);
  TrimAll(*m);
  ASSERT_EQ(*m->TierOf(id), 1);
  TrimStats s = m->Stats();
  EXPECT_EQ(s.bytes_moved_encoded, 0u) << "no link rate yet: the first move measures it";
  EXPECT_EQ(s.codec_declined, 1u);
  EXPECT_EQ(s.codec_seconds, 0.0) << "not even a sizing pass";
  EXPECT_GT(s.copy_seconds, 0.0);
  ExpectContent(*m, id, zeros, /*read_only=*/false);
}

TEST(TierManagerCodecTest, AddressKeepingBuffersComeBackToTheirAddress) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async copies" : "sync copies");
    auto m = Make(MakeAddressKeepingHostTier("keeping", kTrimmedSize + 4 * kKiB), async);
    const auto data = Sparse(kTrimmedSize);
    auto id = *m->Register(kTrimmedSize, "w", "", /*stable_address=*/true);
    ASSERT_TRUE(m->SetCodec(id, BufferCodec::kZeroBlocksAlways).ok());
    void* home = *m->Acquire(id);
    std::memcpy(home, data.data(), kTrimmedSize);
    ASSERT_TRUE(m->Release(id).ok());
    TrimAll(*m);
    ASSERT_EQ(*m->TierOf(id), 1);
    EXPECT_LT(m->Stats().tiers[1].used, kTrimmedSize / 9);
    EXPECT_EQ(*m->Lookup(home), id) << "found by the address it keeps";
    auto back = m->Acquire(id);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, home);
    EXPECT_EQ(std::memcmp(*back, data.data(), kTrimmedSize), 0);
    ASSERT_TRUE(m->Release(id).ok());
  }
}

TEST(TierManagerCodecTest, UnknownBufferIsNotFound) {
  auto m = Make(MakeHostTier("fast", kTrimmedSize), /*async=*/false);
  EXPECT_EQ(m->SetCodec(42, BufferCodec::kZeroBlocks).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace seedance::trim
