// SinkRunner: everything between the queue and a sink's one attempt — the same delivery
// policy for every sink (DESIGN.md section 3).
//
// Two modes. Memory: the processing thread pushes events into a bounded queue (blocking while
// it is full: that is how backpressure reaches the sources). Durable: the runner reads its
// events from the durable queue through its SinkCursor, and marks ranges finished as batches
// complete. Either way, on the event loop, the runner forms batches ("jobs") of up to
// `batch_size` events from whatever is queued (no lingering: latency stays low and batches
// grow by themselves under load) and keeps up to the concurrency limit of them outstanding.
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
// Memory budget (durable mode, `limits.memory`): the runner charges the jobs it holds and
// takes a new one only while the budget has room for it (or nothing is outstanding). It is a
// BatchHolder: the governor may evict a job none of whose attempts is in progress (all wait
// for a retry); its range goes back to the cursor and the runner then keeps a single job out
// (the probe) until a delivery succeeds — the evicted ranges are read again once the sink is
// ready for them.
// Thread-safe as stated per method. sink_runner_attempts.cc holds the attempts and outcomes,
// sink_runner.cc the rest.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "core/delivery/retry_schedule.h"
#include "governor/concurrency_controller.h"
#include "governor/memory_budget.h"
#include "observe/component_stats.h"
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
  struct Routing {
    // MQTT-style filters (+, #) an event's topic must match (`topics:`); empty: any topic.
    std::vector<std::string> topics;
    // With named outputs in the pipeline: the outputs the sink consumes, by name (main, a side
    // output, a named one); an event is on the output its `output` header names (none: main).
    bool by_output = false;
    std::vector<std::string> outputs;
  };
  void SetRouting(Routing routing) { routing_ = std::move(routing); }
  // True when this sink takes `event` (see Routing).
  bool Wants(const Event& event) const;

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

  // Waits until nothing is queued or outstanding, or `deadline`. Returns true when idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Events queued or outstanding.
  size_t Pending() const;
  // Event loop (or after it stopped): stops the sink; waiting retries end, and outstanding
  // jobs complete as shut down.
  void Stop();

  // governor::BatchHolder, event loop only.
  void ListBatches(std::vector<governor::BufferState>* out) override;
  uint64_t Evict(uint64_t id) override;
  void OnRoom() override { ScheduleKick(); }

 private:
  // A batch taken from the queue, until its one outcome.
  struct Job {
    uint64_t id = 0;
    std::shared_ptr<Batch> batch;
    std::chrono::steady_clock::time_point started;
    uint64_t first = 0, last = 0;  // durable queue range
    uint64_t bytes = 0;            // charged to the budget
    uint64_t handed_step = 0;      // the budget's step when the job was taken
    int parts = 0;                 // parts not finished yet
    int sending = 0;               // of those, attempts in progress
    bool shut_down = false;        // a part ended by shutdown: not delivered
    std::vector<RejectedEvent> rejected;
  };
  // A slice of a job's events on its way: attempted, retried, split. Pooled, never freed
  // while the runner lives (a cancelled timer's handler may still be queued: `generation`
  // tells it its part moved on).
  struct Part {
    Part(boost::asio::io_context& io, SinkRunner* r) : runner(r), timer(io) {}
    SinkRunner* const runner;
    Job* job = nullptr;
    size_t begin = 0, end = 0;     // of job->batch->events
    std::shared_ptr<Batch> slice;  // the events of a split part; nullptr: the whole job
    uint64_t attempt_id = 0;       // of the attempt in progress
    delivery::RetrySchedule::State retries;
    bool sending = false;
    bool timed_out = false;
    std::chrono::steady_clock::time_point sent, deadline;
    int in_flight_at_send = 0;
    uint64_t generation = 0;
    boost::asio::steady_timer timer;  // retry backoff
    util::SharedSlot slot = util::MakeSlot();
  };

  void ScheduleKick();
  void Kick();  // event loop only
  // Whether the budget lets the runner take another job. REQUIRES: mu_ held.
  bool BudgetAllowsMore() const;
  int Limit() const { return controller_.limit(); }
  // Events per job: the policy's batch_size, at most what the sink takes at once.
  size_t BatchEvents() const;

  // Event loop only, from here on.
  Part* TakePart(Job* job, size_t begin, size_t end);
  void StartAttempt(Part* p);
  void AttemptDone(Part* p, uint64_t attempt_id, AttemptOutcome outcome);
  void RetryLater(Part* p, const std::string& reason, std::chrono::milliseconds retry_after);
  void Split(Part* p, const std::string& reason);
  void RejectPart(Part* p, const std::string& reason);
  // The part is finished (its events delivered, rejected or given up); the job completes when
  // its last part does.
  void EndPart(Part* p);
  void FinishJob(Job* job, bool evicted);
  void ArmWatchdog();
  void Watchdog();
  // batch_linger: true when a batch smaller than batch_size should wait for more (a timer
  // kicks the runner again when its oldest event has waited the linger). REQUIRES: mu_ held.
  bool Lingering(size_t max_events);
  // batch_linger counts from when events started waiting — their arrival (NoteArrival), else
  // when the runner first saw them — also behind a full concurrency limit: a batch that waited
  // for a free slot longer than the linger leaves at once. REQUIRES: mu_ held.
  void NoteWaiting();
  const Batch& EventsOf(const Part* p) const { return p->slice ? *p->slice : *p->job->batch; }

  // A batch from the pool (one nobody else holds any more), or a new one. REQUIRES: mu_ held.
  std::shared_ptr<Batch> TakeBatch();
  // Resizes a pooled batch's `events` to `n` (under mu_).
  void Shrink(std::vector<Event>& events, size_t n);
  // Free pooled batches keep their events' storage for reuse, but only a few, of at most 16
  // events each, without large payloads: the pool must not hold memory nobody counts.
  // REQUIRES: mu_ held.
  void TrimPool();
  // Frees pooled batches no one uses whose events hold large payloads, at once. REQUIRES: mu_
  // held.
  void ReleaseLargeBatches();

  const std::string name_;
  std::unique_ptr<Sink> sink_;
  const DeliveryPolicy policy_;
  const size_t capacity_;
  EventLoop& loop_;
  ComponentStats& stats_;
  RejectFn on_reject_;
  std::unique_ptr<storage::SinkCursor> cursor_;
  governor::MemoryBudget* const budget_;
  util::LoopSignal kick_signal_;  // runs Kick() on the loop; coalesced, allocation-free

  mutable std::mutex mu_;
  std::condition_variable space_cv_;
  std::condition_variable idle_cv_;
  std::deque<Event> queue_;
  Routing routing_;
  size_t outstanding_events_ = 0;
  std::vector<std::unique_ptr<Job>> jobs_;  // outstanding (a handful: searched)
  std::vector<std::unique_ptr<Job>> free_jobs_;
  // Batches are reused once the sink and the runner have let go of them (use_count 1): the
  // pool holds the shared_ptr, so neither the Batch, its control block nor its vector of
  // events is allocated again in steady state.
  std::vector<std::shared_ptr<Batch>> batch_pool_;
  observe::Counter& pool_hits_;
  observe::Counter& pool_misses_;
  uint64_t next_job_id_ = 1;
  uint64_t event_bytes_estimate_ = 0;  // bytes per event of the last batch (admission)
  bool probing_ = false;  // a job was evicted and nothing delivered since: one outstanding
  std::chrono::steady_clock::time_point shutdown_deadline_ =
      std::chrono::steady_clock::time_point::max();
  bool stopped_ = false;

  // Event loop only.
  std::vector<std::unique_ptr<Part>> parts_;  // every part ever made
  std::vector<Part*> free_parts_;
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
  // batch_linger: since when events wait that did not fill a batch (none: nothing waits).
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;
  // The oldest ingest time (Unix ns) NoteArrival reported since the runner last looked.
  std::atomic<int64_t> oldest_arrival_ns_{INT64_MAX};
  boost::asio::steady_timer linger_timer_;
  bool linger_armed_ = false;
  util::SharedSlot linger_slot_ = util::MakeSlot();
  bool failing_ = false;
  util::LogLimiter limiter_;
  std::mt19937 rng_{util::RandomSeed()};
  const delivery::RetrySchedule retry_schedule_{policy_};
};

}  // namespace seedance
