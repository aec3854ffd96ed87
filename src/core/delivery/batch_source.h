// BatchSource: where a SinkRunner takes its batches from, and what it tells the source when a
// batch ("job") ends. Two kinds, so the runner has no mode of its own:
//   MemoryBatchSource   a bounded in-memory queue the processing thread pushes into;
//   DurableBatchSource  the sink's cursor over the durable queue, with the sink's routing and
//                       the memory budget's charge for the batches it has handed out.
// Not thread-safe: the runner calls every method here under its own lock (other threads ask
// it Waiting() through SinkRunner::Pending and WaitIdle). MemoryBatchSource's Push is the
// exception: see there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "seedance/event.h"

namespace seedance::delivery {

// What a job took from its source, handed back when the job ends.
struct Lease {
  uint64_t first = 0, last = 0;  // durable queue sequences consumed (other outputs' included)
  uint64_t bytes = 0;            // charged to the memory budget
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Events waiting to be taken.
  virtual size_t Waiting() const = 0;
  // True when what waits was taken once and given back (evicted): it leaves without
  // lingering.
  virtual bool ReadingAgain() const { return false; }
  // Whether a job of `batch_events` may be taken while `open_jobs` are outstanding (the memory
  // budget; with none outstanding always, so delivery makes progress).
  virtual bool Admits(size_t open_jobs, size_t batch_events) const {
    (void)open_jobs;
    (void)batch_events;
    return true;
  }
  // Takes up to `max_events` events into `events` (replacing what it held; its elements may
  // be reused) and fills `lease`. False when nothing could be taken; `events` is then not a
  // batch.
  virtual bool Take(size_t max_events, std::vector<Event>* events, Lease* lease) = 0;
  // After Take() returned false: zero when nothing waits that could be taken (the runner is
  // kicked when something arrives); else how soon to take again, because what waits could not
  // be read (a durable queue segment, out of descriptors or EIO) and no arrival may come.
  virtual std::chrono::milliseconds TakeAgainAfter() const { return {}; }

  // A job's one outcome. Delivered: its events were delivered, rejected or given up
  // (`delivered_any`: at least one reached the sink).
  virtual void Delivered(const Lease& lease, bool delivered_any) = 0;
  // Shut down before its outcome: `events` were not delivered.
  virtual void ShutDown(const Lease& lease, size_t events) = 0;
  // Evicted by the memory budget while it waited for a retry: taken again later.
  virtual bool Evictable() const { return false; }
  virtual void Evicted(const Lease& lease) { (void)lease; }

  // Resizes a pooled batch's `events` to `n` (a source may keep what is let go).
  virtual void Truncate(std::vector<Event>* events, size_t n) { events->resize(n); }
  // The runner stops: what waits is not taken any more. Returns the events dropped (memory)
  // or 0 (durable: they stay in the queue for the next run).
  virtual size_t Stop() = 0;
  // After Stop(), for a runner replaced by a reload: lets go of the source's resources that
  // another runner of the same name takes over (the durable cursor). Outcomes of jobs that end
  // later change nothing there any more.
  virtual void Detach() {}
};

}  // namespace seedance::delivery
