// The zero-block codec on the device (the layout of trim/zero_block_codec.h, byte for byte):
// a flag kernel marks the non-zero 256-byte blocks and builds the bitmap, an exclusive scan
// (CUB) gives each its place, a compaction kernel packs them behind the header and bitmap,
// and the packed bytes then cross the link in one copy; on arrival the same scan over the
// bitmap and an expansion kernel put every block back and zero the rest. C++17 (nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "seedance/status.h"

namespace seedance::trim::cuda {

// Device scratch the codec needs for a buffer of `size` bytes.
uint64_t ZeroBlockScratchBytes(uint64_t size);
// Bytes an encoding of `size` bytes can take at most (header + bitmap + every block).
uint64_t ZeroBlockEncodedCapacity(uint64_t size);

// Encodes `size` bytes at device address `src` into device `dst` (capacity
// ZeroBlockEncodedCapacity), on `stream`. Waits for the stream once, to read how many blocks
// are non-zero: `*encoded_bytes` is the length to copy.
Status ZeroBlockEncodeDevice(const void* src, uint64_t size, void* dst, void* scratch,
                             cudaStream_t stream, uint64_t* encoded_bytes);

// Decodes the device encoding `encoded` of `size` bytes into device `dst`, on `stream`
// (no host wait). The encoding is trusted: it is the library's own, made by either encoder.
Status ZeroBlockDecodeDevice(const void* encoded, uint64_t size, void* dst, void* scratch,
                             cudaStream_t stream);

}  // namespace seedance::trim::cuda
