#include "core/delivery/sink_runner.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/delivery/durable_batch_source.h"
#include "util/clock.h"
#include "util/loop_signal.h"

namespace seedance {

namespace {
using boost::system::error_code;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

observe::Counter& PoolCounter(ComponentStats& stats, const std::string& name, bool hit) {
  return hit ? stats.registry().GetCounter("seedance_pool_hits_total",
                                           "Objects taken from a pool instead of allocated.",
                                           {{"pool", "batch"}, {"component", name}})
             : stats.registry().GetCounter("seedance_pool_misses_total",
                                           "Objects allocated because their pool had none free.",
                                           {{"pool", "batch"}, {"component", name}});
}

std::unique_ptr<delivery::BatchSource> MakeSource(std::unique_ptr<storage::SinkCursor> cursor,
                                                  const delivery::Routing& routing,
                                                  governor::MemoryBudget* budget, size_t capacity,
                                                  ComponentStats& stats) {
  if (cursor) {
    return std::make_unique<delivery::DurableBatchSource>(std::move(cursor), routing, budget,
                                                          stats);
  }
  return std::make_unique<delivery::MemoryBatchSource>(capacity, stats);
}
}  // namespace

SinkRunner::SinkRunner(std::string name, std::unique_ptr<Sink> sink, DeliveryPolicy policy,
                       size_t capacity, EventLoop& loop, ComponentStats& stats, RejectFn on_reject,
                       std::unique_ptr<storage::SinkCursor> cursor, governor::MemoryBudget* budget)
    : name_(std::move(name)),
      sink_(std::move(sink)),
      policy_(std::move(policy)),
      loop_(loop),
      stats_(stats),
      on_reject_(std::move(on_reject)),
      durable_(cursor != nullptr),
      budget_(durable_ ? budget : nullptr),
      source_(MakeSource(std::move(cursor), routing_, budget_, capacity, stats_)),
      memory_(durable_ ? nullptr : static_cast<delivery::MemoryBatchSource*>(source_.get())),
      kick_signal_(loop_.io(), [this] { Kick(); }),
      pool_(*source_, PoolCounter(stats_, name_, true), PoolCounter(stats_, name_, false)),
      jobs_(loop_.io(), this, retry_schedule_.First()),
      linger_(policy_.linger),
      controller_(policy_.concurrency),
      limit_gauge_(stats_.registry().GetGauge("seedance_sink_concurrency_limit",
                                              "Attempts the sink may have outstanding.",
                                              {{"component", name_}})),
      in_flight_gauge_(stats_.registry().GetGauge(
          "seedance_sink_in_flight", "Attempts the sink has in progress.", {{"component", name_}})),
      p99_gauge_(stats_.registry().GetFloatGauge(
          "seedance_sink_latency_p99_seconds",
          "P99 attempt latency over the controller's window (adaptive concurrency).",
          {{"component", name_}})),
      watchdog_(loop_.io()),
      linger_timer_(loop_.io()),
      take_timer_(loop_.io()) {
  limit_gauge_.Set(controller_.limit());
}

SinkRunner::~SinkRunner() = default;

void SinkRunner::Push(Event&& event, steady_clock::time_point deadline) {
  memory_->Push(std::move(event), deadline);
  ScheduleKick();
}

void SinkRunner::PushNoWait(Event&& event) {
  memory_->PushNoWait(std::move(event));
  ScheduleKick();
}

void SinkRunner::SetShutdownDeadline(steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
  }
  if (memory_) memory_->SetShutdownDeadline(deadline);
}

void SinkRunner::ScheduleKick() { kick_signal_.Notify(); }

size_t SinkRunner::BatchEvents() const {
  return std::max<size_t>(1, std::min(policy_.batch_events, sink_->MaxBatchEvents()));
}

void SinkRunner::Kick() {
  // A sink that completes inside Attempt() finishes jobs from in here: this loop takes the
  // next one, not a recursive Kick() per batch.
  if (kicking_) return;
  kicking_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{kicking_};
  const size_t max_events = BatchEvents();
  while (true) {
    Part* first = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Nothing to take: no batch taken, no read.
      if (stopped_ || draining_ || source_->Waiting() == 0) return;
      NoteWaiting();
      const size_t open = jobs_.jobs().size();
      if (static_cast<int>(open) >= Limit() || !source_->Admits(open, max_events)) return;
      if (Lingering(max_events)) return;
      std::shared_ptr<Batch> batch = pool_.Take();
      delivery::Lease lease;
      if (!source_->Take(max_events, &batch->events, &lease)) {
        if (const auto after = source_->TakeAgainAfter(); after.count() > 0) KickAfter(after);
        return;
      }
      if (taps_ != nullptr && taps_->active()) {
        for (const Event& e : batch->events) taps_->Offer(observe::TapPoint::kSink, name_, e);
      }
      outstanding_events_ += batch->events.size();
      first = jobs_.Open(std::move(batch), lease, budget_ ? budget_->step() : 0);
    }
    StartAttempt(first);
  }
}

