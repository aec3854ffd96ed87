#include "core/processing_loop.h"

#include <thread>

#include "core/commit_retry.h"
#include "util/clock.h"
#include "util/json_check.h"

namespace seedance {

// The output a processor writes to: Emit goes to the next stage, EmitSide to the router.
class ProcessingLoop::StageOutput final : public ProcessorOutput {
 public:
  StageOutput(ProcessingLoop& loop, size_t next_stage) : loop_(loop), next_(next_stage) {}
  void Emit(Event&& event) override {
    const Stage& stage = loop_.parts_.stages[next_ - 1];
    stage.stats->events_out.Add();
    if (loop_.parts_.taps != nullptr && loop_.parts_.taps->active()) {
      loop_.parts_.taps->Offer(observe::TapPoint::kProcessor, stage.name, event);
    }
    loop_.RunFrom(next_, std::move(event));
  }
  void EmitSide(Output output, Event&& event, std::string_view reason) override {
    Stage& stage = loop_.parts_.stages[next_ - 1];
    stage.stats->Dropped(std::string(OutputName(output)));
    loop_.RouteSide(output, std::move(event), reason, stage.name);
  }
  void EmitWatermark(std::string_view scope, int64_t watermark_ns) override {
    auto& stages = loop_.parts_.stages;
    if (next_ >= stages.size()) return;  // no later stage keeps event time
    StageOutput out(loop_, next_ + 1);
    stages[next_].processor->OnWatermark(scope, watermark_ns, out);
  }

 private:
  ProcessingLoop& loop_;
  size_t next_;
};

ProcessingLoop::ProcessingLoop(Parts parts) : parts_(std::move(parts)) {}

void ProcessingLoop::SetShutdownDeadline(Deadline deadline) {
  deadline_ns_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
}

ProcessingLoop::Deadline ProcessingLoop::PushDeadline() const {
  return Deadline(std::chrono::nanoseconds(deadline_ns_.load(std::memory_order_relaxed)));
}

bool ProcessingLoop::PastShutdownDeadline() const {
  return std::chrono::steady_clock::now().time_since_epoch().count() >=
         deadline_ns_.load(std::memory_order_relaxed);
}

void ProcessingLoop::Run() {
  std::vector<IngestItem> items;
  items.reserve(kBatch);
  auto next_tick = std::chrono::steady_clock::now();
  while (true) {
    items.clear();
    bool more = parts_.ingest->PopBatch(items, kBatch, kTickInterval);
    util::WakeBatcher::Scope wake_once(parts_.wakes);  // the batch wakes the loop once
    if (parts_.reloader != nullptr) parts_.reloader->ApplyPending();
    for (IngestItem& item : items) {
      if (parts_.checkpoint != nullptr) {
        if (item.ack.redelivery_id != 0) {
          parts_.checkpoint->NoteRedelivery(item.event.source,
                                            static_cast<uint16_t>(item.ack.redelivery_id - 1));
        }
        if (item.ack.stream != 0) {
          parts_.checkpoint->NotePosition(item.ack.stream, item.ack.stream_end);
        }
      }
      ProcessOne(item);
    }
    // Acknowledge upstream only once the batch's events, and the state they changed, are safe.
    bool safe = !batch_failed_;
    batch_failed_ = false;
    if (parts_.queue != nullptr && !items.empty()) safe = CommitBatch() && safe;
    if (safe && parts_.checkpoint != nullptr && !items.empty()) safe = SaveCheckpoint();
    if (parts_.ack_delay.count() > 0 && !items.empty()) {
      std::this_thread::sleep_for(parts_.ack_delay);
    }
    if (safe) {
      for (IngestItem& item : items) item.ack.Ack();
    }
    handled_.fetch_add(items.size(), std::memory_order_release);
    if (!safe && PastShutdownDeadline()) {
      // Shutting down and nothing more can be made safe: stop here. What is still queued is
      // not acknowledged either; its sources send it again after the restart.
      SEEDANCE_LOG_WARN("pipeline",
                        "shutdown deadline passed with the batch unsafe: {} event(s) left "
                        "unacknowledged",
                        items.size() + parts_.ingest->size());
      break;
    }
    if (parts_.queue != nullptr) {
      if (parts_.recycle) parts_.recycle(items);  // memory mode: the events went on to sinks
      parts_.queue->Tick();
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= next_tick) {
      Tick();
      next_tick = now + kTickInterval;
    }
    if (!more) break;
  }
}

void ProcessingLoop::Tick() {
  const int64_t wall = util::WallNowNs();
  for (size_t i = 0; i < parts_.stages.size(); ++i) {
    StageOutput out(*this, i + 1);
    parts_.stages[i].processor->Tick(wall, out);
  }
  if (parts_.checkpoint != nullptr) {  // ticks may fire windows: results and state committed
    if (parts_.queue == nullptr || CommitBatch()) SaveCheckpoint();
    parts_.checkpoint->Tick();
  }
}

void ProcessingLoop::ProcessOne(IngestItem& item) {
  Event& event = item.event;
  if (parts_.taps != nullptr && parts_.taps->active()) {
    parts_.taps->Offer(observe::TapPoint::kSource, event.source, event);
  }
  if (!item.invalid.empty()) {  // the source could not take it: counted there
    const std::string source = event.source;
    RouteSide(Output::kError, std::move(event), item.invalid, source);
    return;
  }
  if (event.format == PayloadFormat::kJson) {
    Status s = CheckJson(event.payload);
    if (!s.ok()) {
      const std::string source = event.source;
      event.format = PayloadFormat::kRaw;  // not JSON: sinks must quote it
      if (parts_.on_invalid_json) parts_.on_invalid_json(source);
      RouteSide(Output::kError, std::move(event), s.message(), source);
      return;
    }
  }
  std::optional<observe::SpanRecord> span;
  if (parts_.tracer != nullptr) span = parts_.tracer->BeginProcess(event);
  RunFrom(0, std::move(event));
  if (span) parts_.tracer->End(std::move(*span));
}

void ProcessingLoop::RunFrom(size_t stage, Event&& event) {
  if (stage >= parts_.stages.size()) {
    if (!parts_.router->Route(Output::kMain, std::move(event), /*from_loop=*/false,
                              PushDeadline())) {
      batch_failed_ = true;  // its batch must not be acknowledged
    }
    return;
  }
  Stage& s = parts_.stages[stage];
  s.stats->events_in.Add();
  StageOutput out(*this, stage + 1);
  s.processor->Process(std::move(event), out);
}

void ProcessingLoop::RouteSide(Output output, Event&& event, std::string_view reason,
                               const std::string& component) {
  if (!parts_.router->RouteSide(output, std::move(event), reason, /*from_loop=*/false, component,
                                PushDeadline())) {
    batch_failed_ = true;  // its batch must not be acknowledged
  }
}

bool ProcessingLoop::CommitBatch() {
  return CommitUntilDeadline([this] { return parts_.queue->Commit(); },
                             [this] { return PastShutdownDeadline(); }, "queue",
                             "the durable queue", log_limiter_);
}

bool ProcessingLoop::SaveCheckpoint() {
  return parts_.checkpoint->Save([this] { return PastShutdownDeadline(); });
}

}  // namespace seedance
