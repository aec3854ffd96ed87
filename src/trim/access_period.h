// AccessPeriod: how TierManager learns when a moved buffer will be used again, to bring it
// back before then (a prefetch instead of a stall). A buffer used in bursts every `gap` steps
// (a layer's weights once per training step) has its gap confirmed when two consecutive gaps
// between acquires are equal. A prefetch is then due as many steps before the next use as the
// copy takes (LeadSteps), at least one, within the gap and short of the idle time (or the idle
// trim would send the buffer back down before its use).
#pragma once

#include <cstdint>
#include <optional>

namespace seedance::trim {

class AccessPeriod {
 public:
  // An acquire at `step`, the buffer's `uses`-th (this one counted). Several in one step are
  // one burst. Returns the step its prefetch is due once the gap is confirmed.
  std::optional<uint64_t> OnAcquire(uint64_t step, uint64_t uses, uint64_t idle_steps,
                                    uint64_t lead_steps);

  uint64_t gap() const { return gap_; }  // 0 while not confirmed
  // The step of the prefetch last scheduled (0: none). A schedule for another step is stale.
  uint64_t prefetch_step() const { return prefetch_step_; }

 private:
  uint64_t last_acquire_step_ = 0;
  uint64_t gap_candidate_ = 0;
  uint64_t gap_ = 0;
  uint64_t prefetch_step_ = 0;
};

// Steps a copy of `size` bytes takes at `link_bytes_per_second` when a step lasts
// `step_seconds`, plus one: 1 until both are measured.
uint64_t LeadSteps(uint64_t size, double link_bytes_per_second, double step_seconds);

}  // namespace seedance::trim
