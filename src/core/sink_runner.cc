#include "core/sink_runner.h"

#include <algorithm>

#include "util/log.h"

namespace seedance {

SinkRunner::SinkRunner(std::string name, std::unique_ptr<Sink> sink, size_t capacity,
                       EventLoop& loop, ComponentStats& stats, RejectFn on_reject,
                       std::unique_ptr<SinkCursor> cursor, governor::MemoryBudget* budget)
    : name_(std::move(name)),
      sink_(std::move(sink)),
      capacity_(capacity),
      loop_(loop),
      stats_(stats),
      on_reject_(std::move(on_reject)),
      cursor_(std::move(cursor)),
      budget_(cursor_ ? budget : nullptr),
      kick_signal_(loop_.io(), [this] { Kick(); }),
      pool_hits_(stats_.registry().GetCounter(
          "seedance_pool_hits_total", "Objects taken from a pool instead of allocated.",
          {{"pool", "batch"}, {"component", name_}})),
      pool_misses_(stats_.registry().GetCounter(
          "seedance_pool_misses_total", "Objects allocated because their pool had none free.",
          {{"pool", "batch"}, {"component", name_}})) {}

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

void SinkRunner::TrimPool() {
  constexpr int kKeepBatches = 4;
  constexpr size_t kKeepEvents = 16;
  int kept = 0;
  for (const auto& b : batch_pool_) {
    if (b.use_count() != 1 || b->events.capacity() == 0) continue;
    if (kept < kKeepBatches && b->events.size() <= kKeepEvents) {
      ++kept;
      continue;
    }
    b->events.clear();
    b->events.shrink_to_fit();
  }
}

std::vector<SinkRunner::InFlight>::iterator SinkRunner::FindInFlight(uint64_t id) {
  return std::find_if(in_flight_.begin(), in_flight_.end(),
                      [id](const InFlight& f) { return f.id == id; });
}

void SinkRunner::Push(Event&& event, std::chrono::steady_clock::time_point deadline) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // The shutdown deadline may be set while we wait: look at it on every wake-up.
    while (queue_.size() >= capacity_ && !stopped_) {
      auto until = std::min(deadline, shutdown_deadline_);
      if (std::chrono::steady_clock::now() >= until) break;
      space_cv_.wait_until(lock, until);
    }
    queue_.push_back(std::move(event));
    stats_.queue_depth.Set(static_cast<int64_t>(queue_.size()));
  }
  stats_.events_in.Add();
  ScheduleKick();
}

