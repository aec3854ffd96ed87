// Weight streaming (issue 41), the plan. From one recorded iteration (the units in the order
// they ran, their bytes and compute time) it decides which units stay resident on the device
// and how the rest stream through a ring (trim/stream_ring.h). The aim is that compute covers
// the copies, and that the bytes copied per iteration are the model less what stays.
//
// A step costs at least max(compute, streamed bytes / link). For each ring size tried (steps of
// 5% of the budget, and small multiples of the largest units), units the ring cannot hold stay
// resident, then the units with the most bytes per unit of compute (the hardest to hide) as
// far as the rest of the budget goes, and the pipeline is simulated. Then, while the
// simulation shows a compute waiting for its copy, the unit that waited longest is made
// resident in exchange for the least dense resident units, as long as the step gets faster.
// The plan is the one that copies the fewest bytes among those whose simulated step is within
// `slack` (2%) of the fastest. Eviction is implicit and optimal for a loop: a
// streamed unit's region is the one reused next (farthest next use), and every streamed unit
// is copied exactly once per iteration.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "seedance/result.h"

namespace seedance::trim {

struct UnitRecord {
  uint64_t bytes = 0;
  double seconds = 0;  // its compute time (CUDA events on a GPU, wall time on the CPU)
};

struct StreamPlanOptions {
  uint64_t budget = 0;               // device bytes for the units: the resident ones and the ring
  double link_bytes_per_second = 0;  // the measured host-to-device rate
  uint64_t alignment = 256;          // of each unit's place in the ring
  // Of the plans whose simulated step is within this share of the fastest, the one that copies
  // the fewest bytes (the link's time and energy, and room for other transfers).
  double slack = 0.02;
};

struct StreamSimulation {
  double step_seconds = 0;     // one iteration in steady state
  uint64_t bytes_copied = 0;   // in that iteration
  uint64_t copy_waits = 0;     // units whose compute waited for their copy, in that iteration
  std::vector<size_t> waited;  // which (unit indices), the longest wait first
  int lookahead = 0;  // the most streamed units copied or copying ahead of the one computing
};

struct StreamPlan {
  std::vector<uint8_t> resident;  // per unit, in recorded order: 1 stays on the device
  uint64_t resident_bytes = 0;
  uint64_t ring_bytes = 0;      // the rest of the budget
  uint64_t streamed_bytes = 0;  // copied per iteration
  double compute_seconds = 0;
  double bound_seconds = 0;  // max(compute, streamed / link): no plan does better
  StreamSimulation simulated;
};

// The pipeline under a resident set, over `iterations` loops; reports the next to last (the
// last has no next loop to copy ahead into). One copy engine at `link` bytes per second. The
// streamed units are placed in a StreamRing of `ring_bytes` in order. A copy waits until the
// bytes it reuses are released: the compute of the unit that held them is done. A compute waits
// for its copy and for the compute before it. kResourceExhausted when a streamed unit is larger
// than the ring.
Result<StreamSimulation> SimulateStream(std::span<const UnitRecord> units,
                                        std::span<const uint8_t> resident, uint64_t ring_bytes,
                                        double link, uint64_t alignment, int iterations = 4);

// kInvalidArgument without units, a budget or a link rate; kResourceExhausted when no resident
// set leaves a ring that holds the largest streamed unit.
Result<StreamPlan> PlanStream(std::span<const UnitRecord> units, const StreamPlanOptions& options);

}  // namespace seedance::trim
