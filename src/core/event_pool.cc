#include "core/event_pool.h"

namespace seedance {

Event EventPool::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.empty()) return Event();
  Event e = std::move(events_.back());
  events_.pop_back();
  bytes_ -= e.payload.capacity();
  return e;
}

void EventPool::Give(Event& event) {
  std::lock_guard<std::mutex> lock(mu_);
  GiveLocked(event);
}

void EventPool::GiveAll(std::vector<IngestItem>& items) {
  std::lock_guard<std::mutex> lock(mu_);
  for (IngestItem& item : items) {
    if (events_.size() >= kMaxEvents) break;
    GiveLocked(item.event);
  }
}

void EventPool::GiveLocked(Event& e) {
  if (events_.capacity() < kMaxEvents) events_.reserve(kMaxEvents);
  if (events_.size() >= kMaxEvents) return;
  const size_t held = e.payload.capacity();
  if (held == 0 || held > kMaxPayloadBytes || bytes_ + held > kMaxBytes) return;
  e.id = 0;
  e.queue_sequence = 0;
  e.event_time_ns = e.ingest_time_ns = 0;
  e.format = PayloadFormat::kJson;
  e.headers.clear();
  e.source.clear();
  e.topic.clear();
  e.payload.clear();
  bytes_ += held;
  events_.push_back(std::move(e));
}

size_t EventPool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

size_t EventPool::payload_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace seedance
