// SinkRunner: the bounded queue in front of one sink, and the loop that hands it batches.
//
// Two modes. Memory: the processing thread pushes events into a bounded queue (blocking while
// it is full: that is how backpressure reaches the sources). Durable: the runner reads its
// events from the durable queue through its SinkCursor, and marks ranges finished as batches
// complete. Either way, on the event loop, the runner forms batches of up to
// Sink::MaxBatchEvents() from whatever is queued (no lingering: latency stays low and batches
// grow by themselves under load) and keeps up to Sink::MaxInFlight() deliveries outstanding.
// Outcomes other than kOk and kCancelled send the batch's events to the `rejected` output.
//
// Memory budget (durable mode, `limits.memory`): the runner charges the batches it hands its
// sink to the budget and takes a new one only while the budget has room for it (or nothing is
// in flight). It is a BatchHolder: the governor may evict a batch the sink is only holding
// between retries; its range goes back to the cursor and the runner then keeps a single batch
// in flight (the probe) until a delivery succeeds — the evicted batches are read again once
// the sink is ready for them.
// Thread-safe as stated per method.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/component_stats.h"
#include "storage/durable_queue.h"
#include "core/event_loop.h"
#include "util/loop_signal.h"
#include "governor/memory_budget.h"
#include "seedance/sink.h"

namespace seedance {

class SinkRunner final : public governor::BatchHolder {
 public:
  // Called on the event loop for each event of a refused batch, with the reason.
  using RejectFn = std::function<void(Event&&, const std::string& reason)>;

  // With `cursor` the runner is in durable mode; without, in memory mode.
  SinkRunner(std::string name, std::unique_ptr<Sink> sink, size_t capacity, EventLoop& loop,
             ComponentStats& stats, RejectFn on_reject,
             std::unique_ptr<SinkCursor> cursor = nullptr,
             governor::MemoryBudget* budget = nullptr);

  // Any thread: new records were committed to the durable queue.
  void NotifyAppended() { ScheduleKick(); }
  bool durable() const { return cursor_ != nullptr; }

  const std::string& name() const { return name_; }
  Sink& sink() { return *sink_; }

  // Processing thread: queues `event`, waiting while the queue is full unless `deadline`
  // passes (then it queues anyway: shutdown must not deadlock).
  void Push(Event&& event, std::chrono::steady_clock::time_point deadline =
                               std::chrono::steady_clock::time_point::max());
  // Any thread: from now on Push() waits no later than `deadline` (shutdown).
  void SetShutdownDeadline(std::chrono::steady_clock::time_point deadline);
  // Any thread: queues `event` without waiting (side outputs raised on the event loop).
  void PushNoWait(Event&& event);

  // Waits until nothing is queued or in flight, or `deadline`. Returns true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Events queued or in flight.
  size_t Pending() const;
  // Stops the sink; outstanding deliveries complete as cancelled.
  void Stop();

  // governor::BatchHolder, event loop only.
  void ListBatches(std::vector<governor::BufferState>* out) override;
  uint64_t Evict(uint64_t id) override;
  void OnRoom() override { ScheduleKick(); }

 private:
  struct InFlight {
    uint64_t id = 0;
    std::shared_ptr<const Batch> batch;
    std::chrono::steady_clock::time_point started;
    uint64_t first = 0, last = 0;  // durable queue range
    uint64_t bytes = 0;            // charged to the budget
    uint64_t handed_step = 0;      // the budget's step when the sink got it
    bool evicting = false;
  };

  void ScheduleKick();
  void Kick();  // event loop only
  // Whether the budget lets the runner take another batch. REQUIRES: mu_ held.
  bool BudgetAllowsMore() const;
  void Finish(uint64_t id, DeliveryOutcome outcome);
  // A batch from the pool (one nobody else holds any more), or a new one. REQUIRES: mu_ held.
  std::shared_ptr<Batch> TakeBatch();
  // Free pooled batches keep their events' storage for reuse, but only a few small ones: the
  // pool must not hold memory nobody counts. REQUIRES: mu_ held.
  void TrimPool();
  // The in-flight entry `id`, or in_flight_.end(). REQUIRES: mu_ held.
  std::vector<InFlight>::iterator FindInFlight(uint64_t id);

  const std::string name_;
  std::unique_ptr<Sink> sink_;
  const size_t capacity_;
  EventLoop& loop_;
  ComponentStats& stats_;
  RejectFn on_reject_;
  std::unique_ptr<SinkCursor> cursor_;
  governor::MemoryBudget* const budget_;
  util::LoopSignal kick_signal_;  // runs Kick() on the loop; coalesced, allocation-free

  mutable std::mutex mu_;
  std::condition_variable space_cv_;
  std::condition_variable idle_cv_;
  std::deque<Event> queue_;
  size_t in_flight_events_ = 0;
  std::vector<InFlight> in_flight_;  // a handful: searched, never reallocated once grown
  // Batches are reused once the sink and the runner have let go of them (use_count 1): the
  // pool holds the shared_ptr, so neither the Batch, its control block nor its vector of
  // events is allocated again in steady state.
  std::vector<std::shared_ptr<Batch>> batch_pool_;
  observe::Counter& pool_hits_;
  observe::Counter& pool_misses_;
  uint64_t next_id_ = 1;
  uint64_t event_bytes_estimate_ = 0;  // bytes per event of the last batch (admission)
  bool probing_ = false;  // a batch was evicted and nothing delivered since: one in flight
  std::chrono::steady_clock::time_point shutdown_deadline_ =
      std::chrono::steady_clock::time_point::max();
  bool stopped_ = false;
};

}  // namespace seedance
