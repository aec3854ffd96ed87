#include "trim/cuda/zero_block_staging.h"

#include <algorithm>
#include <bitset>
#include <cstring>
#include <string>

#include "trim/cuda/cuda_support.h"
#include "trim/cuda/zero_block_codec.h"

namespace seedance::trim::cuda {
namespace {

constexpr uint64_t kBlock = 256;  // trim/zero_block_codec.h
constexpr uint64_t kHeader = 32;
constexpr uint32_t kMagic = 0x425A4453;

uint64_t Blocks(uint64_t size) { return (size + kBlock - 1) / kBlock; }
uint64_t BitmapBytes(uint64_t size) { return (Blocks(size) + 127) / 128 * 16; }

static_assert(ZeroBlockStaging::kChunk % (128 * kBlock) == 0, "chunk bitmaps must be whole units");

// Bytes of the packed blocks a chunk's encoding carries.
uint64_t Payload(uint64_t chunk_encoding, uint64_t n) {
  return chunk_encoding - kHeader - BitmapBytes(n);
}

}  // namespace

uint64_t ZeroBlockStaging::DeviceBytes() {
  return ZeroBlockEncodedCapacity(kChunk) + ZeroBlockScratchBytes(kChunk);
}

ZeroBlockStaging::~ZeroBlockStaging() {
  if (staging_ != nullptr) (void)cudaFree(staging_);
  if (scratch_ != nullptr) (void)cudaFree(scratch_);
}

Status ZeroBlockStaging::Init() {
  cudaError_t e = cudaMalloc(&staging_, ZeroBlockEncodedCapacity(kChunk));
  if (e == cudaSuccess) e = cudaMalloc(&scratch_, ZeroBlockScratchBytes(kChunk));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation
               ? ResourceExhaustedError("zero-block codec: no device memory for its staging")
               : RuntimeError(e, "zero-block codec staging");
  }
  return Status::Ok();
}

Status ZeroBlockStaging::EncodeChunk(const unsigned char* src, uint64_t n, cudaStream_t stream,
                                     uint64_t* bytes) {
  return ZeroBlockEncodeDevice(src, n, staging_, scratch_, stream, bytes);
}

Status ZeroBlockStaging::EncodedSize(const void* src, uint64_t size, cudaStream_t stream,
                                     uint64_t* encoded) {
  const auto* in = static_cast<const unsigned char*>(src);
  uint64_t payload = 0;
  for (uint64_t at = 0; at < size; at += kChunk) {
    const uint64_t n = std::min(kChunk, size - at);
    uint64_t bytes = 0;
    SEEDANCE_RETURN_IF_ERROR(EncodeChunk(in + at, n, stream, &bytes));
    payload += Payload(bytes, n);
  }
  *encoded = kHeader + BitmapBytes(size) + payload;
  return Status::Ok();
}

Status ZeroBlockStaging::Encode(const void* src, uint64_t size, void* dst, uint64_t encoded,
                                cudaStream_t stream) {
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  const uint64_t payload_at = kHeader + BitmapBytes(size);
  if (encoded < payload_at) return InvalidArgumentError("zero-block encode: no room for bitmap");
  uint64_t written = payload_at;
  uint64_t nonzero = 0;
  for (uint64_t at = 0; at < size; at += kChunk) {
    const uint64_t n = std::min(kChunk, size - at);
    uint64_t bytes = 0;
    SEEDANCE_RETURN_IF_ERROR(EncodeChunk(in + at, n, stream, &bytes));
    const uint64_t payload = Payload(bytes, n);
    if (written + payload > encoded) {
      return InvalidArgumentError("zero-block encoding of " + std::to_string(size) +
                                  " bytes outgrew its " + std::to_string(encoded) +
                                  " (the data changed while encoded)");
    }
    cudaError_t e = cudaMemcpyAsync(out + kHeader + at / (8 * kBlock), staging_ + kHeader,
                                    BitmapBytes(n), cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess && payload > 0) {
      e = cudaMemcpyAsync(out + written, staging_ + kHeader + BitmapBytes(n), payload,
                          cudaMemcpyDeviceToHost, stream);
    }
    if (e != cudaSuccess) return RuntimeError(e, "zero-block encode copy");
    written += payload;
    nonzero += (payload + kBlock - 1) / kBlock;  // only the buffer's last block is short
  }
  if (written != encoded) {
    return InvalidArgumentError("zero-block encoding of " + std::to_string(size) + " bytes took " +
                                std::to_string(written) + " of " + std::to_string(encoded) +
                                " (the data changed while encoded)");
  }
  const uint32_t head[2] = {kMagic, 1u | (static_cast<uint32_t>(kBlock) << 16)};
  const uint64_t tail[3] = {size, nonzero, 0};
  std::memcpy(out, head, sizeof head);  // pinned memory: the CPU writes it directly
  std::memcpy(out + sizeof head, tail, sizeof tail);
  return Status::Ok();
}

Status ZeroBlockStaging::Decode(const void* src, uint64_t encoded, void* dst, uint64_t size,
                                cudaStream_t stream) {
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  const uint64_t payload_at = kHeader + BitmapBytes(size);
  uint64_t read = payload_at;
  for (uint64_t at = 0; at < size; at += kChunk) {
    const uint64_t n = std::min(kChunk, size - at);
    const unsigned char* bitmap = in + kHeader + at / (8 * kBlock);
    // The chunk's packed bytes: its set bits (read from pinned memory by the CPU), the
    // buffer's short last block counted at its length.
    uint64_t set = 0;
    for (uint64_t i = 0; i < BitmapBytes(n); ++i) set += std::bitset<8>(bitmap[i]).count();
    uint64_t payload = set * kBlock;
    const uint64_t last = Blocks(n) - 1;
    if (n % kBlock != 0 && ((bitmap[last / 8] >> (last % 8)) & 1u)) payload -= kBlock - n % kBlock;
    if (read + payload > encoded) {
      return InvalidArgumentError("zero-block decode: the bitmap asks for more than the " +
                                  std::to_string(encoded) + " bytes encoded");
    }
    cudaError_t e =
        cudaMemcpyAsync(staging_ + kHeader, bitmap, BitmapBytes(n), cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess && payload > 0) {
      e = cudaMemcpyAsync(staging_ + kHeader + BitmapBytes(n), in + read, payload,
                          cudaMemcpyHostToDevice, stream);
    }
    if (e != cudaSuccess) return RuntimeError(e, "zero-block decode copy");
    SEEDANCE_RETURN_IF_ERROR(ZeroBlockDecodeDevice(staging_, n, out + at, scratch_, stream));
    read += payload;
  }
  if (read != encoded) {
    return InvalidArgumentError("zero-block decode: " + std::to_string(encoded - read) +
                                " encoded bytes left over");
  }
  return Status::Ok();
}

}  // namespace seedance::trim::cuda
