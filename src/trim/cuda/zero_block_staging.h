// ZeroBlockStaging: the zero-block codec on moves between device memory and pinned host memory
// (the CUDA device tier's codec hooks, seedance/trim.h), through a fixed device staging area
// that holds one chunk of kChunk bytes at a time, so a buffer of any size is encoded with the
// same few MiB of device memory. The encoding written to host memory is the CPU codec's
// (trim/zero_block_codec.h) byte for byte: each chunk is encoded on the device
// (cuda/zero_block_codec.h) and its bitmap slice and packed blocks copied to their places in
// the whole buffer's layout; on the way back each chunk's slices are copied up into the staging
// area and expanded in place. C++17 (nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "seedance/status.h"

namespace seedance::trim::cuda {

class ZeroBlockStaging {
 public:
  // A multiple of 32 KiB (128 blocks): a chunk's bitmap slice is whole 16-byte units, so the
  // slices of consecutive chunks make the buffer's bitmap.
  static constexpr uint64_t kChunk = 8ull << 20;
  // Device bytes it takes: a chunk's largest encoding and the codec's scratch.
  static uint64_t DeviceBytes();

  ZeroBlockStaging() = default;
  ~ZeroBlockStaging();
  ZeroBlockStaging(const ZeroBlockStaging&) = delete;
  ZeroBlockStaging& operator=(const ZeroBlockStaging&) = delete;
  Status Init();  // allocates the device memory (cudaMalloc), on the current device

  // Each call issues its work on `stream` and may wait for it (once per chunk while encoding, to
  // read how many blocks are non-zero); the caller waits for the stream before using the result.
  // The length of the encoding of device `src` (`size` bytes): an encoding pass, discarded.
  Status EncodedSize(const void* src, uint64_t size, cudaStream_t stream, uint64_t* encoded);
  // Encodes device `src` into pinned host `dst` of exactly `encoded` bytes (EncodedSize); an
  // error, with nothing written past `dst + encoded`, when the data no longer fits it.
  Status Encode(const void* src, uint64_t size, void* dst, uint64_t encoded, cudaStream_t stream);
  // Decodes pinned host `src` (`encoded` bytes, this library's own encoding) into device `dst`.
  Status Decode(const void* src, uint64_t encoded, void* dst, uint64_t size, cudaStream_t stream);

 private:
  // Encodes one chunk into the staging area; `*bytes` is its encoding's length.
  Status EncodeChunk(const unsigned char* src, uint64_t n, cudaStream_t stream, uint64_t* bytes);

  unsigned char* staging_ = nullptr;  // a chunk's encoding
  void* scratch_ = nullptr;           // the device codec's scratch for a chunk
};

}  // namespace seedance::trim::cuda
