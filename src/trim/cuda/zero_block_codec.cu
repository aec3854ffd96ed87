#include "trim/cuda/zero_block_codec.h"

#include <cub/device/device_scan.cuh>

#include <string>

#include "trim/cuda/cuda_support.h"

namespace seedance::trim::cuda {
namespace {

constexpr uint32_t kBlock = 256;  // bytes per codec block (trim/zero_block_codec.h)
constexpr uint64_t kHeader = 32;  // header bytes
constexpr uint32_t kMagic = 0x425A4453;
constexpr int kThreads = 64;  // 4 bytes of a block per thread

uint64_t Blocks(uint64_t size) { return (size + kBlock - 1) / kBlock; }
uint64_t BitmapBytes(uint64_t size) { return (Blocks(size) + 127) / 128 * 16; }
uint64_t Align(uint64_t v) { return (v + 255) / 256 * 256; }

size_t ScanTempBytes(uint64_t blocks) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                static_cast<uint32_t*>(nullptr), static_cast<int>(blocks));
  return bytes;
}

struct Scratch {  // flags[blocks] | offsets[blocks] | bitmap words | count | CUB temp
  uint32_t* flags;
  uint32_t* offsets;
  uint32_t* bitmap;
  uint32_t* count;
  void* temp;
  size_t temp_bytes;
};

Scratch Carve(void* scratch, uint64_t size) {
  const uint64_t blocks = Blocks(size);
  auto* base = static_cast<unsigned char*>(scratch);
  Scratch s;
  s.flags = reinterpret_cast<uint32_t*>(base);
  s.offsets = reinterpret_cast<uint32_t*>(base + Align(blocks * 4));
  s.bitmap = reinterpret_cast<uint32_t*>(base + 2 * Align(blocks * 4));
  s.count = reinterpret_cast<uint32_t*>(base + 2 * Align(blocks * 4) + Align(BitmapBytes(size)));
  s.temp = base + 2 * Align(blocks * 4) + Align(BitmapBytes(size)) + 256;
  s.temp_bytes = ScanTempBytes(blocks);
  return s;
}

__device__ uint32_t Load4(const unsigned char* p, uint64_t at, uint64_t size) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    if (at + i < size) v |= static_cast<uint32_t>(p[at + i]) << (8 * i);
  }
  return v;
}

__device__ void Store4(unsigned char* p, uint64_t at, uint64_t limit, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    if (at + i < limit) p[at + i] = static_cast<unsigned char>(v >> (8 * i));
  }
}

__global__ void FlagBlocks(const unsigned char* src, uint64_t size, uint32_t* flags,
                           uint32_t* bitmap) {
  const uint64_t b = blockIdx.x;
  const uint64_t at = b * kBlock + threadIdx.x * 4;
  const int nonzero = __syncthreads_or(Load4(src, at, size) != 0);
  if (threadIdx.x == 0) {
    flags[b] = nonzero;
    if (nonzero) atomicOr(&bitmap[b / 32], 1u << (b % 32));
  }
}

__global__ void Compact(const unsigned char* src, uint64_t size, const uint32_t* flags,
                        const uint32_t* offsets, unsigned char* payload) {
  const uint64_t b = blockIdx.x;
  if (!flags[b]) return;
  const uint64_t at = b * kBlock + threadIdx.x * 4;
  const uint64_t to = static_cast<uint64_t>(offsets[b]) * kBlock + threadIdx.x * 4;
  const uint64_t end =
      offsets[b] * uint64_t{kBlock} + (size - b * kBlock < kBlock ? size - b * kBlock : kBlock);
  Store4(payload, to, end, Load4(src, at, size));
}

__global__ void WriteHeader(unsigned char* dst, uint64_t size, const uint32_t* flags,
                            const uint32_t* offsets, uint64_t blocks, uint32_t* count) {
  const uint32_t nonzero = offsets[blocks - 1] + flags[blocks - 1];
  *count = nonzero;
  uint32_t* w = reinterpret_cast<uint32_t*>(dst);
  w[0] = kMagic;
  w[1] = 1u | (kBlock << 16);  // version 1, block size
  uint64_t* q = reinterpret_cast<uint64_t*>(dst);
  q[1] = size;
  q[2] = nonzero;
  q[3] = 0;
}

__global__ void FlagsFromBitmap(const unsigned char* bitmap, uint64_t blocks, uint32_t* flags) {
  const uint64_t b = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (b < blocks) flags[b] = (bitmap[b / 8] >> (b % 8)) & 1u;
}