void SinkRunner::SetShutdownDeadline(std::chrono::steady_clock::time_point deadline) {
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

bool SinkRunner::BudgetAllowsMore() const {
  if (budget_ == nullptr || in_flight_.empty()) return true;  // always make progress
  if (probing_) return false;
  // Room for a full batch and the request body a sink builds from it.
  const size_t max_events = std::max<size_t>(1, sink_->MaxBatchEvents());
  return budget_->HasRoom(2 * max_events * event_bytes_estimate_);
}

void SinkRunner::Kick() {
  const size_t max_events = std::max<size_t>(1, sink_->MaxBatchEvents());
  const int max_in_flight = std::max(1, sink_->MaxInFlight());
  while (true) {
    std::shared_ptr<Batch> batch;
    uint64_t first = 0, last = 0;
    uint64_t id = 0, bytes = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_ || static_cast<int>(in_flight_.size()) >= max_in_flight || !BudgetAllowsMore()) return;
      if (!cursor_ && queue_.empty()) return;
      batch = TakeBatch();
      if (cursor_) {
        const size_t returned_before = cursor_->returned();
        if (!cursor_->Read(max_events, &batch->events, &first, &last)) {
          stats_.queue_depth.Set(0);
          return;
        }
        const bool read_again = cursor_->returned() < returned_before;
        stats_.queue_depth.Set(static_cast<int64_t>(cursor_->Backlog()));
        if (batch->events.empty()) {  // only records for other outputs
          cursor_->Done(first, last);
          continue;
        }
        if (!read_again) stats_.events_in.Add(batch->events.size());
        if (budget_) {
          for (const Event& e : batch->events) bytes += e.MemoryBytes();
          budget_->Charge(bytes);
          if (read_again) budget_->CountRestored(bytes);
          event_bytes_estimate_ = bytes / batch->events.size();
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
      in_flight_events_ += batch->events.size();
      id = next_id_++;
      in_flight_.push_back(InFlight{.id = id,
                                    .batch = batch,
                                    .started = std::chrono::steady_clock::now(),
                                    .first = first,
                                    .last = last,
                                    .bytes = bytes,
                                    .handed_step = budget_ ? budget_->step() : 0});
    }
    space_cv_.notify_all();
    // Two words: the callback fits in std::function without an allocation.
    sink_->Deliver(std::move(batch),
                   [this, id](DeliveryOutcome outcome) { Finish(id, std::move(outcome)); });
  }
}

void SinkRunner::Finish(uint64_t id, DeliveryOutcome outcome) {
  const Status& status = outcome.status;
  InFlight f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f = *FindInFlight(id);  // stays in flight (for WaitIdle) until the outcome is recorded
  }
  const auto started = f.started;
  const Batch& batch = *f.batch;
  const size_t n = batch.events.size();
  const bool evicted = f.evicting && status.code() == StatusCode::kResourceExhausted;
  if (!evicted) {
    stats_.BatchLatency().Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  if (evicted) {
    // Back to the durable queue (it never left): read again when the sink is ready.
  } else if (status.ok()) {
    std::vector<bool> refused;
    if (!outcome.rejected.empty()) {
      refused.assign(n, false);
      for (const RejectedEvent& r : outcome.rejected) {
        if (r.index >= n || refused[r.index]) continue;
        refused[r.index] = true;
        Event copy = batch.events[r.index];
        on_reject_(std::move(copy), r.reason);
      }
      const auto n_refused = static_cast<uint64_t>(std::count(refused.begin(), refused.end(), true));
      stats_.errors.Add();
      stats_.Dropped("rejected", n_refused);
    }
    stats_.events_out.Add(n - static_cast<size_t>(std::count(refused.begin(), refused.end(), true)));
    observe::Histogram& latency = stats_.EventLatency();
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    for (size_t i = 0; i < n; ++i) {
      const Event& e = batch.events[i];
      if (!refused.empty() && refused[i]) continue;
      if (e.ingest_time_ns > 0) latency.Observe(static_cast<double>(now_ns - e.ingest_time_ns) / 1e9);
    }
  } else if (status.code() == StatusCode::kCancelled) {
    if (!cursor_) stats_.Dropped("shutdown", n);  // durable: read again after a restart
  } else {
    stats_.errors.Add();
    stats_.Dropped("rejected", n);
    for (const Event& e : batch.events) {
      Event copy = e;
      on_reject_(std::move(copy), status.message());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_events_ -= n;
    auto it = FindInFlight(id);
    *it = std::move(in_flight_.back());
    in_flight_.pop_back();
    if (budget_) budget_->Credit(f.bytes);
    if (evicted) {
      cursor_->Return(f.first, f.last);
      probing_ = true;
    } else if (status.ok()) {
      probing_ = false;
    }
    // A cancelled batch stays unfinished: it is read again after a restart.
    if (cursor_ && !evicted && status.code() != StatusCode::kCancelled) {
      cursor_->Done(f.first, f.last);
    }
    f.batch.reset();
    TrimPool();  // this batch is still held by its sink until the callback returns: next time
  }
  idle_cv_.notify_all();
  Kick();
}

void SinkRunner::ListBatches(std::vector<governor::BufferState>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const InFlight& f : in_flight_) {
    if (f.evicting || f.bytes == 0) continue;
    out->push_back(governor::BufferState{.id = f.id,
                                         .size = f.bytes,
                                         .on_fast_tier = true,
                                         .in_use = false,  // the sink refuses if it is
                                         .last_used_step = f.handed_step,
                                         .uses = 0});
  }
}

uint64_t SinkRunner::Evict(uint64_t id) {
  std::shared_ptr<const Batch> batch;
  uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = FindInFlight(id);
    if (it == in_flight_.end() || it->evicting || stopped_) return 0;
    // Marked first: the sink may complete the delivery from inside Evict().
    it->evicting = true;
    batch = it->batch;
    bytes = it->bytes;
  }
  if (sink_->Evict(*batch)) return bytes;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = FindInFlight(id); it != in_flight_.end()) it->evicting = false;
  return 0;
}

bool SinkRunner::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [this] {
    return queue_.empty() && in_flight_.empty() && (!cursor_ || cursor_->Backlog() == 0);
  };
  while (!idle()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // The durable backlog changes without a notification; look again every 10 ms.
    idle_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return true;
}

size_t SinkRunner::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + in_flight_events_ + (cursor_ ? cursor_->Backlog() : 0);
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
  sink_->Stop();
  if (cursor_) cursor_->Save();
}

}  // namespace seedance
