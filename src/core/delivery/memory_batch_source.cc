#include "core/delivery/memory_batch_source.h"

#include <algorithm>

#include "util/loop_signal.h"

namespace seedance::delivery {

using std::chrono::steady_clock;

MemoryBatchSource::MemoryBatchSource(size_t capacity, ComponentStats& stats)
    : capacity_(capacity), stats_(stats) {}

void MemoryBatchSource::Queue(Event&& event) {
  queue_.push_back(std::move(event));
  stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
}

void MemoryBatchSource::Push(Event&& event, steady_clock::time_point deadline) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // The kicks this thread made so far go out before it waits: they free the room.
    if (queue_.size() >= capacity_) util::WakeBatcher::FlushCurrent();
    // The shutdown deadline may be set while we wait: look at it on every wake-up.
    while (queue_.size() >= capacity_ && !stopped_) {
      const auto until = std::min(deadline, shutdown_deadline_);
      if (steady_clock::now() >= until) break;
      space_cv_.wait_until(lock, until);
    }
    Queue(std::move(event));
  }
  stats_.events_in.Add();
}

void MemoryBatchSource::PushNoWait(Event&& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Queue(std::move(event));
  }
  stats_.events_in.Add();
}

void MemoryBatchSource::SetShutdownDeadline(steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_deadline_ = deadline;
  }
  space_cv_.notify_all();
}

size_t MemoryBatchSource::Waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

bool MemoryBatchSource::Take(size_t max_events, std::vector<Event>* events, Lease* lease) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return false;
    const size_t n = std::min(max_events, queue_.size());
    events->clear();
    events->reserve(n);
    for (size_t i = 0; i < n; ++i) {
      events->push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
  }
  *lease = Lease{};
  space_cv_.notify_all();
  return true;
}

void MemoryBatchSource::ShutDown(const Lease&, size_t events) {
  stats_.Dropped("shutdown", events);
}

size_t MemoryBatchSource::Stop() {
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    dropped = queue_.size();
    queue_.clear();
  }
  space_cv_.notify_all();
  return dropped;
}

}  // namespace seedance::delivery
