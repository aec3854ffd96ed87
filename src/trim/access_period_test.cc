#include "trim/access_period.h"

#include <gtest/gtest.h>

namespace seedance::trim {
namespace {

// Acquires at `steps` in order (uses counted from 1); the due step of the last one.
std::optional<uint64_t> Feed(AccessPeriod& p, std::initializer_list<uint64_t> steps,
                             uint64_t idle_steps = 100, uint64_t lead = 1) {
  std::optional<uint64_t> due;
  uint64_t uses = 0;
  for (uint64_t s : steps) due = p.OnAcquire(s, ++uses, idle_steps, lead);
  return due;
}

TEST(AccessPeriodTest, AGapIsConfirmedByTwoEqualGapsThenThePrefetchIsDueAStepEarly) {
  AccessPeriod p;
  EXPECT_FALSE(Feed(p, {10, 20}).has_value()) << "one gap is a guess";
  EXPECT_EQ(p.gap(), 0u);
  AccessPeriod q;
  EXPECT_EQ(Feed(q, {10, 20, 30}), std::optional<uint64_t>(39));
  EXPECT_EQ(q.gap(), 10u);
  EXPECT_EQ(q.prefetch_step(), 39u);
}

TEST(AccessPeriodTest, AcquiresInOneStepAreOneBurst) {
  AccessPeriod p;
  EXPECT_EQ(Feed(p, {10, 10, 20, 20, 30, 30}), std::nullopt) << "the repeat adds nothing";
  EXPECT_EQ(p.gap(), 10u);
  EXPECT_EQ(p.prefetch_step(), 39u);
}

TEST(AccessPeriodTest, AnotherGapStartsOverAndConsecutiveStepsHaveNoPeriod) {
  AccessPeriod p;
  Feed(p, {10, 20, 30, 37});
  EXPECT_EQ(p.gap(), 0u) << "7 after 10: a candidate, not confirmed";
  AccessPeriod q;
  EXPECT_FALSE(Feed(q, {1, 2, 3, 4}).has_value()) << "used every step: never moved anyway";
}

TEST(AccessPeriodTest, TheLeadCoversTheCopyWithinTheGapAndTheIdleTime) {
  AccessPeriod p;
  EXPECT_EQ(Feed(p, {0, 10, 20}, /*idle_steps=*/100, /*lead=*/4), std::optional<uint64_t>(26));
  AccessPeriod q;  // a copy longer than the gap: as early as the gap allows
  EXPECT_EQ(Feed(q, {0, 10, 20}, 100, 50), std::optional<uint64_t>(21));
  AccessPeriod r;  // idle after 6 steps: a lead of at most 3, or the trim sends it back
  EXPECT_EQ(Feed(r, {0, 10, 20}, 6, 50), std::optional<uint64_t>(27));
}

TEST(AccessPeriodTest, LeadStepsFromTheLinkAndTheStepTime) {
  EXPECT_EQ(LeadSteps(1 << 20, 0, 0.01), 1u) << "link not measured";
  EXPECT_EQ(LeadSteps(1 << 20, 1e9, 0), 1u) << "step time not measured";
  EXPECT_EQ(LeadSteps(100'000'000, 1e9, 0.01), 11u);  // 0.1 s of copy, 10 ms steps, + 1
  EXPECT_EQ(LeadSteps(1000, 1e9, 0.01), 2u);
}

}  // namespace
}  // namespace seedance::trim
