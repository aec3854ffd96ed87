#include "trim/zero_block_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace seedance::trim {
namespace {

std::vector<std::byte> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte{static_cast<uint8_t>(rng() | 1)};  // never 0: blocks non-zero
  return v;
}

// Zeroes whole blocks so that `zero_fraction` of them are zero, chosen at random.
void ZeroBlocks(std::vector<std::byte>& v, double zero_fraction, uint32_t seed) {
  const uint64_t blocks = ZeroBlockCount(v.size());
  std::vector<uint64_t> order(blocks);
  for (uint64_t i = 0; i < blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  const auto zero = static_cast<uint64_t>(zero_fraction * static_cast<double>(blocks) + 0.5);
  for (uint64_t i = 0; i < zero; ++i) {
    const uint64_t b = order[i];
    const size_t end = std::min<size_t>(v.size(), (b + 1) * kZeroBlockSize);
    std::fill(v.begin() + static_cast<ptrdiff_t>(b * kZeroBlockSize),
              v.begin() + static_cast<ptrdiff_t>(end), std::byte{0});
  }
}

void ExpectRoundTrip(const std::vector<std::byte>& data, const char* what) {
  std::vector<std::byte> encoded;
  ZeroBlockEncode(data, encoded);
  std::vector<std::byte> decoded(data.size(), std::byte{0xEE});
  ASSERT_TRUE(ZeroBlockDecode(encoded, decoded).ok()) << what;
  EXPECT_EQ(decoded, data) << what;
  uint64_t size = 0;
  ASSERT_TRUE(ZeroBlockDecodedSize(encoded, &size).ok());
  EXPECT_EQ(size, data.size());
  // What the trims use: the length first (to size the slower tier's block), then the encoding
  // written into exactly that many bytes; the same bytes as ZeroBlockEncode.
  ASSERT_EQ(ZeroBlockEncodedSize(data), encoded.size()) << what;
  std::vector<std::byte> into(encoded.size(), std::byte{0xEE});
  ASSERT_TRUE(ZeroBlockEncodeTo(data, into).ok()) << what;
  EXPECT_EQ(into, encoded) << what;
}

TEST(ZeroBlockCodecTest, RoundTripsBitExactlyAtEveryZeroFraction) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{1} << 20,
                      (size_t{1} << 20) + 77}) {
    for (double z : {0.0, 0.5, 0.9, 1.0}) {
      auto data = RandomBytes(size, static_cast<uint32_t>(size) + 1);
      ZeroBlocks(data, z, 3);
      ExpectRoundTrip(data, ("size " + std::to_string(size) + " z " + std::to_string(z)).c_str());
      std::vector<std::byte> encoded;
      ZeroBlockEncode(data, encoded);
      const uint64_t blocks = ZeroBlockCount(size);
      const auto zero = static_cast<uint64_t>(z * static_cast<double>(blocks) + 0.5);
      EXPECT_LE(encoded.size(), kZeroBlockHeaderSize + ZeroBlockBitmapBytes(size) +
                                    (blocks - zero) * kZeroBlockSize)
          << "only the non-zero blocks are carried";
      if (blocks > 0) {
        EXPECT_DOUBLE_EQ(ZeroBlockFraction(data), double(zero) / double(blocks));
      }
    }
  }
}

TEST(ZeroBlockCodecTest, AdversarialLayoutsRoundTrip) {
  const size_t size = 64 * kZeroBlockSize + 100;
  std::vector<std::byte> every_other(size, std::byte{0});
  for (size_t b = 0; b < ZeroBlockCount(size); b += 2) {
    for (size_t i = b * kZeroBlockSize; i < std::min(size, (b + 1) * kZeroBlockSize); ++i) {
      every_other[i] = std::byte{0x5A};
    }
  }
  ExpectRoundTrip(every_other, "every other block");
  EXPECT_NEAR(ZeroBlockFraction(every_other), 32.0 / 65.0, 1e-12);

  std::vector<std::byte> last_byte(size, std::byte{0});
  for (size_t b = 0; b < ZeroBlockCount(size); ++b) {
    last_byte[std::min(size, (b + 1) * kZeroBlockSize) - 1] = std::byte{1};
  }
  ExpectRoundTrip(last_byte, "the last byte of every block");
  EXPECT_EQ(ZeroBlockFraction(last_byte), 0.0) << "one byte makes a block non-zero";

  std::vector<std::byte> first_byte(size, std::byte{0});
  first_byte[0] = std::byte{0x80};
  ExpectRoundTrip(first_byte, "one byte in the first block");
}

