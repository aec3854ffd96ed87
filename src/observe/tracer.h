// Tracer: Seedance's own spans (the `tracing:` section), so that a trace viewer shows every
// hop of an event's way: the producer's span, Seedance's, the receiver's.
//
// Parent-based sampling. An event whose `traceparent` is sampled is always traced; an event
// without one, or with one not sampled, starts a new trace with probability `sample_ratio`
// (0 by default: Seedance joins the traces its producers start and starts none).
//
// For a traced event:
//   process <source>  (consumer) from when Seedance took the event in to when the processors
//                     were done with it and it was routed; a child of the incoming traceparent.
//                     The event's `traceparent` is rewritten to this span, so scripts and
//                     every sink (HTTP, MQTT 5, NATS, Kafka, OTLP) pass it on as the parent.
//   deliver <sink>    (producer) one per sink that took the event: from the start of the
//                     batch's first attempt to its outcome (delivered, or status ERROR with
//                     the reason it was rejected); a child of the event's traceparent.
//
// Export is best-effort, as in the OpenTelemetry SDKs' batch span processor: finished spans
// wait in a bounded queue (max_queued_spans; past it new ones are dropped) and one thread
// POSTs them as an OTLP/HTTP protobuf ExportTraceServiceRequest every `interval`, or sooner
// when kExportBatch wait. A failed export drops its spans. Both are counted
// (seedance_tracing_spans_total{result}) and logged at most once per 10 s. Spans still queued
// at a kill -9 are lost; the events themselves are not (their queue is the durable one).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "observe/metrics.h"
#include "observe/tracing_settings.h"
#include "seedance/event.h"
#include "util/log.h"
#include "util/trace_context.h"

namespace seedance::observe {

// One span of Seedance's. Its name and attributes follow from what it is (EncodeSpans):
//   kProcess  "process <component>", kind consumer, seedance.source = component
//   kDeliver  "deliver <component>", kind producer, seedance.sink = component
// and both have messaging.destination.name = topic and messaging.operation.type (process,
// send). Fields, not a list of attributes: a traced event costs few allocations.
struct SpanRecord {
  enum class What : uint8_t { kProcess, kDeliver };

  util::TraceContext context;       // its trace, its own id, the flags
  std::array<uint8_t, 8> parent{};  // all zero: a root span
  What what = What::kProcess;
  int64_t start_ns = 0;  // Unix ns
  int64_t end_ns = 0;
  bool error = false;
  std::string status_message;  // with error
  std::string topic;
  std::string component;  // the source or the sink
};

// An OTLP ExportTraceServiceRequest (protobuf) of `spans`, under one resource (service.name
// `service_name`) and the scope "seedance".
std::string EncodeSpans(const std::vector<SpanRecord>& spans, std::string_view service_name);

class Tracer {
 public:
  static constexpr size_t kExportBatch = 512;
  // What a span keeps of the text it is given (an MQTT topic may be 64 KiB, a refusal reason
  // a server's message): cut, valid UTF-8 (util::SanitizeText), so max_queued_spans bounds
  // the queue's memory (about 1 KiB a span) and a receiver never sees a malformed string.
  static constexpr size_t kMaxTopic = 256;
  static constexpr size_t kMaxStatusMessage = 512;

  Tracer(TracingSettings settings, MetricsRegistry& metrics);
  ~Tracer();  // Stop()
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Any thread: when `e` is traced (see above), starts its `process` span — its start is the
  // event's ingest time — and points the event's traceparent at it; nullopt otherwise.
  std::optional<SpanRecord> BeginProcess(Event& e);
  // Any thread: the span is finished now; it is queued for export.
  void End(SpanRecord&& span);
  // Any thread: the `deliver` span of sink `sink` for `e`, when e's traceparent is sampled.
  // `refused`: the reason it was rejected ("" when delivered).
  void RecordDelivery(const Event& e, std::string_view sink, int64_t start_ns, int64_t end_ns,
                      std::string_view refused);

  // Starts the export thread.
  void Start();
  // Exports what is queued once more (within `timeout`) and ends the export thread.
  void Stop();

  const TracingSettings& settings() const { return settings_; }

 private:
  void Queue(SpanRecord&& span);
  void Run();
  // POSTs `spans` (then cleared); false when the export failed (they are dropped, counted).
  bool Export(std::vector<SpanRecord>& spans);

  const TracingSettings settings_;
  Counter& exported_;
  Counter& dropped_full_;
  Counter& dropped_failed_;
  util::LogLimiter log_limiter_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SpanRecord> queued_;  // at most max_queued_spans
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace seedance::observe
