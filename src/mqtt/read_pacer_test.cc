#include "mqtt/read_pacer.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Reads every `gap` taking `per_read` messages each, `n` times, from `t`.
ReadPacer::Clock::time_point Feed(ReadPacer& pacer, ReadPacer::Clock::time_point t,
                                  microseconds gap, size_t per_read, int n) {
  for (int i = 0; i < n; ++i) {
    t += gap;
    pacer.OnRead(t, per_read);
  }
  return t;
}

TEST(ReadPacerTest, WaitsTheWholeLingerWhileTheRateIsUnknown) {
  ReadPacer pacer(milliseconds(10));
  EXPECT_EQ(pacer.Linger(), milliseconds(10));
  pacer.OnRead(ReadPacer::Clock::now(), 3);  // one read: no interval yet
  EXPECT_EQ(pacer.Linger(), milliseconds(10));
}

TEST(ReadPacerTest, AReadGathersABatchAtTheRateMessagesArrive) {
  // 5k msg/s: 14 messages take 2.8 ms.
  ReadPacer pacer(milliseconds(10));
  Feed(pacer, {}, microseconds(2000), 10, 20);
  EXPECT_NEAR(pacer.messages_per_s(), 5000, 1);
  EXPECT_NEAR(pacer.Linger().count(), 2800, 5);
  // 2k msg/s arriving 4 per 2 ms read: the estimate follows within a few reads.
  ReadPacer slower(milliseconds(10));
  Feed(slower, {}, microseconds(2000), 4, 30);
  EXPECT_NEAR(slower.Linger().count(), 7000, 30);
}

TEST(ReadPacerTest, NeverWaitsLongerThanTheConfiguredLinger) {
  ReadPacer pacer(milliseconds(10));
  Feed(pacer, {}, milliseconds(10), 5, 20);  // 500 msg/s: 14 messages would take 28 ms
  EXPECT_EQ(pacer.Linger(), milliseconds(10));
  Feed(pacer, {}, std::chrono::seconds(1), 0, 5);  // a quiet connection
  EXPECT_EQ(pacer.Linger(), milliseconds(10));
}

TEST(ReadPacerTest, AboveSevenThousandMessagesASecondTheWaitStaysAtItsLeast) {
  ReadPacer pacer(milliseconds(10));
  auto t = Feed(pacer, {}, microseconds(500), 50, 20);  // 100k msg/s
  EXPECT_EQ(pacer.Linger(), ReadPacer::kMinLinger);
  // A configured linger below the least is kept.
  ReadPacer short_linger(microseconds(500));
  Feed(short_linger, {}, microseconds(500), 50, 20);
  EXPECT_EQ(short_linger.Linger(), microseconds(500));
  // One slow read does not undo the estimate.
  t += milliseconds(5);
  pacer.OnRead(t, 1);
  EXPECT_EQ(pacer.Linger(), ReadPacer::kMinLinger);
}

}  // namespace
}  // namespace seedance::mqtt
