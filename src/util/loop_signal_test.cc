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

}  // namespace
}  // namespace seedance::util
