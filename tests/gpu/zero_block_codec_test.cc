// The device zero-block codec against the CPU reference: the same bytes encoded, and every
// encoding (either side's) decoded back bit-exactly, at zero fractions 0, 0.5, 0.9 and 1.
#include "trim/cuda/zero_block_codec.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "trim/zero_block_codec.h"

namespace seedance::trim {
namespace {

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(uint64_t n) { cudaMalloc(&p, std::max<uint64_t>(n, 1)); }
  ~DeviceBuffer() { cudaFree(p); }
};

TEST(ZeroBlockCodecGpuTest, DeviceAndHostCodecsAgreeByteForByte) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no usable CUDA device";
  }
  std::mt19937 rng(5);
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, (size_t{1} << 20) + 77}) {
    for (double z : {0.0, 0.5, 0.9, 1.0}) {
      const std::string what = "size " + std::to_string(size) + " z " + std::to_string(z);
      std::vector<std::byte> data(size);
      for (auto& b : data) b = std::byte{static_cast<uint8_t>(rng() | 1)};
      const uint64_t blocks = ZeroBlockCount(size);
      for (uint64_t b = 0; b < blocks; ++b) {
        if (static_cast<double>(rng() % 1000) < z * 1000) {
          std::fill(data.begin() + b * kZeroBlockSize,
                    data.begin() + std::min<size_t>(size, (b + 1) * kZeroBlockSize), std::byte{0});
        }
      }
      std::vector<std::byte> host_encoded;
      ZeroBlockEncode(data, host_encoded);

      DeviceBuffer src(size), dst(cuda::ZeroBlockEncodedCapacity(size)),
          scratch(cuda::ZeroBlockScratchBytes(size)), back(size);
      ASSERT_EQ(cudaMemcpy(src.p, data.data(), size, cudaMemcpyHostToDevice), cudaSuccess);
      uint64_t encoded_bytes = 0;
      ASSERT_TRUE(
          cuda::ZeroBlockEncodeDevice(src.p, size, dst.p, scratch.p, nullptr, &encoded_bytes).ok())
          << what;
      std::vector<std::byte> device_encoded(encoded_bytes);
      ASSERT_EQ(cudaMemcpy(device_encoded.data(), dst.p, encoded_bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
      EXPECT_EQ(device_encoded, host_encoded) << what;

      // The host's encoding decoded on the device.
      ASSERT_EQ(cudaMemcpy(dst.p, host_encoded.data(), host_encoded.size(), cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_TRUE(cuda::ZeroBlockDecodeDevice(dst.p, size, back.p, scratch.p, nullptr).ok());
      std::vector<std::byte> decoded(size, std::byte{0xEE});
      ASSERT_EQ(cudaMemcpy(decoded.data(), back.p, size, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(decoded, data) << what;
    }
  }
}

}  // namespace
}  // namespace seedance::trim
