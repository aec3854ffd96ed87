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
  if (dirty_) return;  // already due: no wake-up per commit
  dirty_ = true;
  wake_.notify_one();
}

void BackgroundSync::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last_sync = std::chrono::steady_clock::now();
  while (true) {
    wake_.wait(lock, [this] { return stop_ || dirty_; });
    if (stop_) return;
    if (wake_.wait_until(lock, last_sync + interval_, [this] { return stop_; })) return;
    dirty_ = false;  // what is written from here on waits for the next sync
    lock.unlock();
    const bool ok = sync_();
    lock.lock();
    last_sync = std::chrono::steady_clock::now();
    if (!ok) dirty_ = true;
  }
}

}  // namespace seedance::storage
