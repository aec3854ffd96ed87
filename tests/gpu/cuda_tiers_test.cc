// The trim library on the CUDA tiers. Label `gpu`; without a usable device every test skips
// and says why (scripts/gpu-check runs them on a GPU machine). The shared bodies
// (device_tier_cases.h) also run on the CPU in every CI run (src/trim/device_tier_cases_test.cc).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "gpu/device_tier_cases.h"
#include "gpu/kernels.h"

namespace seedance::trim {
namespace {

using testing::kMiB;

class CudaDevice final : public testing::DeviceHarness {
 public:
  Result<std::vector<std::unique_ptr<Tier>>> MakeTiers(uint64_t budget, uint64_t slow,
                                                       uint64_t small_arena) override {
    return MakeCudaTiers({.device = 0,
                          .device_budget = budget,
                          .small_arena = small_arena,
                          .pinned_capacity = slow});
  }
  bool Write(void* dst, const void* host, uint64_t n) override {
    return gpu_testing::Copy(dst, host, n);
  }
  uint64_t Sum(const void* p, uint64_t n) override { return gpu_testing::DeviceSum(p, n); }
  void* CaptureAddOne(void* p, uint64_t n) override {
    return gpu_testing::CaptureAddOneGraph(p, n);
  }
  bool Launch(void* graph) override { return gpu_testing::LaunchGraph(graph); }
  void Destroy(void* graph) override { gpu_testing::DestroyGraph(graph); }
  bool AddOneManyAsync(void* p, uint64_t n, int times) override {
    return gpu_testing::AddOneManyAsync(p, n, times);
  }
  bool CaptureAddOneWhile(void* p, uint64_t n, const std::function<void()>& during) override {
    return gpu_testing::CaptureAddOneWhile(p, n, during);
  }
};

SEEDANCE_DEVICE_TIER_CASES(CudaTiersTest, CudaDevice)

Result<std::vector<std::unique_ptr<Tier>>> SmallCudaTiers() {
  return MakeCudaTiers({.device = 0, .device_budget = 64 * kMiB, .pinned_capacity = 64 * kMiB});
}

TEST(CudaTiersTest, AHostTierBehindTheDeviceTierIsRefused) {
  auto tiers = SmallCudaTiers();
  if (!tiers) GTEST_SKIP() << "no usable CUDA device: " << tiers.error().ToString();
  std::vector<std::unique_ptr<Tier>> stack;
  stack.push_back(std::move(tiers->front()));
  stack.push_back(MakeHostTier("ram", 64 * kMiB));  // cannot read device memory
  auto m = TierManager::Create(std::move(stack));
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.error().message().find("cannot copy out of tier 'cuda-device'"), std::string::npos)
      << m.error().message();
}

TEST(CudaTiersTest, CallsLeaveTheCallersDeviceAndCaptureModeAsTheyWere) {
  auto tiers = SmallCudaTiers();
  if (!tiers) GTEST_SKIP() << "no usable CUDA device: " << tiers.error().ToString();
  PolicyOptions o;
  o.min_victim_bytes = 0;
  o.low_watermark = 0.1;
  auto m = TierManager::Create(std::move(tiers).value(), o).value();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  auto id = m->Register(8 * kMiB).value();
  ASSERT_TRUE(m->Acquire(id).has_value());
  ASSERT_TRUE(m->Release(id).ok());
  m->Step();
  EXPECT_GE(m->Trim(), 1u);
  ASSERT_TRUE(m->Acquire(id).has_value());
  ASSERT_TRUE(m->Release(id).ok());
  mode = cudaStreamCaptureModeGlobal;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeThreadLocal) << "the tier changed the thread's mode";
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);
}

TEST(CudaTiersTest, AMissingDeviceIsUnavailableWithItsNumber) {
  auto tiers = MakeCudaTiers({.device = 999, .device_budget = kMiB, .pinned_capacity = kMiB});
  ASSERT_FALSE(tiers.has_value());
  EXPECT_EQ(tiers.error().code(), StatusCode::kUnavailable);
  std::printf("[ info ] %s\n", tiers.error().ToString().c_str());
}

}  // namespace
}  // namespace seedance::trim
