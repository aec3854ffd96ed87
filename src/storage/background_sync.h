// BackgroundSync: the durable queue's interval fsync, on a thread of its own.
//
// The fsync policy `interval` makes what Commit wrote durable at most `interval` later. The
// fdatasync used to run on the processing thread (from Tick), so a slow disk stalled every
// event behind it: the call is usually well under a millisecond but sometimes hundreds, and
// those stalls set the P99 (docs/bench.md, "Tuning record"). Here it runs on `sd-fsync`;
// nothing waits for it but a segment rotation (QueueLog's fd lock).
//
// MarkDirty (any thread, after data was written to the kernel) is a flag under a lock; it wakes
// the thread only when the thread is idle. The thread syncs once `interval` has passed since its
// last sync, so any number of commits in an interval cost one fdatasync and, at a steady rate,
// one wake-up. A failed sync is tried again after the next interval. With nothing written the
// thread sleeps without a timer. Destruction stops the thread without a
// last sync (the owner syncs at shutdown).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace seedance::storage {

class BackgroundSync {
 public:
  // `sync` returns false when it failed (the data stays dirty).
  BackgroundSync(std::chrono::nanoseconds interval, std::function<bool()> sync);
  ~BackgroundSync();
  BackgroundSync(const BackgroundSync&) = delete;
  BackgroundSync& operator=(const BackgroundSync&) = delete;

  void MarkDirty();

 private:
  void Run();

  const std::chrono::nanoseconds interval_;
  const std::function<bool()> sync_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool dirty_ = false;
  bool idle_ = false;  // waiting for a write, the interval over
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is set up
};

}  // namespace seedance::storage
