#include "trim/trim_policy.h"

#include <gtest/gtest.h>

namespace seedance::trim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(TrimPolicyTest, OccupancyFiresOnTheThirdConsecutiveSampleAtThreshold) {
  TrimPolicy p;
  TierSample at{1000, 920, 0};
  TierSample below{1000, 919, 0};
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kNone);
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kNone);
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kOccupancy);
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kNone);     // the count starts again after a trim
  EXPECT_EQ(p.Sample(below, 0), TrimReason::kNone);  // a dip resets the streak
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kNone);
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kNone);
  EXPECT_EQ(p.Sample(at, 0), TrimReason::kOccupancy);
  TrimPolicy q;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(q.Sample(below, 0), TrimReason::kNone);
}

TEST(TrimPolicyTest, IdleShareFiresAboveThirtyFivePercentNotAt) {
  TrimPolicy p;
  EXPECT_EQ(p.Sample({1000, 0, 0}, 0.35), TrimReason::kNone);
  EXPECT_EQ(p.Sample({1000, 0, 0}, 0.3501), TrimReason::kIdleShare);
}

TEST(TrimPolicyTest, FragmentationFiresAboveTwentyEightPercentNotAt) {
  TrimPolicy p;
  EXPECT_EQ(p.Sample({1000, 0, 0.28}, 0), TrimReason::kNone);
  EXPECT_EQ(p.Sample({1000, 0, 0.2801}, 0), TrimReason::kFragmentation);
}

TEST(TrimPolicyTest, IdleMeansFiftyStepsOrMore) {
  TrimPolicy p;
  std::vector<BufferState> b = {{.id = 1, .size = 35, .last_used_step = 50},
                                {.id = 2, .size = 65, .last_used_step = 100}};
  EXPECT_DOUBLE_EQ(p.IdleShare(b, 99), 0.0);    // 49 steps idle
  EXPECT_DOUBLE_EQ(p.IdleShare(b, 100), 0.35);  // 50 steps: counts, but 35% is not "more than"
  b[0].in_use = true;
  EXPECT_DOUBLE_EQ(p.IdleShare(b, 100), 0.0);  // an acquired buffer is never idle
}

TEST(TrimPolicyTest, VictimsInScoreOrderSkippingInUseSmallAndMovedOnes) {
  TrimPolicy p;
  const uint64_t step = 100;
  std::vector<BufferState> b = {
      {.id = 1, .size = 64 * kMiB, .last_used_step = 90, .uses = 10},  // 64*10/11
      {.id = 2, .size = 32 * kMiB, .last_used_step = 50, .uses = 1},   // 32*50/2 = 800
      {.id = 3, .size = 128 * kMiB, .in_use = true, .last_used_step = 0},
      {.id = 4, .size = 8 * kMiB, .last_used_step = 0},              // under 16 MiB
      {.id = 5, .size = 16 * kMiB, .last_used_step = 0, .uses = 0},  // 16*100 = 1600
      {.id = 6, .size = 256 * kMiB, .on_fast_tier = false, .last_used_step = 0},
      {.id = 7, .size = 64 * kMiB, .last_used_step = 100},  // used this step
  };
  EXPECT_EQ(p.ChooseVictims(b, step, UINT64_MAX), (std::vector<uint64_t>{5, 2, 1}));
  EXPECT_EQ(p.ChooseVictims(b, step, 40 * kMiB), (std::vector<uint64_t>{5, 2}));
  EXPECT_EQ(p.ChooseVictims(b, step, 0), std::vector<uint64_t>{});
}

TEST(TrimPolicyTest, BytesToFreeReachesTheLowWatermark) {
  TrimPolicy p;
  EXPECT_EQ(p.BytesToFree({1000, 950, 0}), 150u);
  EXPECT_EQ(p.BytesToFree({1000, 800, 0}), 0u);
  EXPECT_EQ(p.BytesToFree({1000, 10, 0}), 0u);
}

TEST(TrimPolicyTest, TrimmingTheChosenVictimsBringsOccupancyUnderTheWatermark) {
  TrimPolicyOptions o;
  o.min_victim_bytes = 0;
  TrimPolicy p(o);
  std::vector<BufferState> b;
  uint64_t used = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    b.push_back({.id = i, .size = 10 + i, .last_used_step = i % 7, .uses = i % 5});
    used += 10 + i;
  }
  TierSample fast{used * 100 / 95, used, 0};  // 95% full
  auto victims = p.ChooseVictims(b, 10, p.BytesToFree(fast));
  uint64_t freed = 0;
  for (uint64_t id : victims) freed += b[id].size;
  EXPECT_LE(static_cast<double>(used - freed), 0.80 * static_cast<double>(fast.capacity));
}

}  // namespace
}  // namespace seedance::trim
