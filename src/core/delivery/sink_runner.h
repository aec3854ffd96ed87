// SinkRunner: everything between the queue and a sink's one attempt — the same delivery
// policy for every sink (DESIGN.md section 3).
//
// Two modes. Memory: the processing thread pushes events into a bounded queue (blocking while
// it is full: that is how backpressure reaches the sources). Durable: the runner reads its
// events from the durable queue through its SinkCursor, and marks ranges finished as batches
// complete. Either way, on the event loop, the runner forms batches ("jobs") of up to
// `batch_size` events from whatever is queued (without batch_linger none waits for more:
// latency stays low and batches grow by themselves under load) and keeps up to the concurrency
// limit of them outstanding.
//
// A job is delivered by attempts (Sink::Attempt), and each outcome decides what next:
//   delivered  done (events the sink refused one by one go to `rejected`);
//   retry      again after the delay core/delivery/retry_schedule.h decides (backoff
//              doubling with jitter, the server's Retry-After), or to `rejected` with "gave
//              up after N attempts: <reason>" past retry_limit;
//   rejected   every event of the attempt to `rejected` with the reason;
//   too large, bisect  the attempt's events are attempted again as two halves, each split
//              again if need be; a single event still refused goes to `rejected`;
//   shutdown   the job is not delivered (durable: read again after a restart).
// An attempt that outlasts `timeout` is aborted (Sink::Abort) and retried; it counts as
// backpressure for the concurrency controller, as a 429/503 does. The concurrency limit
// follows the attempts' P99 latency when adaptive (governor/concurrency_controller.h). A job
// ends with exactly one outcome, however it was split and retried. Failures are logged when
// delivery starts failing (then at most one line per 10 s with a count of the others) and
// once when it recovers.
//
// The driver: it composes the parts in this folder, each with its own tests —
//   batch_source.h          where batches come from: memory_batch_source.h (the bounded queue)
//                           or durable_batch_source.h (the cursor, routing, the budget charge);
//   batch_pool.h            batches reused without allocating;
//   linger.h                whether a small batch waits for more;
//   job_table.h             jobs and their parts until each job's one outcome;
//   retry_schedule.h        when a failed part goes again, or is given up;
// and the concurrency controller (governor/). sink_runner.cc takes batches, watches attempts
// for the timeout and stops; sink_runner_attempts.cc acts on each attempt's outcome.
//
// Memory budget (durable mode, `limits.memory`): the runner is a BatchHolder. The governor may
// evict a job none of whose attempts is in progress (all wait for a retry); its range goes
// back to the cursor (durable_batch_source.h says what follows).
// Thread-safe as stated per method.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "core/delivery/batch_pool.h"
#include "core/delivery/batch_source.h"
#include "core/delivery/job_table.h"
#include "core/delivery/linger.h"
#include "core/delivery/memory_batch_source.h"
#include "core/delivery/retry_schedule.h"
#include "core/delivery/routing.h"
#include "governor/concurrency_controller.h"
#include "governor/memory_budget.h"
#include "observe/component_stats.h"
#include "observe/tap_hub.h"
#include "observe/tracer.h"
#include "seedance/delivery_policy.h"
#include "seedance/sink.h"
#include "storage/durable_queue.h"
#include "util/event_loop.h"
#include "util/handler_slot.h"
#include "util/log.h"
#include "util/loop_signal.h"
#include "util/random_seed.h"

namespace seedance {

class SinkRunner final : public governor::BatchHolder {
 public:
  // Called on the event loop for each event of a refused batch, with the reason.
  using RejectFn = std::function<void(Event&&, const std::string& reason)>;

  // With `cursor` the runner is in durable mode; without, in memory mode.
  SinkRunner(std::string name, std::unique_ptr<Sink> sink, DeliveryPolicy policy, size_t capacity,
             EventLoop& loop, ComponentStats& stats, RejectFn on_reject,
             std::unique_ptr<storage::SinkCursor> cursor = nullptr,
             governor::MemoryBudget* budget = nullptr);
  ~SinkRunner() override;

  // Which events of the outputs it reads a sink takes. Set before the loop starts.
  using Routing = delivery::Routing;
  void SetRouting(Routing routing) { routing_ = std::move(routing); }
  // Before the loop starts: each batch taken is offered to `taps` (the sink's input).
  void SetTaps(observe::TapHub* taps) { taps_ = taps; }
  // Before the loop starts: each event delivered or rejected gets its `deliver` span there
  // when its trace is sampled (observe/tracer.h).
  void SetTracer(observe::Tracer* tracer) { tracer_ = tracer; }
  // True when this sink takes `event` (see Routing).
  bool Wants(const Event& event) const { return routing_.Wants(event); }

  // Any thread: new records were committed to the durable queue.
  void NotifyAppended() { ScheduleKick(); }
  // Any thread, before the event reaches the sink: an event Seedance took in at
  // `ingest_wall_ns` (Unix ns; 0 = unknown) is on its way. batch_linger counts from the oldest
  // such arrival, so the time an event spent in processing and in the durable queue is part
  // of the linger, not added to it.
  void NoteArrival(int64_t ingest_wall_ns) {
    if (ingest_wall_ns <= 0 || policy_.linger.count() == 0) return;
    int64_t oldest = oldest_arrival_ns_.load(std::memory_order_relaxed);
    while (ingest_wall_ns < oldest && !oldest_arrival_ns_.compare_exchange_weak(
                                          oldest, ingest_wall_ns, std::memory_order_relaxed)) {
    }
  }
  bool durable() const { return durable_; }

