#include "storage/background_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace seedance::storage {
namespace {

using namespace std::chrono_literals;

// Counts the syncs and lets a test wait for the n-th.
class SyncCounter {
 public:
  bool Sync(bool result = true) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    thread_ = std::this_thread::get_id();
    changed_.notify_all();
    return result;
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, 10s, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  std::thread::id thread() {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int count_ = 0;
  std::thread::id thread_;
};

TEST(BackgroundSyncTest, NothingWrittenNothingSynced) {
  SyncCounter counter;
  {
    BackgroundSync sync(5ms, [&] { return counter.Sync(); });
    std::this_thread::sleep_for(60ms);
  }
  EXPECT_EQ(counter.count(), 0);
}

TEST(BackgroundSyncTest, WritesWithinAnIntervalCostOneSyncOnAnotherThread) {
  SyncCounter counter;
  BackgroundSync sync(50ms, [&] { return counter.Sync(); });
  // The first mark after the start waits out the interval from the start: the other 999
  // come within it.
  for (int i = 0; i < 1000; ++i) sync.MarkDirty();
  ASSERT_TRUE(counter.WaitFor(1));
  std::this_thread::sleep_for(200ms);  // four intervals with nothing new written
  EXPECT_EQ(counter.count(), 1);
  EXPECT_NE(counter.thread(), std::this_thread::get_id());
  sync.MarkDirty();  // written again: synced again
  EXPECT_TRUE(counter.WaitFor(2));
}

TEST(BackgroundSyncTest, AFailedSyncIsTriedAgainWithoutANewWrite) {
  SyncCounter counter;
  int calls = 0;
  BackgroundSync sync(5ms, [&] { return counter.Sync(/*result=*/++calls > 1); });
  sync.MarkDirty();
  ASSERT_TRUE(counter.WaitFor(2));
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(counter.count(), 2);  // the retry succeeded: nothing more to do
}

TEST(BackgroundSyncTest, AWriteDuringASlowSyncNeitherWaitsForItNorIsLost) {
  SyncCounter counter;
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  int calls = 0;
  BackgroundSync sync(1ms, [&] {
    if (++calls == 1) {
      entered.set_value();
      released.wait();  // a disk that takes its time
    }
    return counter.Sync();
  });
  sync.MarkDirty();
  entered.get_future().wait();
  // The caller is not held up by the sync in progress.
  auto marked = std::async(std::launch::async, [&] { sync.MarkDirty(); });
  EXPECT_EQ(marked.wait_for(5s), std::future_status::ready);
  release.set_value();
  marked.wait();
  // What was written during the first sync gets a sync of its own.
  EXPECT_TRUE(counter.WaitFor(2));
}

TEST(BackgroundSyncTest, StopsWhileASyncIsDue) {
  SyncCounter counter;
  const auto start = std::chrono::steady_clock::now();
  {
    BackgroundSync sync(1h, [&] { return counter.Sync(); });
    sync.MarkDirty();  // the first sync waits out the hour from the start
    sync.MarkDirty();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the hour
  EXPECT_EQ(counter.count(), 0);                            // the owner syncs at shutdown, not this
}

}  // namespace
}  // namespace seedance::storage
