#include "util/loop_signal.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>

#include <atomic>
#include <thread>

namespace seedance::util {
namespace {

TEST(LoopSignalTest, NotificationsFromAnotherThreadCoalesceAndTheLastOneIsSeen) {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::atomic<int> runs{0};
  std::atomic<int> seen{0};
  std::atomic<int> value{0};
  LoopSignal signal(io, [&] {
    ++runs;
    seen = value.load();
  });
  std::thread loop([&] { io.run(); });
  constexpr int kNotifies = 100000;
  for (int i = 1; i <= kNotifies; ++i) {
    value = i;
    signal.Notify();
  }
  // The run after the last notification sees the last value.
  for (int i = 0; i < 500 && seen != kNotifies; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  work.reset();
  io.stop();
  loop.join();
  EXPECT_EQ(seen.load(), kNotifies);
  EXPECT_GE(runs.load(), 1);
  EXPECT_LT(runs.load(), kNotifies);  // coalesced
}

TEST(LoopSignalTest, DestroyingTheContextWithAWakeUpQueuedIsSafe) {
  int runs = 0;
  {
    boost::asio::io_context io;
    LoopSignal signal(io, [&] { ++runs; });
    signal.Notify();
    signal.Notify();
  }  // the queued operation is destroyed with the context, not run
  EXPECT_EQ(runs, 0);
}

// Inside a WakeBatcher scope, notifications reach the loop only when the scope ends, and all
// of them as one operation.
TEST(WakeBatcherTest, NotificationsInAScopeArriveAsOneOperationAfterIt) {
  boost::asio::io_context io;
  int a_runs = 0, b_runs = 0;
  LoopSignal a(io, [&] { ++a_runs; });
  LoopSignal b(io, [&] { ++b_runs; });
  WakeBatcher batcher(io);
  {
    WakeBatcher::Scope scope(&batcher);
    a.Notify();
    b.Notify();
    a.Notify();  // coalesced with the first
    EXPECT_EQ(io.poll(), 0u) << "nothing reaches the loop while the scope is open";
    io.restart();
  }
  EXPECT_EQ(io.poll_one(), 1u);
  EXPECT_EQ(a_runs, 1);
  EXPECT_EQ(b_runs, 1);
  EXPECT_EQ(io.poll(), 0u) << "one operation delivered both";
  // After the scope, a notification is posted on its own again.
  io.restart();
  a.Notify();
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_EQ(a_runs, 2);
}

}  // namespace
}  // namespace seedance::util
