#include "trim/access_period.h"

#include <algorithm>
#include <cmath>

namespace seedance::trim {

std::optional<uint64_t> AccessPeriod::OnAcquire(uint64_t step, uint64_t uses, uint64_t idle_steps,
                                                uint64_t lead_steps) {
  if (uses > 1 && step == last_acquire_step_) return std::nullopt;  // same burst: nothing new
  const uint64_t interval = uses > 1 ? step - last_acquire_step_ : 0;
  last_acquire_step_ = step;
  if (interval > 1) {
    if (interval == gap_candidate_) {
      gap_ = interval;
    } else {
      gap_candidate_ = interval;
      gap_ = 0;
    }
  }
  if (gap_ <= 1) return std::nullopt;
  const uint64_t lead =
      std::min<uint64_t>({gap_ - 1, std::max<uint64_t>(1, idle_steps / 2), lead_steps});
  prefetch_step_ = step + gap_ - lead;
  return prefetch_step_;
}

uint64_t LeadSteps(uint64_t size, double link_bytes_per_second, double step_seconds) {
  if (link_bytes_per_second <= 0 || step_seconds <= 0) return 1;
  const double copy_s = static_cast<double>(size) / link_bytes_per_second;
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(copy_s / step_seconds)) + 1);
}

}  // namespace seedance::trim
