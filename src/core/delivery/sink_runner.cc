#include "core/delivery/sink_runner.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/clock.h"
#include "util/loop_signal.h"
#include "util/topic_filter.h"

namespace seedance {

namespace {
using boost::system::error_code;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
}  // namespace

SinkRunner::SinkRunner(std::string name, std::unique_ptr<Sink> sink, DeliveryPolicy policy,
                       size_t capacity, EventLoop& loop, ComponentStats& stats, RejectFn on_reject,
                       std::unique_ptr<storage::SinkCursor> cursor, governor::MemoryBudget* budget)
    : name_(std::move(name)),
      sink_(std::move(sink)),
      policy_(std::move(policy)),
      capacity_(capacity),
      loop_(loop),
      stats_(stats),
      on_reject_(std::move(on_reject)),
      cursor_(std::move(cursor)),
      budget_(cursor_ ? budget : nullptr),
      kick_signal_(loop_.io(), [this] { Kick(); }),
      pool_hits_(stats_.registry().GetCounter("seedance_pool_hits_total",
                                              "Objects taken from a pool instead of allocated.",
                                              {{"pool", "batch"}, {"component", name_}})),
      pool_misses_(stats_.registry().GetCounter(
          "seedance_pool_misses_total", "Objects allocated because their pool had none free.",
          {{"pool", "batch"}, {"component", name_}})),
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
      linger_timer_(loop_.io()) {
  limit_gauge_.Set(controller_.limit());
}

SinkRunner::~SinkRunner() = default;

bool SinkRunner::Wants(const Event& event) const {
  if (routing_.by_output) {
    const std::string* header = event.FindHeader(kOutputHeader);
    const std::string_view output = header ? std::string_view(*header) : OutputName(Output::kMain);
    const auto& outputs = routing_.outputs;
    if (std::find(outputs.begin(), outputs.end(), output) == outputs.end()) return false;
  }
  if (routing_.topics.empty()) return true;
  for (const std::string& f : routing_.topics) {
    if (util::TopicMatches(f, event.topic)) return true;
  }
  return false;
}

std::shared_ptr<Batch> SinkRunner::TakeBatch() {
  for (const auto& b : batch_pool_) {
    if (b.use_count() == 1) {  // only the pool holds it: the sink is done with it
      pool_hits_.Add();
      return b;
    }
  }
  pool_misses_.Add();
  return batch_pool_.emplace_back(std::make_shared<Batch>());
}

namespace {
// Whether a pooled batch's events hold more payload storage than a pool may keep: one large
// event must not stay held (the pool's memory is not counted by the budget).
bool HoldsLargePayloads(const Batch& b) {
  constexpr size_t kMaxHeld = 16 * governor::MemoryBudget::kPooledBufferBytes;
  size_t held = 0;
  for (const Event& e : b.events) held += e.payload.capacity();
  return held > kMaxHeld;
}
}  // namespace

void SinkRunner::TrimPool() {
  // Up to 4 batches keep the storage of up to 16 events each (a larger batch keeps its first
  // 16): what the pool holds is not counted by the memory budget.
  constexpr int kKeepBatches = 4;
  constexpr size_t kKeepEvents = 16;
  int kept = 0;
  for (const auto& b : batch_pool_) {
    if (b.use_count() != 1 || b->events.capacity() == 0) continue;
    if (kept < kKeepBatches && !HoldsLargePayloads(*b)) {
      ++kept;
      if (b->events.size() > kKeepEvents) Shrink(b->events, kKeepEvents);
      if (b->events.capacity() > 2 * kKeepEvents) b->events.shrink_to_fit();
      continue;
    }
    Shrink(b->events, 0);
    b->events.shrink_to_fit();
  }
}

void SinkRunner::Shrink(std::vector<Event>& events, size_t n) {
  if (cursor_) {
    cursor_->Truncate(&events, n);  // what the batch lets go is kept for the next long read
  } else {
    events.resize(n);
  }
}

void SinkRunner::ReleaseLargeBatches() {
  for (const auto& b : batch_pool_) {
    if (b.use_count() == 1 && HoldsLargePayloads(*b)) {
      b->events.clear();
      b->events.shrink_to_fit();
    }
  }
}

void SinkRunner::Push(Event&& event, steady_clock::time_point deadline) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // The shutdown deadline may be set while we wait: look at it on every wake-up.
    if (queue_.size() >= capacity_) util::WakeBatcher::FlushCurrent();  // kicks made so far
    while (queue_.size() >= capacity_ && !stopped_) {
      auto until = std::min(deadline, shutdown_deadline_);
      if (steady_clock::now() >= until) break;
      space_cv_.wait_until(lock, until);
    }
    queue_.push_back(std::move(event));
    stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
  }
  stats_.events_in.Add();
  ScheduleKick();
}

