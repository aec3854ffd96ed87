// TrimPolicy: when to move idle buffers down a tier, and which ones (DESIGN.md section 4).
//
// One policy core for both deployments: the runtime's memory budget (queued batches, RAM →
// disk) and the seedance::trim library (tensors, GPU memory → pinned host memory). It only
// decides; the caller owns the buffers and performs the moves.
//
// Triggers, sampled once per step (defaults from the article, all configurable):
//   occupancy      fast-tier used / capacity ≥ 92% for 3 consecutive samples
//   idle share     more than 35% of registered bytes idle for 50 or more steps
//   fragmentation  1 − largest free block / total free > 28% on the fast tier
// Victims: buffers on the fast tier, not in use, idle for at least one step and at least
// `min_victim_bytes` (16 MiB; 0 for queued batches), best first by
//   score = size × idle steps / (1 + uses)
// i.e. big, long idle, rarely used; taken until the fast tier would be under the low
// watermark (80% of capacity).
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "seedance/trim.h"

namespace seedance::trim {

// One definition of the knobs, in the public API of the trim library.
using TrimPolicyOptions = PolicyOptions;

struct TierSample {
  uint64_t capacity = 0;
  uint64_t used = 0;
  double fragmentation = 0;  // 1 − largest free block / total free
};

struct BufferState {
  uint64_t id = 0;
  uint64_t size = 0;
  bool on_fast_tier = true;
  bool in_use = false;  // acquired: never moved
  uint64_t last_used_step = 0;
  uint64_t uses = 0;
};

enum class TrimReason { kNone, kOccupancy, kIdleShare, kFragmentation };
const char* TrimReasonName(TrimReason reason);

class TrimPolicy {
 public:
  explicit TrimPolicy(TrimPolicyOptions options = {}) : options_(options) {}

  // One sample per step. Returns why to trim now, or kNone. Occupancy needs
  // `occupancy_samples` consecutive samples at or above its threshold; a trim resets the count.
  TrimReason Sample(const TierSample& fast, double idle_share);

  // Share of registered bytes (all tiers) idle for at least `idle_steps` at `step`.
  double IdleShare(const std::vector<BufferState>& buffers, uint64_t step) const;
  // Bytes to move off the fast tier to bring it under the low watermark (0 when under).
  uint64_t BytesToFree(const TierSample& fast) const;
  // Ids to move, best victim first, until `bytes_to_free` is covered (or candidates run out).
  std::vector<uint64_t> ChooseVictims(const std::vector<BufferState>& buffers, uint64_t step,
                                      uint64_t bytes_to_free) const;
  static double Score(const BufferState& b, uint64_t step);

  const TrimPolicyOptions& options() const { return options_; }

 private:
  TrimPolicyOptions options_;
  int occupancy_streak_ = 0;
};

}  // namespace seedance::trim
