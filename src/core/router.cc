#include "core/router.h"

#include <fmt/format.h>

#include <thread>

#include "util/strings.h"

namespace seedance {
namespace {

// The key a side-output line is rate-limited by: component, output and the reason's kind, its
// first 40 bytes once each run of digits is one '#'. Before, the bytes themselves were the
// key: 20,000 invalid lines of one file ("line N of ...") wrote 20,000 log lines.
std::string SideLogKey(std::string_view component, Output output, std::string_view reason) {
  std::string key = fmt::format("{}/{}/", component, OutputName(output));
  const size_t end = key.size() + 40;
  bool in_number = false;
  for (size_t i = 0; i < reason.size() && key.size() < end; ++i) {
    const bool digit = reason[i] >= '0' && reason[i] <= '9';
    if (!(digit && in_number)) key.push_back(digit ? '#' : reason[i]);
    in_number = digit;
  }
  return key;
}

}  // namespace

Router::Router(storage::DurableQueue* queue, observe::MetricsRegistry& metrics)
    : queue_(queue),
      metrics_(metrics),
      routes_(std::make_shared<Routes>(
          Routes{{}, std::vector<std::vector<SinkRunner*>>(kOutputCount)})),
      write_failed_(metrics.GetCounter(
          "seedance_events_dropped_total", "Events that left the main stream, by reason.",
          {{"component", "queue"}, {"kind", "queue"}, {"reason", "queue_write_failed"}})) {
  for (int i = 0; i < kOutputCount; ++i) {
    counters_.push_back(&metrics_.GetCounter(
        "seedance_output_events_total", "Events routed to each output (main and side outputs).",
        {{"output", std::string(OutputName(static_cast<Output>(i)))}}));
  }
}

void Router::AddSink(SinkRunner* runner, const std::vector<Output>& inputs) {
  std::vector<SinkRoute> sinks = Current()->sinks;
  sinks.push_back(SinkRoute{runner, inputs});
  SetSinks(sinks);
}

void Router::SetSinks(const std::vector<SinkRoute>& sinks) {
  auto next = std::make_shared<Routes>();
  next->sinks = sinks;
  next->by_output.resize(kOutputCount);
  for (const SinkRoute& r : sinks) {
    for (Output o : r.inputs) next->by_output[static_cast<int>(o)].push_back(r.runner);
  }
  std::lock_guard<std::mutex> lock(routes_mu_);
  routes_ = std::move(next);
  routes_version_.fetch_add(1, std::memory_order_release);
}

const Router::Routes& Router::RoutesFor(bool from_loop, std::shared_ptr<const Routes>* hold) {
  if (from_loop) {
    *hold = Current();
    return **hold;
  }
  const uint64_t version = routes_version_.load(std::memory_order_acquire);
  if (version != processing_version_) {
    processing_routes_ = Current();
    processing_version_ = version;
  }
  return *processing_routes_;
}

void Router::NotifyAppended() {
  const std::shared_ptr<const Routes> routes = Current();
  for (const SinkRoute& r : routes->sinks) r.runner->NotifyAppended();
}

bool Router::Route(Output output, Event&& event, bool from_loop, Deadline deadline) {
  counters_[static_cast<int>(output)]->Add();
  std::shared_ptr<const Routes> hold;
  const std::vector<SinkRunner*>& targets =
      RoutesFor(from_loop, &hold).by_output[static_cast<int>(output)];
  if (targets.empty()) {
    if (output != Output::kMain) return true;  // counted by the caller's dropped counter
    uint64_t suppressed = 0;
    if (log_limiter_.Allow("no_main_sink", &suppressed)) {
      SEEDANCE_LOG_WARN("pipeline", "no sink consumes the main output; events are dropped");
    }
    return true;
  }
  for (SinkRunner* runner : targets) runner->NoteArrival(event.ingest_time_ns);
  if (queue_) {
    // One record serves every sink that consumes this output.
    while (true) {
      Status s =
          from_loop ? queue_->AppendNoWait(output, event) : queue_->Append(output, event, deadline);
      if (s.ok()) return true;
      uint64_t suppressed = 0;
      if (log_limiter_.Allow("append", &suppressed)) {
        SEEDANCE_LOG_ERROR("queue", "cannot append to the durable queue: {}; retrying",
                           s.message());
      }
      if (from_loop || std::chrono::steady_clock::now() >= deadline) {
        write_failed_.Add();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  // Memory mode: a copy for each sink that takes the event (routing), the last one moved. Who
  // takes it is decided before any move (a moved-from event would look like another one).
  size_t last = targets.size();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i]->Wants(event)) last = i;
  }
  for (size_t i = 0; i <= last && last < targets.size(); ++i) {
    if (i < last && !targets[i]->Wants(event)) continue;
    Event e = i == last ? std::move(event) : event;
    if (from_loop)
      targets[i]->PushNoWait(std::move(e));
    else
      targets[i]->Push(std::move(e), deadline);
  }
  return true;
}

bool Router::RouteSide(Output output, Event&& event, std::string_view reason, bool from_loop,
                       const std::string& component, Deadline deadline) {
  // A reason may quote a script, a server or a payload: one line, at most kMaxReasonBytes.
  const std::string safe_reason = util::SanitizeText(reason, kMaxReasonBytes);
  reason = safe_reason;
  uint64_t suppressed = 0;
  if (log_limiter_.Allow(SideLogKey(component, output, reason), &suppressed)) {
    SEEDANCE_LOG_WARN(
        component, "event {} (topic {}) to {} output: {}{}", event.id, event.topic,
        OutputName(output), reason,
        suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : std::string());
  }
  event.SetHeader("output", OutputName(output));
  event.SetHeader("reason", reason);
  event.SetHeader("component", component);
  if (taps_ != nullptr && taps_->active()) {
    taps_->Offer(observe::TapPoint::kOutput, OutputName(output), event);
  }
  return Route(output, std::move(event), from_loop, deadline);
}

void Router::RouteRejected(Event&& event, const std::string& reason, const std::string& sink) {
  if (const std::string* o = event.FindHeader("output"); o != nullptr && *o == "rejected") {
    // Refused again on the rejected path: do not loop.
    metrics_
        .GetCounter("seedance_events_dropped_total", "Events that left the main stream, by reason.",
                    {{"component", sink}, {"kind", "sink"}, {"reason", "rejected_twice"}})
        .Add();
    return;
  }
  RouteSide(Output::kRejected, std::move(event), reason, /*from_loop=*/true, sink, Deadline::max());
}

}  // namespace seedance
