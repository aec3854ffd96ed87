#include "core/delivery/batch_pool.h"

#include "governor/memory_budget.h"

namespace seedance::delivery {

namespace {
// Whether a pooled batch's events hold more payload storage than a pool may keep: one large
// event must not stay held.
bool HoldsLargePayloads(const Batch& b) {
  constexpr size_t kMaxHeld = 16 * governor::MemoryBudget::kPooledBufferBytes;
  size_t held = 0;
  for (const Event& e : b.events) held += e.payload.capacity();
  return held > kMaxHeld;
}
}  // namespace

std::shared_ptr<Batch> BatchPool::Take() {
  for (const auto& b : pool_) {
    if (b.use_count() == 1) {  // only the pool holds it: the sink is done with it
      hits_.Add();
      return b;
    }
  }
  misses_.Add();
  return pool_.emplace_back(std::make_shared<Batch>());
}

void BatchPool::Trim() {
  constexpr int kKeepBatches = 4;
  constexpr size_t kKeepEvents = 16;
  int kept = 0;
  for (const auto& b : pool_) {
    if (b.use_count() != 1 || b->events.capacity() == 0) continue;
    if (kept < kKeepBatches && !HoldsLargePayloads(*b)) {
      ++kept;
      if (b->events.size() > kKeepEvents) source_.Truncate(&b->events, kKeepEvents);
      if (b->events.capacity() > 2 * kKeepEvents) b->events.shrink_to_fit();
      continue;
    }
    source_.Truncate(&b->events, 0);
    b->events.shrink_to_fit();
  }
}

void BatchPool::ReleaseLarge() {
  for (const auto& b : pool_) {
    if (b.use_count() == 1 && HoldsLargePayloads(*b)) {
      b->events.clear();
      b->events.shrink_to_fit();
    }
  }
}

}  // namespace seedance::delivery
