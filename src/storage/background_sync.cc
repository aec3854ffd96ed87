#include "storage/background_sync.h"

#include <utility>

#include "util/thread_name.h"

namespace seedance::storage {

BackgroundSync::BackgroundSync(std::chrono::nanoseconds interval, std::function<bool()> sync)
    : interval_(interval), sync_(std::move(sync)), thread_([this] {
        util::NameThisThread("sd-fsync");
        Run();
      }) {}

BackgroundSync::~BackgroundSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void BackgroundSync::MarkDirty() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dirty_) return;  // already due
  dirty_ = true;
  if (idle_) wake_.notify_one();  // otherwise the thread looks at dirty_ when its interval ends
}

void BackgroundSync::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last_sync = std::chrono::steady_clock::now();
  while (true) {
    // The interval since the last sync first (what is written meanwhile waits for its end)...
    if (wake_.wait_until(lock, last_sync + interval_, [this] { return stop_; })) return;
    // ...then, unless something was written during it, until something is: no timer while
    // nothing is written. At a steady rate a sync costs one wake-up, at the interval's end.
    idle_ = true;
    wake_.wait(lock, [this] { return stop_ || dirty_; });
    idle_ = false;
    if (stop_) return;
    dirty_ = false;  // what is written from here on waits for the next sync
    lock.unlock();
    const bool ok = sync_();
    lock.lock();
    last_sync = std::chrono::steady_clock::now();
    if (!ok) dirty_ = true;
  }
}

}  // namespace seedance::storage
