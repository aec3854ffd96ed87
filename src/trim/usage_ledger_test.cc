#include "trim/usage_ledger.h"

#include <gtest/gtest.h>

namespace seedance::trim {
namespace {

TEST(UsageLedgerTest, ABufferBecomesIdleIdleStepsAfterItsLastUse) {
  UsageLedger l(/*idle_steps=*/3);
  l.Add(1, 100, /*step=*/0);
  l.Add(2, 300, /*step=*/0);
  EXPECT_EQ(l.registered_bytes(), 400u);
  l.Age(2);
  EXPECT_EQ(l.idle_bytes(), 0u) << "2 steps unused, 3 needed";
  EXPECT_FALSE(l.IdleAt(1, 2));
  l.Age(3);
  EXPECT_EQ(l.idle_bytes(), 400u);
  EXPECT_TRUE(l.IdleAt(1, 3));
  EXPECT_DOUBLE_EQ(l.idle_share(), 1.0);
}

TEST(UsageLedgerTest, AnAcquiredBufferIsNeverIdleAndAUseStartsItsClockAgain) {
  UsageLedger l(3);
  l.Add(1, 100, 0);
  l.Add(2, 300, 0);
  l.Acquire(1, 1);
  l.Age(10);
  EXPECT_EQ(l.idle_bytes(), 300u) << "buffer 1 is held";
  EXPECT_TRUE(l.in_use(1));
  EXPECT_FALSE(l.IdleAt(1, 10));
  l.Release(1, 10);
  EXPECT_EQ(l.last_used(1), 10u);
  l.Age(12);
  EXPECT_EQ(l.idle_bytes(), 300u);
  l.Age(13);
  EXPECT_EQ(l.idle_bytes(), 400u);
  l.Acquire(2, 14);
  EXPECT_EQ(l.idle_bytes(), 100u) << "a use takes its bytes out at once";
  EXPECT_DOUBLE_EQ(l.idle_share(), 0.25);
}

TEST(UsageLedgerTest, StaleDueEntriesCountNothing) {
  UsageLedger l(3);
  l.Add(1, 100, 0);
  l.Touch(1, 2);  // due at 3 (from the Add) and at 5: only the later one holds
  l.Age(3);
  EXPECT_EQ(l.idle_bytes(), 0u) << "used at 2: the entry due at 3 is stale";
  l.Age(5);
  EXPECT_EQ(l.idle_bytes(), 100u);
  l.Touch(1, 5);
  l.Touch(1, 6);
  l.Age(8);
  EXPECT_EQ(l.idle_bytes(), 0u);
  l.Age(9);
  EXPECT_EQ(l.idle_bytes(), 100u) << "counted once though due twice";
}

TEST(UsageLedgerTest, AReleaseIsAUseEvenWithoutAnAcquire) {
  UsageLedger l(2);
  l.Add(1, 100, 0);
  l.Age(2);
  ASSERT_EQ(l.idle_bytes(), 100u);
  l.Release(1, 2);
  EXPECT_EQ(l.idle_bytes(), 0u) << "released now: not idle for 2 more steps";
  l.Age(4);
  EXPECT_EQ(l.idle_bytes(), 100u);
}

TEST(UsageLedgerTest, ATouchKeepsAnAcquiredBufferInUse) {
  UsageLedger l(1);
  l.Add(1, 100, 0);
  l.Acquire(1, 1);
  l.Touch(1, 2);
  EXPECT_TRUE(l.in_use(1));
  l.Age(5);
  EXPECT_EQ(l.idle_bytes(), 0u);
}

TEST(UsageLedgerTest, RemovingABufferTakesItsBytesOutOfBothSums) {
  UsageLedger l(1);
  l.Add(1, 100, 0);
  l.Add(2, 300, 0);
  l.Age(1);
  l.Remove(1);
  EXPECT_EQ(l.idle_bytes(), 300u);
  EXPECT_EQ(l.registered_bytes(), 300u);
  l.Remove(2);
  l.Age(100);  // the removed ones' entries are skipped
  EXPECT_EQ(l.idle_bytes(), 0u);
  EXPECT_DOUBLE_EQ(l.idle_share(), 0.0) << "nothing registered";
  l.Remove(7);  // unknown: nothing
}

}  // namespace
}  // namespace seedance::trim