TEST(ZeroBlockCodecTest, MalformedEncodingsAreRefused) {
  auto data = RandomBytes(10 * kZeroBlockSize + 3, 9);
  ZeroBlocks(data, 0.5, 1);
  std::vector<std::byte> encoded;
  ZeroBlockEncode(data, encoded);
  std::vector<std::byte> out(data.size());

  auto bad = encoded;
  bad[0] = std::byte{0};
  EXPECT_FALSE(ZeroBlockDecode(bad, out).ok()) << "magic";

  std::vector<std::byte> small(data.size() - 1);
  EXPECT_FALSE(ZeroBlockDecode(encoded, small).ok()) << "size";

  bad = encoded;
  bad.pop_back();
  EXPECT_FALSE(ZeroBlockDecode(bad, out).ok()) << "payload cut short";

  bad = encoded;
  bad.push_back(std::byte{1});
  EXPECT_FALSE(ZeroBlockDecode(bad, out).ok()) << "payload too long";

  bad = encoded;  // 11 blocks: bits 11..15 of the second bitmap byte must stay clear
  bad[kZeroBlockHeaderSize + 1] |= std::byte{0x80};
  EXPECT_FALSE(ZeroBlockDecode(bad, out).ok()) << "a bit past the last block";

  EXPECT_FALSE(ZeroBlockDecode(std::span(encoded).first(10), out).ok()) << "header cut";
}

TEST(ZeroBlockCodecTest, PaysOnlyWhenTheMeasuredRatesSaySo) {
  const uint64_t size = 64ull << 20;
  // A 55 GB/s link and a 400 GB/s codec: two passes cost 2/400 per byte, saving z/55.
  EXPECT_FALSE(CodecPays(size, 0.0, 55, 400)) << "dense buffers never";
  EXPECT_FALSE(CodecPays(size, 0.2, 55, 400));
  EXPECT_TRUE(CodecPays(size, 0.5, 55, 400));
  EXPECT_TRUE(CodecPays(size, 0.9, 55, 400));
  EXPECT_FALSE(CodecPays(size, 0.9, 55, 50)) << "a codec slower than the link";
  EXPECT_FALSE(CodecPays(0, 0.9, 55, 400));
}

TEST(ZeroBlockCodecTest, EncodingIntoABlockOfTheWrongSizeIsAnError) {
  auto data = RandomBytes(10 * kZeroBlockSize, 9);
  ZeroBlocks(data, 0.5, 4);
  const uint64_t exact = ZeroBlockEncodedSize(data);
  // Data that changed between sizing and encoding (a block that became non-zero, or zero) does
  // not fit its block: refused, never written past it.
  std::vector<std::byte> longer(exact + kZeroBlockSize + 64, std::byte{0});
  std::vector<std::byte> shorter(exact - kZeroBlockSize);
  Status grew = ZeroBlockEncodeTo(data, std::span(longer).first(exact - kZeroBlockSize));
  EXPECT_FALSE(grew.ok());
  EXPECT_NE(grew.ToString().find("changed"), std::string::npos) << grew.ToString();
  for (size_t i = exact - kZeroBlockSize; i < longer.size(); ++i) {
    ASSERT_EQ(longer[i], std::byte{0}) << "written past the block at " << i;
  }
  EXPECT_FALSE(ZeroBlockEncodeTo(data, shorter).ok());
  EXPECT_FALSE(ZeroBlockEncodeTo(data, std::span(longer).first(exact + kZeroBlockSize)).ok());
  EXPECT_FALSE(ZeroBlockEncodeTo(data, std::span(longer).first(8)).ok())
      << "no room for the header";
  EXPECT_TRUE(ZeroBlockEncodeTo(data, std::span(longer).first(exact)).ok());
}

}  // namespace
}  // namespace seedance::trim
