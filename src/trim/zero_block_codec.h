// ZeroBlockCodec: a buffer that is mostly zero costs only its non-zero bytes on the link (the
// article's 2.3 done as cDMA does it: no entropy coder, only zero blocks left out).
//
// The buffer is cut into 256-byte blocks (the last one may be shorter). The encoding is
//   header (32 bytes: magic "SDZB", format version, block size, original size, non-zero
//   block count) | bitmap (one bit per block, 1 = non-zero, LSB first, padded with zero bits
//   to a multiple of 16 bytes so the blocks after it stay 16-byte aligned) | the non-zero
//   blocks, packed in order.
// This is the CPU reference: the CUDA codec (cuda/zero_block_codec.cu: a flag kernel, an
// exclusive scan, compaction, one copy of the packed bytes, expansion on arrival) writes the
// same bytes, so either side can decode the other's.
//
// Whether it pays: encoding and decoding each read the buffer once, so for zero fraction z the
// codec moves (1 - z) of the bytes plus the bitmap but spends two passes at `codec_gbps`.
// CodecPays compares the two times from measured rates (never a fixed threshold; dense bf16
// weights have z ≈ 0 and never pass it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "seedance/status.h"

namespace seedance::trim {

inline constexpr uint32_t kZeroBlockSize = 256;
inline constexpr size_t kZeroBlockHeaderSize = 32;

// Blocks of `size` bytes and the bitmap's length in bytes.
uint64_t ZeroBlockCount(uint64_t size);
uint64_t ZeroBlockBitmapBytes(uint64_t size);

// The fraction of `data`'s blocks that are all zero (0 for an empty buffer).
double ZeroBlockFraction(std::span<const std::byte> data);

// Replaces `out` with the encoding of `data`.
void ZeroBlockEncode(std::span<const std::byte> data, std::vector<std::byte>& out);

// The length of `data`'s encoding: header, bitmap and its non-zero blocks (one pass over it,
// leaving each non-zero block at its first non-zero word).
uint64_t ZeroBlockEncodedSize(std::span<const std::byte> data);

// Writes the encoding of `data` into `out`, which is exactly ZeroBlockEncodedSize(data) bytes
// (the trims size the slower tier's block by it). kInvalidArgument, with `out` unspecified,
// when the encoding does not fill `out` exactly (the data changed in between).
Status ZeroBlockEncodeTo(std::span<const std::byte> data, std::span<std::byte> out);

// Decodes `encoded` into `out`, which must be exactly the original size. Malformed input
// (wrong magic or version, sizes that do not add up, bits set past the last block) is an
// error, and `out` is then unspecified.
Status ZeroBlockDecode(std::span<const std::byte> encoded, std::span<std::byte> out);

// The original size an encoding announces (an error if the header is malformed).
Status ZeroBlockDecodedSize(std::span<const std::byte> encoded, uint64_t* size);

// Whether moving `size` bytes with zero fraction `zero_fraction` over a link of `link_gbps`
// is faster through the codec (two passes at `codec_gbps`) than as they are.
bool CodecPays(uint64_t size, double zero_fraction, double link_gbps, double codec_gbps);

}  // namespace seedance::trim
