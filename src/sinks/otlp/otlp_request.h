// OTLP 1.x request bodies (opentelemetry-proto, collector/{logs,metrics}/v1), protobuf:
// ExportLogsServiceRequest and ExportMetricsServiceRequest with one ResourceLogs or
// ResourceMetrics (the sink's resource) holding one scope (name "seedance", its version).
//
// Logs: each event one LogRecord.
//   time_unix_nano           the event time; observed_time_unix_nano: when Seedance took it in
//   body                     the payload field `body_field`, or the whole payload: JSON as an
//                            AnyValue (object → kvlist, array → array, integer → int, other
//                            number → double, string, bool; null → an empty AnyValue), any
//                            other payload as a string (bytes that are not UTF-8 as bytes)
//   severity_text / _number  the payload field `severity_field`: its text, and the number of a
//                            known level word (trace 1, debug 5, info 9, warn 13, error 17,
//                            fatal 21; case ignored), or an integer 1-24 as the number
//   attributes               messaging.destination.name (the topic), seedance.source (the
//                            source component), then the sink's attribute_fields and attributes
//   trace_id, span_id, flags the event's W3C `traceparent` header, when valid
// Metrics: each sample (sinks/common/series_mapping.h, OpenTelemetry names) one gauge
// NumberDataPoint (as_double, time_unix_nano = the event time, its labels as string
// attributes), the points of one name in one Metric.
// Traces: each event one Span, read from a payload shaped as the otlp source writes spans
// (sources/otlp/otlp_records.h): trace_id and span_id (hex, required), parent_span_id,
// trace_state, flags, name (default: the topic), kind and status.code (a name or a number),
// start_time_unix_nano and end_time_unix_nano (default: the event time), attributes (then the
// sink's attribute_fields and attributes), events, links. Spans are grouped by the payload's
// `resource` (attributes; the sink's resource for a span without one) and `scope` ({name,
// version}; seedance's otherwise), so spans passed through keep their service.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "seedance/sink.h"
#include "sinks/common/event_template.h"
#include "sinks/common/series_mapping.h"

namespace seedance::sinks {

struct LogMapping {
  std::vector<std::string> body_field;      // empty: the whole payload
  std::vector<std::string> severity_field;  // empty: none
  std::vector<std::vector<std::string>> attribute_fields;
  std::vector<std::pair<std::string, EventTemplate>> attributes;
};

using ResourceAttributes = std::vector<std::pair<std::string, std::string>>;

// Appends the request for `batch` to `out`.
void AppendLogsRequest(const Batch& batch, const LogMapping& m, const ResourceAttributes& resource,
                       std::string& out);

// Appends the request for `batch`'s spans to `out`; an event that is not a span goes to
// `unwritable` with the reason.
void AppendTracesRequest(const Batch& batch, const LogMapping& m,
                         const ResourceAttributes& resource, std::string& out,
                         std::vector<RejectedEvent>& unwritable);

// Appends the request for `samples` to `out`.
void AppendMetricsRequest(const std::vector<SeriesSample>& samples,
                          const ResourceAttributes& resource, std::string& out);

// The severity number of a level word ("WARN" → 13), or 0.
int SeverityNumber(std::string_view level);

// What an OTLP answer says was refused: ExportLogsServiceResponse /
// ExportMetricsServiceResponse's partial_success (protobuf, or JSON when `content_type` says
// so), or google.rpc.Status's message for an error status.
struct OtlpAnswer {
  int64_t rejected = 0;
  std::string message;
};
OtlpAnswer ReadOtlpAnswer(std::string_view body, std::string_view content_type, bool error);

}  // namespace seedance::sinks