  const std::string& name() const { return name_; }
  Sink& sink() { return *sink_; }

  // Memory mode, processing thread: queues `event`, waiting while the queue is full unless
  // `deadline` passes (then it queues anyway: shutdown must not deadlock).
  void Push(Event&& event, std::chrono::steady_clock::time_point deadline =
                               std::chrono::steady_clock::time_point::max());
  // Any thread: from now on Push() waits no later than `deadline`, and no batch lingers
  // (shutdown).
  void SetShutdownDeadline(std::chrono::steady_clock::time_point deadline);
  // Memory mode, any thread: queues `event` without waiting (side outputs raised on the event
  // loop).
  void PushNoWait(Event&& event);

  // Waits until nothing is queued or outstanding, or `deadline`. Returns true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Events queued or outstanding.
  size_t Pending() const;
  // Event loop (or after it stopped): stops the sink; waiting retries end, and outstanding
  // jobs complete as shut down.
  void Stop();

  // A reload replaces this sink (core/pipeline.h). Any thread: no new job starts from now on;
  // then waits until the open jobs have ended, or `deadline`. True when none is open.
  bool Drain(std::chrono::steady_clock::time_point deadline);
  // Event loop: Stop(), then lets go of the durable cursor (its position saved) for the
  // runner that replaces this one. The runner stays alive, stopped, while late outcomes of its
  // attempts come back.
  void Retire();

  // governor::BatchHolder, event loop only.
  void ListBatches(std::vector<governor::BufferState>* out) override;
  uint64_t Evict(uint64_t id) override;
  void OnRoom() override { ScheduleKick(); }

 private:
  using Job = delivery::Job;
  using Part = delivery::Part;

  void ScheduleKick();
  void Kick();  // event loop only
  int Limit() const { return controller_.limit(); }
  // Events per job: the policy's batch_size, at most what the sink takes at once.
  size_t BatchEvents() const;
  // Kick() again after `after` (once armed, the earlier kick stands).
  void KickAfter(std::chrono::milliseconds after);
  // batch_linger: true when a batch smaller than batch_size waits for more (a timer kicks the
  // runner again when it may leave). REQUIRES: mu_ held.
  bool Lingering(size_t max_events);
  // Reports to the linger since when events wait. REQUIRES: mu_ held.
  void NoteWaiting();

  // Event loop only, from here on (sink_runner_attempts.cc).
  void StartAttempt(Part* p);
  void AttemptDone(Part* p, uint64_t attempt_id, AttemptOutcome outcome);
  void RecordLatency(const Part* p, const AttemptOutcome& outcome);
  void RetryLater(Part* p, const std::string& reason, std::chrono::milliseconds retry_after);
  void Split(Part* p, const std::string& reason);
  void RejectPart(Part* p, const std::string& reason);
  // The part is finished (its events delivered, rejected or given up); the job completes when
  // its last part does.
  void EndPart(Part* p);
  void FinishJob(Job* job, bool evicted);
  // The one outcome of a job that was not evicted: refusals to `rejected`, the counters.
  void ReportOutcome(const Job& job);
  void ArmWatchdog();
  void Watchdog();

  const std::string name_;
  std::unique_ptr<Sink> sink_;
  const DeliveryPolicy policy_;
  EventLoop& loop_;
  ComponentStats& stats_;
  RejectFn on_reject_;
  Routing routing_;
  observe::TapHub* taps_ = nullptr;
  observe::Tracer* tracer_ = nullptr;
  const bool durable_;
  governor::MemoryBudget* const budget_;  // durable mode only
  const delivery::RetrySchedule retry_schedule_{policy_};
  std::unique_ptr<delivery::BatchSource> source_;
  delivery::MemoryBatchSource* const memory_;  // source_, in memory mode
  util::LoopSignal kick_signal_;  // runs Kick() on the loop; coalesced, allocation-free

  mutable std::mutex mu_;  // source_, pool_, the open jobs, outstanding_events_, the flags
  std::condition_variable idle_cv_;
  size_t outstanding_events_ = 0;
  delivery::BatchPool pool_;
  delivery::JobTable jobs_;
  delivery::Linger linger_;
  bool shutting_down_ = false;  // a shutdown deadline is set
  bool draining_ = false;       // Drain(): no new job
  bool stopped_ = false;

  // Event loop only.
  std::vector<Part*> sending_parts_;  // attempts in progress (watched for the timeout)
  uint64_t next_attempt_id_ = 1;
  bool kicking_ = false;
  governor::ConcurrencyController controller_;
  observe::Gauge& limit_gauge_;
  observe::Gauge& in_flight_gauge_;
  observe::FloatGauge& p99_gauge_;
  boost::asio::steady_timer watchdog_;
  bool watchdog_armed_ = false;
  util::SharedSlot watchdog_slot_ = util::MakeSlot();
  // The oldest ingest time (Unix ns) NoteArrival reported since the runner last looked.
  std::atomic<int64_t> oldest_arrival_ns_{INT64_MAX};
  boost::asio::steady_timer linger_timer_;
  bool linger_armed_ = false;
  util::SharedSlot linger_slot_ = util::MakeSlot();
  // Kicks again when the source could not read what waits (BatchSource::TakeAgainAfter).
  boost::asio::steady_timer take_timer_;
  bool take_armed_ = false;
  util::SharedSlot take_slot_ = util::MakeSlot();
  bool failing_ = false;
  util::LogLimiter limiter_;
  std::mt19937 rng_{util::RandomSeed()};
};

}  // namespace seedance
