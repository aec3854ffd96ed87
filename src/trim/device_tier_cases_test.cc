// The device-tier test bodies (tests/gpu/device_tier_cases.h) on the CPU: the address-keeping
// host tier stands in for GPU memory, plain RAM for pinned memory, and a recorded closure for a
// captured CUDA graph (it holds the raw address, as a graph does).
#include <cstring>
#include <functional>
#include <thread>

#include "gpu/device_tier_cases.h"

namespace seedance::trim {
namespace {

class HostDevice final : public testing::DeviceHarness {
 public:
  Result<std::vector<std::unique_ptr<Tier>>> MakeTiers(uint64_t budget, uint64_t slow, uint64_t,
                                                       bool) override {
    std::vector<std::unique_ptr<Tier>> tiers;
    tiers.push_back(MakeAddressKeepingHostTier("device", budget));
    tiers.push_back(MakeHostTier("pinned", slow));
    return tiers;
  }
  bool Write(void* dst, const void* host, uint64_t n) override {
    std::memcpy(dst, host, n);
    return true;
  }
  uint64_t Sum(const void* p, uint64_t n) override { return testing::HostByteSum(p, n); }
  void* CaptureAddOne(void* p, uint64_t n) override {
    return new std::function<void()>([p, n] { AddOne(p, n); });
  }
  bool Launch(void* graph) override {
    (*static_cast<std::function<void()>*>(graph))();
    return true;
  }
  void Destroy(void* graph) override { delete static_cast<std::function<void()>*>(graph); }
  bool AddOneManyAsync(void* p, uint64_t n, int times) override {
    for (int i = 0; i < times; ++i) AddOne(p, n);  // a CPU write is done when released
    return true;
  }
  bool CaptureAddOneWhile(void* p, uint64_t n, const std::function<void()>& during) override {
    std::thread other(during);
    other.join();
    AddOne(p, n);
    return true;
  }

 private:
  static void AddOne(void* p, uint64_t n) {
    auto* b = static_cast<unsigned char*>(p);
    for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(b[i] + 1);
  }
};

SEEDANCE_DEVICE_TIER_CASES(AddressKeepingHostTierTest, HostDevice)

TEST(AddressKeepingHostTierTest, AnEvictedBlockIsInaccessibleAndCostsNothing) {
  auto tier = MakeAddressKeepingHostTier("device", 8 * testing::kMiB);
  void* p = tier->Allocate(testing::kMiB).value();
  std::memset(p, 1, testing::kMiB);
  EXPECT_EQ(tier->used(), testing::kMiB);
  ASSERT_TRUE(tier->KeepsAddress(p));
  ASSERT_TRUE(tier->Evict(p).ok());
  EXPECT_EQ(tier->used(), 0u);
  EXPECT_DEATH(static_cast<volatile char*>(p)[10] = 1, "");  // PROT_NONE while moved
  EXPECT_EQ(tier->Evict(p).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(tier->Restore(p).ok());
  static_cast<char*>(p)[10] = 2;  // accessible again
  EXPECT_EQ(tier->used(), testing::kMiB);
  EXPECT_EQ(tier->Allocate(8 * testing::kMiB).error().code(), StatusCode::kResourceExhausted);
  tier->Free(p);
  EXPECT_EQ(tier->used(), 0u);
}

}  // namespace
}  // namespace seedance::trim
