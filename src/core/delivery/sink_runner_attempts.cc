// SinkRunner (sink_runner.h), one job's way through the sink: its parts' attempts, each
// outcome acted on (done, retry on the RetrySchedule, bisect, rejected), the job finished once
// its last part is. sink_runner.cc has the rest: the queue, batching and linger, the pool, the
// budget, the watchdog, eviction and shutdown.
#include <fmt/format.h>

#include <algorithm>

#include "core/delivery/sink_runner.h"  // IWYU pragma: associated

namespace seedance {

namespace {
using boost::system::error_code;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

SinkRunner::Part* SinkRunner::TakePart(Job* job, size_t begin, size_t end) {
  Part* p;
  if (free_parts_.empty()) {
    p = parts_.emplace_back(std::make_unique<Part>(loop_.io(), this)).get();
  } else {
    p = free_parts_.back();
    free_parts_.pop_back();
  }
  p->job = job;
  p->begin = begin;
  p->end = end;
  p->slice.reset();
  p->retries = retry_schedule_.First();
  p->sending = false;
  ++p->generation;
  return p;
}

void SinkRunner::StartAttempt(Part* p) {
  p->sending = true;
  p->timed_out = false;
  p->attempt_id = next_attempt_id_++;
  p->sent = steady_clock::now();
  ++p->job->sending;
  sending_parts_.push_back(p);
  p->in_flight_at_send = static_cast<int>(sending_parts_.size());
  in_flight_gauge_.Set(p->in_flight_at_send);
  if (policy_.timeout.count() > 0) {
    p->deadline = p->sent + policy_.timeout;
    ArmWatchdog();
  }
  // Two words: the callback fits in std::function without an allocation.
  const uint64_t attempt_id = p->attempt_id;
  sink_->Attempt(attempt_id, EventsOf(p), [p, attempt_id](AttemptOutcome outcome) {
    p->runner->AttemptDone(p, attempt_id, std::move(outcome));
  });
}

void SinkRunner::AttemptDone(Part* p, uint64_t attempt_id, AttemptOutcome outcome) {
  if (!p->sending || p->attempt_id != attempt_id) return;  // a sink answered twice: ignored
  p->sending = false;
  --p->job->sending;
  sending_parts_.erase(std::find(sending_parts_.begin(), sending_parts_.end(), p));
  in_flight_gauge_.Set(static_cast<int64_t>(sending_parts_.size()));
  const int64_t now_ns = NowNs();
  using Kind = AttemptOutcome::Kind;
  if (p->timed_out && outcome.kind == Kind::kRetry) {
    outcome.reason = fmt::format("no answer within the timeout ({} ms)", policy_.timeout.count());
    outcome.backpressure = true;
  }
  if (outcome.backpressure) controller_.RecordBackpressure();
  // Latencies of deliveries, refusals and backpressure (429, 503, timeouts) only: another
  // transient failure such as a refused connection is fast, and taking that for spare capacity
  // would raise the limit while the remote side is down.
  if (outcome.kind != Kind::kShutdown && (outcome.kind != Kind::kRetry || outcome.backpressure)) {
    controller_.RecordLatency(steady_clock::now() - p->sent, now_ns, p->in_flight_at_send);
  }
  if (controller_.Update(now_ns)) {
    limit_gauge_.Set(controller_.limit());
    p99_gauge_.Set(controller_.p99_seconds());
  }
  if (stopped_ || outcome.kind == Kind::kShutdown) {
    p->job->shut_down = true;
    return EndPart(p);
  }
  switch (outcome.kind) {
    case Kind::kDelivered:
      if (failing_) {
        failing_ = false;
        SEEDANCE_LOG_INFO(name_, "delivery recovered");
      }
      for (RejectedEvent& r : outcome.rejected) {
        if (r.index < p->end - p->begin) {
          p->job->rejected.push_back(RejectedEvent{p->begin + r.index, std::move(r.reason)});
        }
      }
      return EndPart(p);
    case Kind::kRejected:
      return RejectPart(p, outcome.reason);
    case Kind::kTooLarge:
    case Kind::kBisect:
      if (p->end - p->begin <= 1) return RejectPart(p, outcome.reason);
      return Split(p, outcome.reason);
    case Kind::kRetry:
      return RetryLater(p, outcome.reason, outcome.retry_after);
    case Kind::kShutdown:
      break;
  }
}

void SinkRunner::RejectPart(Part* p, const std::string& reason) {
  for (size_t i = p->begin; i < p->end; ++i) p->job->rejected.push_back(RejectedEvent{i, reason});
  EndPart(p);
}

void SinkRunner::Split(Part* p, const std::string& reason) {
  Job* job = p->job;
  const Batch& events = EventsOf(p);
  const size_t n = p->end - p->begin;
  const size_t half = n / 2;
  SEEDANCE_LOG_INFO(name_, "{}: sending the batch of {} events as {} and {}", reason, n, half,
                    n - half);
  Part* halves[2] = {TakePart(job, p->begin, p->begin + half),
                     TakePart(job, p->begin + half, p->end)};
  for (Part* h : halves) {
    h->slice = std::make_shared<Batch>();
    const auto from = static_cast<std::ptrdiff_t>(h->begin - p->begin);
    const auto to = static_cast<std::ptrdiff_t>(h->end - p->begin);
    h->slice->events.assign(events.events.begin() + from, events.events.begin() + to);
  }
  job->parts += 2;
  EndPart(p);  // the job stays: its halves are outstanding
  for (Part* h : halves) StartAttempt(h);
}

void SinkRunner::RetryLater(Part* p, const std::string& reason, milliseconds retry_after) {
  stats_.retries.Add();
  const delivery::RetrySchedule::Decision next =
      retry_schedule_.AfterFailure(p->retries, reason, retry_after, rng_);
  if (next.give_up) {
    stats_.errors.Add();
    return RejectPart(p, next.reason);
  }
  const milliseconds delay = next.delay;
  // The first failure after a success is news; the rest at most once per interval. The
  // limiter sees every failure (the first one starts its interval: it used to be let through
  // once more on the second failure).
  uint64_t suppressed = 0;
  const bool interval_over = limiter_.Allow("retry", &suppressed);
  if (!failing_ || interval_over) {
    failing_ = true;
    SEEDANCE_LOG_WARN(
        name_, "delivery failed: {}; retrying in {} ms{}", reason, delay.count(),
        suppressed ? fmt::format(" ({} similar failures not logged)", suppressed) : "");
  }
  p->timer.expires_after(delay);
  auto on_timer = [this, p, generation = p->generation](error_code) {
    if (p->generation != generation) return;  // evicted or stopped meanwhile
    if (stopped_) {
      p->job->shut_down = true;
      return EndPart(p);
    }
    StartAttempt(p);
  };
  p->timer.async_wait(util::SlotHandler<decltype(on_timer)>{p->slot, std::move(on_timer)});
}

void SinkRunner::EndPart(Part* p) {
  Job* job = p->job;
  ++p->generation;
  p->timer.cancel();
  p->slice.reset();
  p->job = nullptr;
  free_parts_.push_back(p);
  if (--job->parts == 0) FinishJob(job, /*evicted=*/false);
}

void SinkRunner::FinishJob(Job* job, bool evicted) {
  const Batch& batch = *job->batch;
  const size_t n = batch.events.size();
  const bool shut_down = !evicted && job->shut_down;
  if (!evicted) {
    stats_.BatchLatency().Observe(
        std::chrono::duration<double>(steady_clock::now() - job->started).count());
  }
  if (evicted) {
    // Back to the durable queue (it never left): read again when the sink is ready.
  } else if (shut_down) {
    if (!cursor_) stats_.Dropped("shutdown", n);  // durable: read again after a restart
  } else {
    std::vector<bool> refused;
    size_t n_refused = 0;
    if (!job->rejected.empty()) {
      refused.assign(n, false);
      for (const RejectedEvent& r : job->rejected) {
        if (r.index >= n || refused[r.index]) continue;
        refused[r.index] = true;
        ++n_refused;
        Event copy = batch.events[r.index];
        on_reject_(std::move(copy), r.reason);
      }
      stats_.errors.Add();
      stats_.Dropped("rejected", n_refused);
    }
    stats_.events_out.Add(n - n_refused);
    observe::Histogram& latency = stats_.EventLatency();
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    for (size_t i = 0; i < n; ++i) {
      const Event& e = batch.events[i];
      if (!refused.empty() && refused[i]) continue;
      if (e.ingest_time_ns > 0)
        latency.Observe(static_cast<double>(now_ns - e.ingest_time_ns) / 1e9);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    outstanding_events_ -= n;
    if (budget_) budget_->Credit(job->bytes);
    if (evicted) {
      cursor_->Return(job->first, job->last);
      probing_ = true;
    } else if (!shut_down && job->rejected.size() < n) {
      probing_ = false;  // something was delivered: the sink is ready
    }
    // A job that was shut down stays unfinished: it is read again after a restart.
    if (cursor_ && !evicted && !shut_down) cursor_->Done(job->first, job->last);
    // Before the job lets go of its batch: the batch just finished keeps its storage for the
    // next one (under load the next batch is as large); it is trimmed next time if unused.
    TrimPool();
    job->batch.reset();
    ReleaseLargeBatches();
    job->rejected.clear();
    auto it = std::find_if(jobs_.begin(), jobs_.end(),
                           [job](const std::unique_ptr<Job>& j) { return j.get() == job; });
    free_jobs_.push_back(std::move(*it));
    *it = std::move(jobs_.back());
    jobs_.pop_back();
  }
  idle_cv_.notify_all();
  if (evicted) {
    ScheduleKick();  // from the governor's step: take more once it is done
  } else {
    Kick();
  }
}

}  // namespace seedance
