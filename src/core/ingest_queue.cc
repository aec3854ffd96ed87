#include "core/ingest_queue.h"

namespace seedance {

bool IngestQueue::TryPush(Event& event, AckHandle ack, std::string_view invalid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || items_.size() >= capacity_) return false;
    const uint64_t bytes = budget_ ? event.MemoryBytes() : 0;
    if (budget_ && !items_.empty() && bytes_ + bytes > max_bytes_) return false;
    items_.push_back(IngestItem{std::move(event), ack, bytes, std::string(invalid)});
    ++pushed_;
    bytes_ += bytes;
    if (budget_) budget_->Charge(bytes);
  }
  wake_.Notify();
  return true;
}

bool IngestQueue::TryPushAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token,
                             uint32_t stream, uint64_t first_end) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || !Fits(events.size())) return false;
    uint64_t total = 0;
    if (budget_) {
      for (const Event& e : events) total += e.MemoryBytes();
      if (!items_.empty() && bytes_ + total > max_bytes_) return false;
    }
    for (size_t i = 0; i < events.size(); ++i) {
      const uint64_t bytes = budget_ ? events[i].MemoryBytes() : 0;
      const AckHandle ack{owner, first_token + i, 0, stream, stream != 0 ? first_end + i + 1 : 0};
      items_.push_back(IngestItem{std::move(events[i]), ack, bytes, std::string()});
    }
    pushed_ += events.size();
    bytes_ += total;
    if (budget_) budget_->Charge(total);
  }
  wake_.Notify();
  return true;
}

bool IngestQueue::Fits(size_t events) const {
  return items_.size() + events <= capacity_ || items_.size() <= capacity_ / 2;
}

bool IngestQueue::Wakes() const {
  return items_.size() <= capacity_ / 2 && (!budget_ || bytes_ < max_bytes_ / 2);
}

void IngestQueue::WhenRoomFor(size_t events, std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;  // the source is being stopped; nothing more will be taken
    if (!Fits(events) || (budget_ && !items_.empty() && bytes_ >= max_bytes_ / 2)) {
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
    uint64_t popped = 0;
    for (size_t i = 0; i < n; ++i) {
      popped += items_.front().bytes;
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    bytes_ -= popped;
    if (budget_) budget_->Credit(popped);
    if (!waiters_.empty() && Wakes()) wake.swap(waiters_);
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