__global__ void Expand(const unsigned char* payload, uint64_t size, const uint32_t* flags,
                       const uint32_t* offsets, unsigned char* dst) {
  const uint64_t b = blockIdx.x;
  const uint64_t at = b * kBlock + threadIdx.x * 4;
  const uint64_t n = size - b * kBlock < kBlock ? size - b * kBlock : kBlock;
  const uint64_t from = uint64_t{offsets[b]} * kBlock;
  const uint32_t v = flags[b] ? Load4(payload, from + threadIdx.x * 4, from + n) : 0u;
  Store4(dst, at, size, v);
}

}  // namespace

uint64_t ZeroBlockScratchBytes(uint64_t size) {
  const uint64_t blocks = Blocks(size);
  return 2 * Align(blocks * 4) + Align(BitmapBytes(size)) + 256 + Align(ScanTempBytes(blocks));
}

uint64_t ZeroBlockEncodedCapacity(uint64_t size) { return kHeader + BitmapBytes(size) + size; }

Status ZeroBlockEncodeDevice(const void* src, uint64_t size, void* dst, void* scratch,
                             cudaStream_t stream, uint64_t* encoded_bytes) {
  const uint64_t blocks = Blocks(size);
  auto* out = static_cast<unsigned char*>(dst);
  if (blocks == 0) {
    *encoded_bytes = kHeader;
    const uint32_t header[8] = {kMagic, 1u | (kBlock << 16), 0, 0, 0, 0, 0, 0};
    return RuntimeError(cudaMemcpyAsync(out, header, kHeader, cudaMemcpyHostToDevice, stream),
                        "zero-block header");
  }
  if (blocks > 0x7fffffffu) return InvalidArgumentError("zero-block codec: buffer too large");
  Scratch s = Carve(scratch, size);
  const auto* in = static_cast<const unsigned char*>(src);
  cudaError_t e = cudaMemsetAsync(s.bitmap, 0, BitmapBytes(size), stream);
  if (e == cudaSuccess) {
    FlagBlocks<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, size, s.flags, s.bitmap);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    e = cub::DeviceScan::ExclusiveSum(s.temp, s.temp_bytes, s.flags, s.offsets,
                                      static_cast<int>(blocks), stream);
  }
  if (e == cudaSuccess) {
    WriteHeader<<<1, 1, 0, stream>>>(out, size, s.flags, s.offsets, blocks, s.count);
    e = cudaMemcpyAsync(out + kHeader, s.bitmap, BitmapBytes(size), cudaMemcpyDeviceToDevice,
                        stream);
  }
  if (e == cudaSuccess) {
    Compact<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        in, size, s.flags, s.offsets, out + kHeader + BitmapBytes(size));
    e = cudaGetLastError();
  }
  uint32_t nonzero = 0;
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(&nonzero, s.count, 4, cudaMemcpyDeviceToHost, stream);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return RuntimeError(e, "zero-block encode");
  const bool last_set = nonzero > 0 && size % kBlock != 0;
  uint64_t payload = uint64_t{nonzero} * kBlock;
  if (last_set) {  // the short last block, if it is non-zero, is the last one packed
    uint32_t last_flag = 0;
    e = cudaMemcpy(&last_flag, s.flags + blocks - 1, 4, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return RuntimeError(e, "zero-block encode");
    if (last_flag) payload -= kBlock - size % kBlock;
  }
  *encoded_bytes = kHeader + BitmapBytes(size) + payload;
  return Status::Ok();
}

Status ZeroBlockDecodeDevice(const void* encoded, uint64_t size, void* dst, void* scratch,
                             cudaStream_t stream) {
  const uint64_t blocks = Blocks(size);
  if (blocks == 0) return Status::Ok();
  if (blocks > 0x7fffffffu) return InvalidArgumentError("zero-block codec: buffer too large");
  Scratch s = Carve(scratch, size);
  const auto* in = static_cast<const unsigned char*>(encoded);
  const unsigned grid = static_cast<unsigned>((blocks + 255) / 256);
  FlagsFromBitmap<<<grid, 256, 0, stream>>>(in + kHeader, blocks, s.flags);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    e = cub::DeviceScan::ExclusiveSum(s.temp, s.temp_bytes, s.flags, s.offsets,
                                      static_cast<int>(blocks), stream);
  }
  if (e == cudaSuccess) {
    Expand<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        in + kHeader + BitmapBytes(size), size, s.flags, s.offsets,
        static_cast<unsigned char*>(dst));
    e = cudaGetLastError();
  }
  return e == cudaSuccess ? Status::Ok() : RuntimeError(e, "zero-block decode");
}

}  // namespace seedance::trim::cuda
