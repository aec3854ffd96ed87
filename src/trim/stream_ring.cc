#include "trim/stream_ring.h"

#include <algorithm>

namespace seedance::trim {

StreamRing::StreamRing(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity), alignment_(std::max<uint64_t>(alignment, 1)) {}

std::optional<StreamRing::Placement> StreamRing::Place(uint64_t bytes) {
  const uint64_t n = (std::max<uint64_t>(bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
  if (n > capacity_) return std::nullopt;
  uint64_t at = head_;
  if (at % capacity_ + n > capacity_) at = (at / capacity_ + 1) * capacity_;  // next lap
  // It overwrites the bytes placed one lap earlier, [reuse_begin, reuse_end). Every live
  // region must begin at reuse_end or later (a live one in the skipped tail of the last lap
  // also waits: released in order, it goes before this unit runs).
  const uint64_t reuse_begin = at >= capacity_ ? at - capacity_ : 0;
  const uint64_t reuse_end = at + n > capacity_ ? at + n - capacity_ : 0;
  if (!live_.empty() && live_.front().begin < reuse_end) return std::nullopt;
  Placement p{at % capacity_, 0};
  for (const Region& r : released_) {
    if (r.begin >= reuse_end) break;
    if (r.end > reuse_begin) p.after = std::max(p.after, r.event);
  }
  while (!released_.empty() && released_.front().end <= reuse_end) released_.pop_front();
  live_.push_back(Region{at, at + n, 0});
  head_ = at + n;
  return p;
}

void StreamRing::ReleaseOldest(uint64_t event) {
  Region r = live_.front();
  live_.pop_front();
  r.event = event;
  released_.push_back(r);
}

}  // namespace seedance::trim