void SinkRunner::NoteWaiting() {
  if (!linger_.enabled()) return;
  const auto now = steady_clock::now();
  auto since = now;
  const int64_t arrival = oldest_arrival_ns_.exchange(INT64_MAX, std::memory_order_relaxed);
  if (arrival != INT64_MAX) {
    const int64_t waited = std::max<int64_t>(0, util::WallNowNs() - arrival);
    since = now - std::min<steady_clock::duration>(std::chrono::nanoseconds(waited),
                                                   now.time_since_epoch());
  }
  linger_.NoteWaiting(since);
}

bool SinkRunner::Lingering(size_t max_events) {
  if (!linger_.enabled()) return false;  // the default: no clock read, no backlog count
  const auto leave_at =
      linger_.HoldUntil(source_->Waiting(), max_events, source_->ReadingAgain() || shutting_down_,
                        steady_clock::now());
  if (!leave_at) return false;
  if (!linger_armed_) {
    linger_armed_ = true;
    linger_timer_.expires_at(*leave_at);
    auto on_time = [this](error_code ec) {
      linger_armed_ = false;
      if (!ec && !stopped_) Kick();
    };
    linger_timer_.async_wait(
        util::SlotHandler<decltype(on_time)>{linger_slot_, std::move(on_time)});
  }
  return true;
}

void SinkRunner::KickAfter(std::chrono::milliseconds after) {
  if (take_armed_ || stopped_) return;
  take_armed_ = true;
  take_timer_.expires_after(after);
  auto on_time = [this](error_code ec) {
    take_armed_ = false;
    if (!ec && !stopped_) Kick();
  };
  take_timer_.async_wait(util::SlotHandler<decltype(on_time)>{take_slot_, std::move(on_time)});
}

void SinkRunner::ArmWatchdog() {
  if (watchdog_armed_ || stopped_ || sending_parts_.empty()) return;
  watchdog_armed_ = true;
  // A tenth of the timeout, at least 10 ms: an attempt times out at most 10% late.
  watchdog_.expires_after(std::max(milliseconds(10), policy_.timeout / 10));
  auto on_tick = [this](error_code ec) {
    watchdog_armed_ = false;
    if (ec || stopped_) return;
    Watchdog();
  };
  watchdog_.async_wait(util::SlotHandler<decltype(on_tick)>{watchdog_slot_, std::move(on_tick)});
}

void SinkRunner::Watchdog() {
  const auto now = steady_clock::now();
  // Abort() may complete attempts (and start others) on the spot: collect first.
  std::vector<uint64_t> late;
  for (Part* p : sending_parts_) {
    if (!p->timed_out && now >= p->deadline) {
      p->timed_out = true;
      late.push_back(p->attempt_id);
    }
  }
  for (uint64_t id : late) sink_->Abort(id);
  ArmWatchdog();
}

void SinkRunner::ListBatches(std::vector<governor::BufferState>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& job : jobs_.jobs()) {
    if (job->lease.bytes == 0) continue;
    out->push_back(governor::BufferState{.id = job->id,
                                         .size = job->lease.bytes,
                                         .on_fast_tier = true,
                                         .in_use = job->sending > 0,
                                         .last_used_step = job->handed_step,
                                         .uses = 0});
  }
}

uint64_t SinkRunner::Evict(uint64_t id) {
  Job* job = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || !source_->Evictable()) return 0;
    job = jobs_.Find(id);
  }
  // Only a job all of whose parts wait for a retry: one being sent is in use.
  if (job == nullptr || job->sending > 0) return 0;
  const uint64_t bytes = job->lease.bytes;
  jobs_.DropParts(job);
  FinishJob(job, /*evicted=*/true);
  return bytes;
}

bool SinkRunner::WaitIdle(steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [this] { return jobs_.jobs().empty() && source_->Waiting() == 0; };
  while (!idle()) {
    if (steady_clock::now() >= deadline) return false;
    // The durable backlog changes without a notification; look again every 10 ms.
    idle_cv_.wait_for(lock, milliseconds(10));
  }
  return true;
}

bool SinkRunner::Drain(steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  draining_ = true;
  while (!jobs_.jobs().empty()) {
    if (steady_clock::now() >= deadline) return false;
    idle_cv_.wait_for(lock, milliseconds(10));
  }
  return true;
}

void SinkRunner::Retire() {
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  source_->Detach();
}

size_t SinkRunner::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_events_ + source_->Waiting();
}

void SinkRunner::Stop() {
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    if (memory_) dropped = memory_->Stop();  // wakes a Push waiting for room
  }
  if (dropped > 0) {
    stats_.Dropped("shutdown", dropped);
    SEEDANCE_LOG_WARN(name_, "shutdown: {} queued events were not delivered", dropped);
  }
  idle_cv_.notify_all();
  watchdog_.cancel();
  linger_timer_.cancel();
  take_timer_.cancel();
  // Waiting retries end now; attempts in progress end when the stopped sink completes them.
  for (Part* p : jobs_.WaitingParts()) {
    p->job->shut_down = true;
    EndPart(p);
  }
  sink_->Stop();
  if (durable_) {
    std::lock_guard<std::mutex> lock(mu_);
    source_->Stop();  // saves the position, with what the stopped sink finished
  }
}

}  // namespace seedance
