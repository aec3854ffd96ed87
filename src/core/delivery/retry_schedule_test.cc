#include "core/delivery/retry_schedule.h"

#include <gtest/gtest.h>

namespace seedance::delivery {
namespace {

using std::chrono::milliseconds;

DeliveryPolicy Policy(int64_t limit) {
  DeliveryPolicy p;
  p.retry_initial = milliseconds(100);
  p.retry_max = milliseconds(1000);
  p.retry_limit = limit;
  return p;
}

TEST(RetryScheduleTest, TheBackoffDoublesToItsCapWithJitterInItsUpperHalf) {
  const RetrySchedule schedule(Policy(0));
  std::mt19937 rng(1);
  RetrySchedule::State state = schedule.First();
  const int64_t caps[] = {100, 200, 400, 800, 1000, 1000, 1000};
  for (int64_t cap : caps) {
    auto d = schedule.AfterFailure(state, "503", milliseconds(0), rng);
    ASSERT_FALSE(d.give_up);  // retry_limit 0: for ever
    EXPECT_GE(d.delay.count(), cap / 2);
    EXPECT_LE(d.delay.count(), cap);
  }
  EXPECT_EQ(state.attempts, 7);
}

TEST(RetryScheduleTest, RetryAfterIsHonouredUpToRetryMax) {
  const RetrySchedule schedule(Policy(0));
  std::mt19937 rng(2);
  RetrySchedule::State state = schedule.First();
  EXPECT_EQ(schedule.AfterFailure(state, "429", milliseconds(700), rng).delay, milliseconds(700));
  EXPECT_EQ(schedule.AfterFailure(state, "429", milliseconds(60000), rng).delay,
            milliseconds(1000));
  // A Retry-After shorter than the backoff does not shorten it.
  auto d = schedule.AfterFailure(state, "429", milliseconds(1), rng);
  EXPECT_GE(d.delay.count(), 200);
}

TEST(RetryScheduleTest, ThePartIsGivenUpAfterRetryLimitAttemptsWithTheLastReason) {
  const RetrySchedule schedule(Policy(3));
  std::mt19937 rng(3);
  RetrySchedule::State state = schedule.First();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(schedule.AfterFailure(state, "refused", milliseconds(0), rng).give_up);
  }
  auto d = schedule.AfterFailure(state, "HTTP 500", milliseconds(0), rng);
  EXPECT_TRUE(d.give_up);
  EXPECT_EQ(d.reason, "gave up after 4 attempts: HTTP 500");
}

TEST(RetryScheduleTest, TheSameSeedGivesTheSameDelays) {
  const RetrySchedule schedule(Policy(0));
  std::mt19937 a(7), b(7);
  RetrySchedule::State sa = schedule.First(), sb = schedule.First();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(schedule.AfterFailure(sa, "x", milliseconds(0), a).delay,
              schedule.AfterFailure(sb, "x", milliseconds(0), b).delay);
  }
}

}  // namespace
}  // namespace seedance::delivery
