// MemoryBudget: the runtime's `limits.memory` (DESIGN.md section 4), on the shared TrimPolicy.
//
// Two tiers: memory (what the budget counts) and disk (the durable queue, where every queued
// event already is). `capacity` (limits.memory) bounds the process's memory above its idle
// size; 40% of it (`reserve_share`) is left for what is not counted per event (the ingest
// ring's slots, the queue's read and write buffers, connections, allocator slack in the
// arenas: up to 6.2 MB were measured at the peak of the hung-sink test with limits.memory
// 16MiB on a loaded CI machine, where a third, 5.3 MB, was too little), the rest —
// `queued_capacity()` — is what the counted bytes may use, and what occupancy is measured against.
// Components charge the bytes they hold for queued events — the ingest queue, the batches a sink
// has been handed, the request bodies a sink built — and credit them when done. Admission is the
// holders' own: they ask HasRoom() before taking more.
//
// Once per step (100 ms) Step() samples the triggers: occupancy ≥ 92% of the budget for 3
// consecutive steps, or more than 35% of the holders' batch bytes idle for 50+ steps. When one
// fires, batches are chosen by the policy's score (size × idle steps / (1 + uses)) and their
// holders asked to evict them: the in-memory copy is dropped, the batch stays in the durable
// queue and is read again when its sink is ready for it. A holder may refuse (a batch being
// sent is in use); the next victim is tried. Trims continue until the budget is under the low
// watermark (occupancy) or every long-idle batch is out (idle share).
//
// The budget is on the bytes counted; the process's resident size is watched too (gauge, and
// free heap pages go back to the system after a trim, when the counted bytes fell by a quarter
// of the budget since the last release, and whenever the resident size is over the budget plus
// the baseline measured at the first step — at most once a second).
//
// Thread-safety: Charge/Credit/HasRoom/used from any thread; the rest on the event loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "observe/metrics.h"
#include "seedance/plugin_context.h"
#include "trim/trim_policy.h"

namespace seedance::governor {

// The memory budget is the runtime's deployment of the trim library's policy core.
using trim::BufferState;
using trim::TierSample;
using trim::TrimPolicy;
using trim::TrimPolicyOptions;
using trim::TrimReason;
using trim::TrimReasonName;

// Something that holds batches the budget may ask back (a sink runner). Event loop only.
class BatchHolder {
 public:
  virtual ~BatchHolder() = default;
  // Appends the holder's batches: ids unique within the holder, size, in_use, last_used_step
  // (the step the batch was last handed over or attempted), uses.
  virtual void ListBatches(std::vector<BufferState>* out) = 0;
  // Drops the in-memory copy of batch `id`; returns the bytes freed (0 = refused: in use).
  virtual uint64_t Evict(uint64_t id) = 0;
  // Memory was freed: a holder that held back for lack of room may take more now.
  virtual void OnRoom() = 0;
};

struct MemoryBudgetOptions {
  uint64_t capacity = 0;
  double reserve_share = 0.4;
  std::chrono::nanoseconds step = std::chrono::milliseconds(100);
  TrimPolicyOptions policy = {.min_victim_bytes = 0};
};

class MemoryBudget final : public MemoryAccount {
 public:
  // The budget's shares, in one place. Of queued_capacity():
  //  - the ingest queue may hold a quarter (IngestBytes());
  //  - a sink runner charges each batch it holds with its events and the request its sink
  //    builds from them, estimated at the events' size again (BatchChargeBytes()), for as long
  //    as it holds the batch: a retry builds its request again without asking; and it takes
  //    another batch only while a full one would fit (BatchAdmissionBytes());
  //  - buffers a component keeps in a pool for reuse (a request body) are kept only up to
  //    kPooledBufferBytes each: pooled memory is not counted, so it must stay small.
  // The rest of `capacity` (reserve_share) is for what nobody counts (see above).
  uint64_t IngestBytes() const { return queued_capacity_ / 4; }
  static uint64_t BatchChargeBytes(uint64_t event_bytes) { return 2 * event_bytes; }
  static uint64_t BatchAdmissionBytes(size_t events, uint64_t bytes_per_event) {
    return BatchChargeBytes(events * bytes_per_event);
  }

  MemoryBudget(MemoryBudgetOptions options, observe::MetricsRegistry& metrics);

  void Charge(uint64_t bytes) override { used_.fetch_add(bytes, std::memory_order_relaxed); }
  void Credit(uint64_t bytes) override { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  // True when `bytes` more still fit under the capacity.
  bool HasRoom(uint64_t bytes) const { return used() + bytes <= queued_capacity_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t capacity() const { return options_.capacity; }
  uint64_t queued_capacity() const { return queued_capacity_; }
  uint64_t step() const { return step_; }
  const MemoryBudgetOptions& options() const { return options_; }

  // Holders register for the lifetime of the pipeline. REQUIRES: `holder` outlives the budget
  // or is removed first.
  void AddHolder(BatchHolder* holder) { holders_.push_back(holder); }
  void RemoveHolder(BatchHolder* holder);
  // Bytes of the disk tier (the durable queue), for the metrics.
  void SetDiskBytes(uint64_t bytes) { disk_bytes_.Set(static_cast<int64_t>(bytes)); }
  // A batch that was evicted came back into memory (read again from disk).
  void CountRestored(uint64_t bytes) { moved_to_memory_.Add(bytes); }

  // One step: samples the triggers and trims when one fires. Returns the reason (kNone when
  // nothing fired).
  TrimReason Step();

 private:
  // Evicts victims from `batches` (ids carry their holder); returns the bytes freed.
  uint64_t Trim(TrimReason reason, const std::vector<BufferState>& batches,
                std::chrono::steady_clock::time_point t0);

  // Gives free heap pages back when a trim freed memory or the process is over budget.
  void MaybeReleaseHeap(bool trimmed);

  const MemoryBudgetOptions options_;
  const uint64_t queued_capacity_;
  TrimPolicy policy_;
  uint64_t baseline_resident_ = 0;  // at the first step
  uint64_t last_release_step_ = 0;
  uint64_t used_high_ = 0;           // most bytes counted since the last release
  bool release_after_trim_ = false;  // evicted batches are freed when their sink lets go
  observe::Gauge& resident_gauge_;
  observe::Counter& heap_releases_;
  std::atomic<uint64_t> used_{0};
  uint64_t step_ = 0;
  std::vector<BatchHolder*> holders_;
  observe::Gauge& used_gauge_;
  observe::Gauge& disk_bytes_;
  observe::Counter& moved_to_disk_;
  observe::Counter& moved_to_memory_;
  observe::Counter& evictions_;
  observe::Counter& refused_;
  observe::Histogram& trim_seconds_;
  observe::MetricsRegistry& metrics_;
};

}  // namespace seedance::governor
