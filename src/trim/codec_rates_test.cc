#include "trim/codec_rates.h"

#include <gtest/gtest.h>

#include "trim/zero_block_codec.h"

namespace seedance::trim {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t EncodedAt(uint64_t size, double zero_fraction) {
  return kZeroBlockHeaderSize + ZeroBlockBitmapBytes(size) +
         static_cast<uint64_t>((1.0 - zero_fraction) * static_cast<double>(size));
}

TEST(CodecRatesTest, NothingIsChosenBeforeTheLinkIsMeasured) {
  CodecRates r;
  EXPECT_FALSE(r.MightPay(64 * kMiB));
  r.AddPass(64 * kMiB, 0.001);  // a fast codec alone proves nothing
  EXPECT_FALSE(r.MightPay(64 * kMiB));
  EXPECT_FALSE(r.Pays(64 * kMiB, EncodedAt(64 * kMiB, 1.0)));
  r.AddCopy(64 * kMiB, 0.01);
  EXPECT_TRUE(r.MightPay(64 * kMiB));
}

TEST(CodecRatesTest, AnUnmeasuredCodecIsWorthOneSizingPass) {
  CodecRates r;
  r.AddCopy(100 * kMiB, 1.0);
  EXPECT_EQ(r.codec_rate(), 0.0);
  EXPECT_TRUE(r.MightPay(kMiB));
}

TEST(CodecRatesTest, TheThresholdFollowsTheMeasuredRates) {
  // A 55 GB/s link (PCIe 5 pinned) and a codec pass at 1,000 GB/s (device memory): the codec
  // pays once the zero blocks save more link time than two passes cost, z > 2 × 55 / 1000.
  CodecRates fast_codec;
  fast_codec.AddCopy(55'000'000'000ull, 1.0);
  fast_codec.AddPass(1'000'000'000'000ull, 1.0);
  const uint64_t size = 256 * kMiB;
  EXPECT_FALSE(fast_codec.Pays(size, EncodedAt(size, 0.0))) << "dense: never";
  EXPECT_FALSE(fast_codec.Pays(size, EncodedAt(size, 0.09)));
  EXPECT_TRUE(fast_codec.Pays(size, EncodedAt(size, 0.15)));
  EXPECT_TRUE(fast_codec.Pays(size, EncodedAt(size, 0.9)));
  // A codec only as fast as the link never pays: two passes cost more than any saving.
  CodecRates slow_codec;
  slow_codec.AddCopy(10 * kMiB, 0.001);
  slow_codec.AddPass(10 * kMiB, 0.001);
  EXPECT_FALSE(slow_codec.MightPay(size));
  EXPECT_FALSE(slow_codec.Pays(size, EncodedAt(size, 1.0)));
  // Twice the link: pays only when (nearly) everything is zero.
  CodecRates twice;
  twice.AddCopy(10 * kMiB, 0.002);
  twice.AddPass(10 * kMiB, 0.0009);
  EXPECT_TRUE(twice.MightPay(size));
  EXPECT_TRUE(twice.Pays(size, EncodedAt(size, 1.0)));
  EXPECT_FALSE(twice.Pays(size, EncodedAt(size, 0.8)));
}

TEST(CodecRatesTest, AnEncodingNoSmallerThanTheBufferNeverPays) {
  CodecRates r;
  r.AddCopy(kMiB, 1.0);
  r.AddPass(1000 * kMiB, 0.001);
  EXPECT_FALSE(r.Pays(1000, 1000 + kZeroBlockHeaderSize));
  EXPECT_FALSE(r.Pays(0, 0));
}

}  // namespace
}  // namespace seedance::trim
