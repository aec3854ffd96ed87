#include "core/delivery/linger.h"

#include <gtest/gtest.h>

namespace seedance::delivery {
namespace {

using std::chrono::milliseconds;
using Clock = Linger::Clock;

TEST(LingerTest, WithoutALingerNothingWaits) {
  Linger linger(milliseconds(0));
  EXPECT_FALSE(linger.enabled());
  EXPECT_FALSE(linger.HoldUntil(1, 100, false, Clock::now()));
}

TEST(LingerTest, ASmallBatchWaitsTheLingerFromWhenItsEventsStartedWaiting) {
  Linger linger(milliseconds(50));
  const Clock::time_point t0 = Clock::now();
  auto hold = linger.HoldUntil(3, 100, false, t0);
  ASSERT_TRUE(hold);
  EXPECT_EQ(*hold, t0 + milliseconds(50));
  // Asked again later, it still leaves at the same time: the linger does not restart.
  hold = linger.HoldUntil(5, 100, false, t0 + milliseconds(20));
  ASSERT_TRUE(hold);
  EXPECT_EQ(*hold, t0 + milliseconds(50));
  // Once that time has come it leaves; the next events wait a linger of their own.
  EXPECT_FALSE(linger.HoldUntil(5, 100, false, t0 + milliseconds(50)));
  hold = linger.HoldUntil(1, 100, false, t0 + milliseconds(60));
  ASSERT_TRUE(hold);
  EXPECT_EQ(*hold, t0 + milliseconds(110));
}

TEST(LingerTest, TheLingerCountsFromTheOldestReportedArrival) {
  Linger linger(milliseconds(50));
  const Clock::time_point now = Clock::now();
  linger.NoteWaiting(now - milliseconds(30));
  linger.NoteWaiting(now - milliseconds(10));  // a later arrival does not move it
  auto hold = linger.HoldUntil(2, 100, false, now);
  ASSERT_TRUE(hold);
  EXPECT_EQ(*hold, now + milliseconds(20));
  // Events that waited longer than the linger (behind a full concurrency limit) leave at once.
  Linger other(milliseconds(50));
  other.NoteWaiting(now - milliseconds(80));
  EXPECT_FALSE(other.HoldUntil(2, 100, false, now));
}

TEST(LingerTest, FullBatchesUrgentOnesAndNothingDoNotWait) {
  Linger linger(milliseconds(50));
  const Clock::time_point now = Clock::now();
  EXPECT_FALSE(linger.HoldUntil(100, 100, false, now));  // full
  EXPECT_FALSE(linger.HoldUntil(3, 100, true, now));     // read again, or shutdown
  EXPECT_FALSE(linger.HoldUntil(0, 100, false, now));    // nothing waits
  // None of these left a start time behind: the next small batch waits from now.
  auto hold = linger.HoldUntil(3, 100, false, now + milliseconds(5));
  ASSERT_TRUE(hold);
  EXPECT_EQ(*hold, now + milliseconds(55));
}

}  // namespace
}  // namespace seedance::delivery
