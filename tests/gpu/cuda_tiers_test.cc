// The trim library on the CUDA tiers. Label `gpu`; without a usable device every test skips
// and says why (scripts/gpu-check runs them on a GPU machine).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "gpu/kernels.h"
#include "seedance/trim.h"

namespace seedance::trim {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::unique_ptr<TierManager> MakeOrSkip(uint64_t device_budget, uint64_t pinned,
                                        PolicyOptions o, std::string* skip) {
  auto tiers = MakeCudaTiers({.device = 0,
                              .device_budget = device_budget,
                              .small_arena = 64 * kMiB,
                              .pinned_capacity = pinned});
  if (!tiers) {
    *skip = tiers.error().message();
    return nullptr;
  }
  return TierManager::Create(std::move(tiers).value(), o).value();
}

#define MAKE_OR_SKIP(m, ...)                                   \
  std::string skip_reason;                                     \
  auto m = MakeOrSkip(__VA_ARGS__, &skip_reason);              \
  if (!m) GTEST_SKIP() << "no usable CUDA device: " << skip_reason

TEST(CudaTiersTest, ContentSurvivesRandomMovesAndAddressesStay) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  MAKE_OR_SKIP(m, 256 * kMiB, 1024 * kMiB, o);
  std::mt19937_64 rng(7);
  struct Live {
    uint64_t size;
    void* address;
    uint64_t sum;
  };
  std::map<BufferId, Live> live;
  std::vector<unsigned char> host;
  for (int op = 0; op < 600; ++op) {
    if (live.size() < 24 && rng() % 3 == 0) {
      uint64_t size = (rng() % 2 ? 4 : 32) * kMiB + (rng() % 4096);
      auto id = m->Register(size);
      ASSERT_TRUE(id.has_value()) << id.error().ToString();
      void* p = m->Acquire(*id).value();
      host.resize(size);
      for (auto& c : host) c = static_cast<unsigned char>(rng());
      ASSERT_TRUE(gpu_testing::Copy(p, host.data(), size));
      uint64_t sum = 0;
      for (auto c : host) sum += c;
      live[*id] = {size, p, sum};
      ASSERT_TRUE(m->Release(*id).ok());
    } else if (!live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      // Half the uses only read: those buffers move down to their kept pinned copy.
      const void* p = nullptr;
      if (rng() % 2) {
        auto w = m->Acquire(it->first);
        ASSERT_TRUE(w.has_value()) << w.error().ToString();
        p = *w;
        if (rng() % 2) {  // rewritten: its kept copy, if any, is stale now
          ASSERT_EQ(gpu_testing::DeviceSum(p, it->second.size), it->second.sum) << "op " << op;
          host.resize(it->second.size);
          for (auto& c : host) c = static_cast<unsigned char>(rng());
          ASSERT_TRUE(gpu_testing::Copy(*w, host.data(), host.size()));
          it->second.sum = 0;
          for (auto c : host) it->second.sum += c;
        }
      } else {
        auto r = m->AcquireRead(it->first);
        ASSERT_TRUE(r.has_value()) << r.error().ToString();
        p = *r;
      }
      if (it->second.size >= 2 * kMiB) EXPECT_EQ(p, it->second.address) << "address moved";
      ASSERT_EQ(gpu_testing::DeviceSum(p, it->second.size), it->second.sum) << "op " << op;
      ASSERT_TRUE(m->Release(it->first).ok());
    }
    if (rng() % 7 == 0) m->Trim();
    m->Step();
  }
  const TrimStats s = m->Stats();
  EXPECT_GT(s.bytes_moved_down, 0u);
  EXPECT_GT(s.bytes_down_without_copy, 0u);
  EXPECT_LE(s.tiers[0].used, s.tiers[0].capacity);
}

TEST(CudaTiersTest, CapturedGraphStillWorksAfterItsBufferWasMovedAndBack) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  MAKE_OR_SKIP(m, 128 * kMiB, 256 * kMiB, o);
  const uint64_t size = 64 * kMiB;
  auto id = m->Register(size).value();
  void* p = m->Acquire(id).value();
  std::vector<unsigned char> host(size, 41);
  ASSERT_TRUE(gpu_testing::Copy(p, host.data(), size));
  void* graph = gpu_testing::CaptureAddOneGraph(p, size);
  ASSERT_NE(graph, nullptr);
  ASSERT_TRUE(m->Release(id).ok());
  ASSERT_GE(m->Trim(), 1u);
  EXPECT_EQ(m->TierOf(id).value(), 1);  // in pinned host memory now
  void* back = m->Acquire(id).value();
  EXPECT_EQ(back, p);  // same device address: the captured graph still points at it
  ASSERT_TRUE(gpu_testing::LaunchGraph(graph));
  EXPECT_EQ(gpu_testing::DeviceSum(back, size), 42ull * size);
  gpu_testing::DestroyGraph(graph);
  ASSERT_TRUE(m->Release(id).ok());
}

TEST(CudaTiersTest, OccupancyIsTheManagersOwnBytesAgainstItsBudget) {
  PolicyOptions o;
  MAKE_OR_SKIP(m, 512 * kMiB, 512 * kMiB, o);
  auto a = m->Register(100 * kMiB).value();
  auto b = m->Register(1000).value();  // below the granularity: in the slab
  const TrimStats s = m->Stats();
  EXPECT_EQ(s.tiers[0].capacity, 512 * kMiB);
  EXPECT_GE(s.tiers[0].used, 100 * kMiB + 1000);
  EXPECT_LT(s.tiers[0].used, 100 * kMiB + 4 * kMiB);  // granularity rounding only
  EXPECT_TRUE(m->Unregister(a).ok());
  EXPECT_TRUE(m->Unregister(b).ok());
  EXPECT_EQ(m->Stats().tiers[0].used, 0u);
}

}  // namespace
}  // namespace seedance::trim
