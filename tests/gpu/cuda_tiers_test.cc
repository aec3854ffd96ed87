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

// `kCaptureSafe`: CudaTierOptions::capture_safe for every manager of the harness.
template <bool kCaptureSafe>
class CudaDevice final : public testing::DeviceHarness {
 public:
  Result<std::vector<std::unique_ptr<Tier>>> MakeTiers(uint64_t budget, uint64_t slow,
                                                       uint64_t small_arena,
                                                       bool capture_safe) override {
    return MakeCudaTiers({.device = 0,
                          .device_budget = budget,
                          .small_arena = small_arena,
                          .pinned_capacity = slow,
                          .capture_safe = kCaptureSafe || capture_safe});
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

SEEDANCE_DEVICE_TIER_CASES(CudaTiersTest, CudaDevice<false>)
SEEDANCE_DEVICE_TIER_CASES(CudaTiersCaptureSafeTest, CudaDevice<true>)

// The rule without capture_safe: waiting for the whole device during another thread's capture
// would break it, so the move is refused (nothing moves, the content stays); the capture is
// broken all the same by the refused wait (printed; scripts/gpu-check's capture table).
TEST(CudaTiersTest, WithoutCaptureSafeATrimDuringACaptureMovesNothing) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  o.low_watermark = 0.25;
  CudaDevice<false> d;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 128 * kMiB, 256 * kMiB, o);
  const uint64_t size = 32 * kMiB;
  auto captured = m->Register(size).value();
  auto trimmed = m->Register(size).value();
  std::vector<unsigned char> host(size, 7);
  void* c = m->Acquire(captured).value();
  void* t = m->Acquire(trimmed).value();
  ASSERT_TRUE(d.Write(t, host.data(), size));
  ASSERT_TRUE(m->Release(trimmed).ok());
  m->Step();
  size_t moved = 99;
  const bool capture_ok = d.CaptureAddOneWhile(c, size, [&] { moved = m->Trim(); });
  std::printf("[ info ] without capture_safe the capture %s\n",
              capture_ok ? "survived" : "was broken");
  EXPECT_EQ(moved, 0u);
  EXPECT_EQ(m->TierOf(trimmed).value(), 0);
  EXPECT_EQ(d.Sum(m->AcquireRead(trimmed).value(), size), 7ull * size);
  ASSERT_TRUE(m->Release(trimmed).ok());
  ASSERT_TRUE(m->Release(captured).ok());
}

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

TEST(CudaTiersTest, SmallStableBuffersStayAndLargeOnesKeepTheirAddress) {
  auto tiers = SmallCudaTiers();
  if (!tiers) GTEST_SKIP() << "no usable CUDA device: " << tiers.error().ToString();
  PolicyOptions o;
  o.min_victim_bytes = 0;
  o.low_watermark = 0.01;
  auto m = TierManager::Create(std::move(tiers).value(), o).value();
  auto small = m->Register(4096, "bias", "", /*stable_address=*/true).value();
  auto mid = m->Register(kMiB, "proj", "", /*stable_address=*/true).value();  // own granule
  auto large = m->Register(8 * kMiB, "weight", "", /*stable_address=*/true).value();
  void* ps = m->Acquire(small).value();
  void* pm = m->Acquire(mid).value();
  void* pl = m->Acquire(large).value();
  for (BufferId id : {small, mid, large}) ASSERT_TRUE(m->Release(id).ok());
  m->Step();
  EXPECT_EQ(m->Trim(), 2u);  // not the small one: its block cannot keep its address
  EXPECT_EQ(m->TierOf(small).value(), 0);
  EXPECT_EQ(m->TierOf(mid).value(), 1);
  EXPECT_EQ(m->TierOf(large).value(), 1);
  EXPECT_EQ(m->Acquire(large).value(), pl);
  EXPECT_EQ(m->Acquire(mid).value(), pm);
  EXPECT_EQ(m->Acquire(small).value(), ps);
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