void SinkRunner::SetShutdownDeadline(steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_deadline_ = deadline;
  }
  space_cv_.notify_all();
}

void SinkRunner::PushNoWait(Event&& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(event));
    stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
  }
  stats_.events_in.Add();
  ScheduleKick();
}

void SinkRunner::ScheduleKick() { kick_signal_.Notify(); }

size_t SinkRunner::BatchEvents() const {
  return std::max<size_t>(1, std::min(policy_.batch_events, sink_->MaxBatchEvents()));
}

bool SinkRunner::BudgetAllowsMore() const {
  if (budget_ == nullptr || jobs_.empty()) return true;  // always make progress
  if (probing_) return false;
  return budget_->HasRoom(
      governor::MemoryBudget::BatchAdmissionBytes(BatchEvents(), event_bytes_estimate_));
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
    Job* job = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      if (!cursor_ && queue_.empty()) return;
      if (cursor_ && cursor_->Backlog() == 0) {  // nothing to read: no batch taken, no read
        stats_.queue_depth.Set(0);
        return;
      }
      NoteWaiting();
      if (static_cast<int>(jobs_.size()) >= Limit() || !BudgetAllowsMore()) return;
      if (Lingering(max_events)) return;
      std::shared_ptr<Batch> batch = TakeBatch();
      uint64_t first = 0, last = 0, bytes = 0;
      if (cursor_) {
        const size_t returned_before = cursor_->returned();
        if (!cursor_->Read(max_events, &batch->events, &first, &last)) {
          stats_.queue_depth.Set(0);
          return;
        }
        const bool read_again = cursor_->returned() < returned_before;
        stats_.queue_depth.Set(static_cast<int64_t>(cursor_->Backlog()));
        if (routing_.by_output || !routing_.topics.empty()) {  // a record serves every sink
          std::erase_if(batch->events, [this](const Event& e) { return !Wants(e); });
        }
        if (batch->events.empty()) {  // only records for other outputs
          cursor_->Done(first, last);
          continue;
        }
        if (!read_again) stats_.events_in.Add(batch->events.size());
        if (budget_) {
          uint64_t event_bytes = 0;
          for (const Event& e : batch->events) event_bytes += e.MemoryBytes();
          event_bytes_estimate_ = event_bytes / batch->events.size();
          bytes = governor::MemoryBudget::BatchChargeBytes(event_bytes);
          budget_->Charge(bytes);
          if (read_again) budget_->CountRestored(bytes);
        }
      } else {
        size_t n = std::min(max_events, queue_.size());
        batch->events.clear();
        batch->events.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          batch->events.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
      }
      outstanding_events_ += batch->events.size();
      std::unique_ptr<Job> owned;
      if (free_jobs_.empty()) {
        owned = std::make_unique<Job>();
      } else {
        owned = std::move(free_jobs_.back());
        free_jobs_.pop_back();
      }
      job = owned.get();
      job->id = next_job_id_++;
      job->batch = std::move(batch);
      job->started = steady_clock::now();
      job->first = first;
      job->last = last;
      job->bytes = bytes;
      job->handed_step = budget_ ? budget_->step() : 0;
      job->parts = 1;
      job->sending = 0;
      job->shut_down = false;
      job->rejected.clear();
      jobs_.push_back(std::move(owned));
    }
    space_cv_.notify_all();
    StartAttempt(TakePart(job, 0, job->batch->events.size()));
  }
}

