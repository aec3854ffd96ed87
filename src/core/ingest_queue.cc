#include "core/ingest_queue.h"

namespace seedance {

bool IngestQueue::TryPush(Event& event, AckHandle ack) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || items_.size() >= capacity_) return false;
    items_.push_back(IngestItem{std::move(event), ack});
  }
  cv_.notify_one();
  return true;
}

void IngestQueue::WhenWritable(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;  // the source is being stopped; nothing more will be taken
    if (items_.size() >= capacity_) {
      waiters_.push_back(std::move(callback));
      return;
    }
  }
  loop_.Post(std::move(callback));
}

bool IngestQueue::PopBatch(std::vector<IngestItem>& out, size_t max,
                           std::chrono::milliseconds timeout) {
  std::vector<std::function<void()>> wake;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return !items_.empty() || closed_; });
    if (items_.empty()) return !closed_;
    size_t n = std::min(max, items_.size());
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    if (!waiters_.empty() && items_.size() <= capacity_ / 2) wake.swap(waiters_);
  }
  for (auto& w : wake) loop_.Post(std::move(w));
  return true;
}

void IngestQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    waiters_.clear();
  }
  cv_.notify_all();
}

size_t IngestQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

}  // namespace seedance
