// Weight streaming (issue 41), running a plan (trim/stream_plan.h). The host calls Begin(unit)
// before a unit's compute is issued and End(unit) after. The executor issues each streamed
// unit's copy into its place in the ring (trim/stream_ring.h) ahead of its use, as far as the
// plan's lookahead and the ring allow. It never waits on the host: a copy waits on the device
// for the compute that last used the bytes it overwrites, and the compute waits on the device
// for its copy. What a device must offer is StreamDevice (trim/stream_device.h).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "seedance/result.h"
#include "trim/stream_device.h"
#include "trim/stream_plan.h"
#include "trim/stream_ring.h"

namespace seedance::trim {

struct StreamUnit {
  const void* host = nullptr;  // its bytes in host memory (pinned on a GPU): what is copied
  void* resident = nullptr;    // its device memory, for a unit the plan keeps resident
  uint64_t bytes = 0;
};

struct StreamExecutorStats {
  uint64_t copies = 0;
  uint64_t bytes_copied = 0;
  // Streamed units whose copy was issued only when they began (nothing issued ahead of them).
  uint64_t issued_at_begin = 0;
  int most_ahead = 0;         // the most copies issued beyond the unit that began
  uint64_t order_misses = 0;  // Begin of a unit other than the one the plan expects
};

class StreamExecutor {
 public:
  // REQUIRES: one StreamUnit per unit of the plan, `ring` the plan's ring_bytes of device memory,
  // `device` outlives the executor.
  StreamExecutor(const StreamPlan& plan, std::vector<StreamUnit> units, void* ring,
                 StreamDevice& device, uint64_t alignment = 256);

  // Before unit `i`'s compute is issued: its device memory. The compute stream is made to wait
  // for its copy, and the copies of the streamed units after it are issued as far as the
  // lookahead and the ring allow. kFailedPrecondition when `i` is not the unit the plan expects
  // next (the order changed: record again), or Begin was called twice; the device's error
  // (StreamDevice::Health) once it has one.
  Result<void*> Begin(size_t i);
  // After unit `i`'s compute has been issued: its region of the ring may be reused once the
  // compute stream passes an event recorded now.
  Status End(size_t i);

  const StreamExecutorStats& stats() const { return stats_; }

 private:
  struct InFlight {
    size_t unit;
    uint64_t offset;
    StreamDevice::Event ready;
  };
  // Issues the next streamed unit's copy; false when the ring has no room for it yet.
  bool IssueNext();
  void IssueAhead();

  std::vector<StreamUnit> units_;
  std::vector<uint8_t> resident_;
  std::vector<size_t> streamed_;  // streamed unit indices, in order
  char* ring_memory_;
  StreamDevice& device_;
  StreamRing ring_;
  int lookahead_;
  size_t expected_ = 0;  // the unit that begins next
  bool begun_ = false;   // between Begin and End
  uint64_t issued_ = 0;  // copies issued, in the streamed order (cyclic)
  uint64_t begun_streamed_ = 0;
  std::deque<InFlight> in_flight_;  // issued, not ended, in order
  StreamExecutorStats stats_;
};

}  // namespace seedance::trim