void SinkRunner::NoteWaiting() {
  if (policy_.linger.count() == 0) return;
  if ((cursor_ ? cursor_->Backlog() : queue_.size()) == 0) return;
  const auto now = steady_clock::now();
  auto since = now;
  const int64_t arrival = oldest_arrival_ns_.exchange(INT64_MAX, std::memory_order_relaxed);
  if (arrival != INT64_MAX) {
    const int64_t waited = std::max<int64_t>(0, util::WallNowNs() - arrival);
    since = now - std::min<steady_clock::duration>(std::chrono::nanoseconds(waited),
                                                   now.time_since_epoch());
  }
  if (!waiting_since_ || since < *waiting_since_) waiting_since_ = since;
}

bool SinkRunner::Lingering(size_t max_events) {
  if (policy_.linger.count() == 0) return false;
  const size_t waiting = cursor_ ? cursor_->Backlog() : queue_.size();
  // Full batches, ranges read again and shutdown do not wait.
  if (waiting == 0 || waiting >= max_events || (cursor_ && cursor_->returned() > 0) ||
      shutdown_deadline_ != steady_clock::time_point::max()) {
    waiting_since_.reset();
    return false;
  }
  const auto now = steady_clock::now();
  if (!waiting_since_) waiting_since_ = now;
  const auto leave_at = *waiting_since_ + policy_.linger;
  if (now >= leave_at) {
    waiting_since_.reset();
    return false;
  }
  if (!linger_armed_) {
    linger_armed_ = true;
    linger_timer_.expires_at(leave_at);
    auto on_time = [this](error_code ec) {
      linger_armed_ = false;
      if (!ec && !stopped_) Kick();
    };
    linger_timer_.async_wait(
        util::SlotHandler<decltype(on_time)>{linger_slot_, std::move(on_time)});
  }
  return true;
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
  for (const auto& job : jobs_) {
    if (job->bytes == 0) continue;
    out->push_back(governor::BufferState{.id = job->id,
                                         .size = job->bytes,
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
    if (stopped_ || !cursor_) return 0;
    for (const auto& j : jobs_) {
      if (j->id == id) job = j.get();
    }
  }
  // Only a job all of whose parts wait for a retry: one being sent is in use.
  if (job == nullptr || job->sending > 0) return 0;
  const uint64_t bytes = job->bytes;
  for (const auto& p : parts_) {
    if (p->job != job) continue;
    ++p->generation;  // its timer's handler finds it moved on
    p->timer.cancel();
    p->slice.reset();
    p->job = nullptr;
    free_parts_.push_back(p.get());
  }
  FinishJob(job, /*evicted=*/true);
  return bytes;
}

bool SinkRunner::WaitIdle(steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [this] {
    return queue_.empty() && jobs_.empty() && (!cursor_ || cursor_->Backlog() == 0);
  };
  while (!idle()) {
    if (steady_clock::now() >= deadline) return false;
    // The durable backlog changes without a notification; look again every 10 ms.
    idle_cv_.wait_for(lock, milliseconds(10));
  }
  return true;
}

size_t SinkRunner::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + outstanding_events_ + (cursor_ ? cursor_->Backlog() : 0);
}

void SinkRunner::Stop() {
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    dropped = queue_.size();
    queue_.clear();
  }
  if (dropped > 0) {
    stats_.Dropped("shutdown", dropped);
    SEEDANCE_LOG_WARN(name_, "shutdown: {} queued events were not delivered", dropped);
  }
  space_cv_.notify_all();
  idle_cv_.notify_all();
  watchdog_.cancel();
  linger_timer_.cancel();
  // Waiting retries end now; attempts in progress end when the stopped sink completes them.
  std::vector<Part*> waiting;
  for (const auto& p : parts_) {
    if (p->job != nullptr && !p->sending) waiting.push_back(p.get());
  }
  for (Part* p : waiting) {
    p->job->shut_down = true;
    EndPart(p);
  }
  sink_->Stop();
  if (cursor_) cursor_->Save();
}

}  // namespace seedance
