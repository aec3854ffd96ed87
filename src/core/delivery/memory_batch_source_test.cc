#include "core/delivery/memory_batch_source.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace seedance::delivery {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

Event EventOf(int i) {
  Event e;
  e.payload = std::to_string(i);
  return e;
}

class MemoryBatchSourceTest : public ::testing::Test {
 protected:
  observe::MetricsRegistry metrics_;
  ComponentStats stats_{metrics_, "sink", "mem"};
  MemoryBatchSource source_{3, stats_};
};

TEST_F(MemoryBatchSourceTest, TakesUpToABatchInOrder) {
  for (int i = 0; i < 3; ++i) source_.PushNoWait(EventOf(i));
  EXPECT_EQ(source_.Waiting(), 3u);
  EXPECT_EQ(stats_.queue_depth.Value(), 3);
  std::vector<Event> events = {EventOf(99)};  // replaced
  Lease lease;
  ASSERT_TRUE(source_.Take(2, &events, &lease));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].payload, "0");
  EXPECT_EQ(events[1].payload, "1");
  EXPECT_EQ(source_.Waiting(), 1u);
  EXPECT_EQ(stats_.queue_depth.Value(), 1);
  EXPECT_EQ(stats_.events_in.Value(), 3u);
  ASSERT_TRUE(source_.Take(2, &events, &lease));
  EXPECT_EQ(events.size(), 1u);
  EXPECT_FALSE(source_.Take(2, &events, &lease));
}

TEST_F(MemoryBatchSourceTest, APushWaitsWhileFullUntilATakeMakesRoom) {
  for (int i = 0; i < 3; ++i) source_.PushNoWait(EventOf(i));
  auto pushed = std::async(std::launch::async,
                           [&] { source_.Push(EventOf(3), steady_clock::time_point::max()); });
  EXPECT_EQ(pushed.wait_for(milliseconds(50)), std::future_status::timeout);  // full: it waits
  std::vector<Event> events;
  Lease lease;
  ASSERT_TRUE(source_.Take(1, &events, &lease));
  EXPECT_EQ(pushed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(source_.Waiting(), 3u);
}

TEST_F(MemoryBatchSourceTest, APushPastItsDeadlineOrTheShutdownDeadlineQueuesAnyway) {
  for (int i = 0; i < 3; ++i) source_.PushNoWait(EventOf(i));
  source_.Push(EventOf(3), steady_clock::now() + milliseconds(10));  // returns: past deadline
  EXPECT_EQ(source_.Waiting(), 4u);
  auto pushed = std::async(std::launch::async,
                           [&] { source_.Push(EventOf(4), steady_clock::time_point::max()); });
  EXPECT_EQ(pushed.wait_for(milliseconds(50)), std::future_status::timeout);
  source_.SetShutdownDeadline(steady_clock::now());  // wakes it: shutdown must not deadlock
  EXPECT_EQ(pushed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(source_.Waiting(), 5u);
}

TEST_F(MemoryBatchSourceTest, StopDropsWhatWaitsAndWakesAWaitingPush) {
  for (int i = 0; i < 3; ++i) source_.PushNoWait(EventOf(i));
  auto pushed = std::async(std::launch::async,
                           [&] { source_.Push(EventOf(3), steady_clock::time_point::max()); });
  EXPECT_EQ(pushed.wait_for(milliseconds(50)), std::future_status::timeout);
  const size_t dropped = source_.Stop();
  EXPECT_EQ(pushed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  // The waiting push was woken by Stop: it queued after (and is not taken any more) or before.
  EXPECT_GE(dropped, 3u);
  EXPECT_EQ(dropped + source_.Waiting(), 4u);
}

TEST_F(MemoryBatchSourceTest, AJobShutDownCountsItsEventsAsDropped) {
  source_.ShutDown(Lease{}, 5);
  EXPECT_EQ(metrics_
                .GetCounter("seedance_events_dropped_total", "",
                            {{"component", "mem"}, {"kind", "sink"}, {"reason", "shutdown"}})
                .Value(),
            5u);
}

}  // namespace
}  // namespace seedance::delivery
