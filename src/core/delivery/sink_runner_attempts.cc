// SinkRunner (sink_runner.h), one job's way through the sink: its parts' attempts, each
// outcome acted on (done, retry on the RetrySchedule, bisect, rejected), the job finished once
// its last part is. sink_runner.cc has the rest: taking batches, the watchdog, eviction and
// shutdown.
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

void SinkRunner::StartAttempt(Part* p) {
  p->sending = true;
  p->timed_out = false;
  p->attempt_id = next_attempt_id_++;
  ++p->job->sending;
  sending_parts_.push_back(p);
  p->in_flight_at_send = static_cast<int>(sending_parts_.size());
  in_flight_gauge_.Set(p->in_flight_at_send);
  if (policy_.timeout.count() > 0) ArmWatchdog();
  // Stamped last, just before the hand-over: the timeout and the latency count from the
  // moment the sink has the attempt, not from the bookkeeping before it (under ASan that took
  // 76 µs, and an abort measured from the sink's side came that much early).
  p->sent = steady_clock::now();
  if (policy_.timeout.count() > 0) p->deadline = p->sent + policy_.timeout;
  // Two words: the callback fits in std::function without an allocation.
  const uint64_t attempt_id = p->attempt_id;
  sink_->Attempt(attempt_id, p->events(), [p, attempt_id](AttemptOutcome outcome) {
    p->runner->AttemptDone(p, attempt_id, std::move(outcome));
  });
}

void SinkRunner::RecordLatency(const Part* p, const AttemptOutcome& outcome) {
  using Kind = AttemptOutcome::Kind;
  if (outcome.backpressure) controller_.RecordBackpressure();
  const int64_t now_ns = NowNs();
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
}

void SinkRunner::AttemptDone(Part* p, uint64_t attempt_id, AttemptOutcome outcome) {
  if (!p->sending || p->attempt_id != attempt_id) return;  // a sink answered twice: ignored
  p->sending = false;
  --p->job->sending;
  sending_parts_.erase(std::find(sending_parts_.begin(), sending_parts_.end(), p));
  in_flight_gauge_.Set(static_cast<int64_t>(sending_parts_.size()));
  using Kind = AttemptOutcome::Kind;
  if (p->timed_out && outcome.kind == Kind::kRetry) {
    outcome.reason = fmt::format("no answer within the timeout ({} ms)", policy_.timeout.count());
    outcome.backpressure = true;
  }
  RecordLatency(p, outcome);
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
      jobs_.NoteRejected(p, std::move(outcome.rejected));
      return EndPart(p);
    case Kind::kRejected:
      return RejectPart(p, outcome.reason);
    case Kind::kTooLarge:
    case Kind::kBisect:
      if (p->size() <= 1) return RejectPart(p, outcome.reason);
      return Split(p, outcome.reason);
    case Kind::kRetry:
      return RetryLater(p, outcome.reason, outcome.retry_after);
    case Kind::kShutdown:
      break;
  }
}

void SinkRunner::RejectPart(Part* p, const std::string& reason) {
  jobs_.RejectAll(p, reason);
  EndPart(p);
}

void SinkRunner::Split(Part* p, const std::string& reason) {
  const size_t n = p->size();
  SEEDANCE_LOG_INFO(name_, "{}: sending the batch of {} events as {} and {}", reason, n, n / 2,
                    n - n / 2);
  for (Part* half : jobs_.Split(p)) StartAttempt(half);
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
  if (jobs_.EndPart(p)) FinishJob(job, /*evicted=*/false);
}

void SinkRunner::ReportOutcome(const Job& job) {
  const Batch& batch = *job.batch;
  const size_t n = batch.events.size();
  const delivery::Refusals refusals = delivery::JobTable::RefusalsOf(job);
  for (const RejectedEvent* r : refusals.each) {
    Event copy = batch.events[r->index];
    on_reject_(std::move(copy), r->reason);
  }
  if (!job.rejected.empty()) {
    stats_.errors.Add();
    stats_.Dropped("rejected", refusals.each.size());
  }
  stats_.events_out.Add(n - refusals.each.size());
  observe::Histogram& latency = stats_.EventLatency();
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (size_t i = 0; i < n; ++i) {
    const Event& e = batch.events[i];
    if (!refusals.refused.empty() && refusals.refused[i]) continue;
    if (e.ingest_time_ns > 0) latency.Observe(static_cast<double>(now_ns - e.ingest_time_ns) / 1e9);
  }
  if (tracer_ != nullptr) {
    // The job's wall-clock start: its steady start, as far before now as it was.
    const int64_t start_ns = now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          steady_clock::now() - job.started)
                                          .count();
    std::vector<std::string_view> reasons(refusals.refused.empty() ? 0 : n);
    for (const RejectedEvent* r : refusals.each) reasons[r->index] = r->reason;
    for (size_t i = 0; i < n; ++i) {
      tracer_->RecordDelivery(batch.events[i], name_, start_ns, now_ns,
                              reasons.empty() ? std::string_view() : reasons[i]);
    }
  }
}

void SinkRunner::FinishJob(Job* job, bool evicted) {
  const size_t n = job->batch->events.size();
  const bool shut_down = !evicted && job->shut_down;
  if (!evicted) {
    stats_.BatchLatency().Observe(
        std::chrono::duration<double>(steady_clock::now() - job->started).count());
    if (!shut_down) ReportOutcome(*job);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    outstanding_events_ -= n;
    if (evicted) {
      source_->Evicted(job->lease);  // read again when the sink is ready
    } else if (shut_down) {
      source_->ShutDown(job->lease, n);  // durable: read again after a restart
    } else {
      source_->Delivered(job->lease, /*delivered_any=*/job->rejected.size() < n);
    }
    // Before the job lets go of its batch: it keeps its storage for the next one.
    pool_.Trim();
    jobs_.Close(job);
    pool_.ReleaseLarge();
  }
  idle_cv_.notify_all();
  if (evicted) {
    ScheduleKick();  // from the governor's step: take more once it is done
  } else {
    Kick();
  }
}

}  // namespace seedance
