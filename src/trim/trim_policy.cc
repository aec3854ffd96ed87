#include "trim/trim_policy.h"

#include <algorithm>

namespace seedance::trim {

const char* TrimReasonName(TrimReason reason) {
  switch (reason) {
    case TrimReason::kNone:
      return "none";
    case TrimReason::kOccupancy:
      return "occupancy";
    case TrimReason::kIdleShare:
      return "idle_share";
    case TrimReason::kFragmentation:
      return "fragmentation";
  }
  return "?";
}

TrimReason TrimPolicy::Sample(const TierSample& fast, double idle_share) {
  const double occupancy =
      fast.capacity == 0 ? 0.0
                         : static_cast<double>(fast.used) / static_cast<double>(fast.capacity);
  occupancy_streak_ = occupancy >= options_.occupancy_trigger ? occupancy_streak_ + 1 : 0;
  if (occupancy_streak_ >= options_.occupancy_samples) {
    occupancy_streak_ = 0;
    return TrimReason::kOccupancy;
  }
  if (idle_share > options_.idle_share_trigger) return TrimReason::kIdleShare;
  if (fast.fragmentation > options_.fragmentation_trigger) return TrimReason::kFragmentation;
  return TrimReason::kNone;
}

double TrimPolicy::IdleShare(const std::vector<BufferState>& buffers, uint64_t step) const {
  uint64_t total = 0, idle = 0;
  for (const BufferState& b : buffers) {
    total += b.size;
    if (!b.in_use && step >= b.last_used_step + options_.idle_steps) idle += b.size;
  }
  return total == 0 ? 0.0 : static_cast<double>(idle) / static_cast<double>(total);
}

uint64_t TrimPolicy::BytesToFree(const TierSample& fast) const {
  const auto target =
      static_cast<uint64_t>(options_.low_watermark * static_cast<double>(fast.capacity));
  return fast.used > target ? fast.used - target : 0;
}

double TrimPolicy::Score(const BufferState& b, uint64_t step) {
  const double idle = step > b.last_used_step ? static_cast<double>(step - b.last_used_step) : 0.0;
  return static_cast<double>(b.size) * idle / (1.0 + static_cast<double>(b.uses));
}

std::vector<uint64_t> TrimPolicy::ChooseVictims(const std::vector<BufferState>& buffers,
                                                uint64_t step, uint64_t bytes_to_free) const {
  std::vector<const BufferState*> candidates;
  for (const BufferState& b : buffers) {
    if (b.on_fast_tier && !b.in_use && step > b.last_used_step &&
        b.size >= options_.min_victim_bytes) {
      candidates.push_back(&b);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [step](const BufferState* a, const BufferState* b) {
              double sa = Score(*a, step), sb = Score(*b, step);
              return sa != sb ? sa > sb : a->id < b->id;
            });
  std::vector<uint64_t> out;
  uint64_t freed = 0;
  for (const BufferState* b : candidates) {
    if (freed >= bytes_to_free) break;
    out.push_back(b->id);
    freed += b->size;
  }
  return out;
}

}  // namespace seedance::trim
