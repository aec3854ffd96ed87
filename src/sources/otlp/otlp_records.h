// OTLP 1.x export requests (opentelemetry-proto collector/{logs,metrics,trace}/v1, protobuf)
// read into events: each log record, metric data point or span one event, its payload a JSON
// object that follows the OTLP data model (docs/otlp.md#the-otlp-source):
//
//   every record   "resource": its resource's attributes, "scope": {"name", "version",
//                  "attributes"}; "attributes": the record's (an AnyValue as JSON: kvlist →
//                  object, array → array, int → integer, double → number (NaN, ±inf → null),
//                  bytes → base64 string); times as integers of ns since the epoch
//   log record     time_unix_nano, observed_time_unix_nano, severity_number, severity_text,
//                  body, event_name, trace_id, span_id (lowercase hex), flags
//   data point     name, description, unit, type (gauge, sum, histogram,
//                  exponential_histogram, summary), start_time_unix_nano, time_unix_nano, and
//                  by type: value (as_double or as_int); is_monotonic, aggregation_temporality
//                  ("delta", "cumulative"); count, sum, min, max, bucket_counts,
//                  explicit_bounds; scale, zero_count, zero_threshold, positive, negative
//                  ({"offset", "bucket_counts"}); quantile_values ([{"quantile", "value"}])
//   span           trace_id, span_id, parent_span_id, trace_state, flags, name, kind
//                  ("internal", "server", ...), start_time_unix_nano, end_time_unix_nano,
//                  events, links, status ({"code": "unset" | "ok" | "error", "message"})
//
// The event time is the record's time (a span's start), else the observed time, else now. A
// log record or span with a trace id carries it as a W3C `traceparent` header (and a span's
// trace_state as `tracestate`), which the sinks send on. Exemplars and metric metadata are
// not kept.
//
// Bytes from anyone: a framing error in the request or a resource or scope is an error (the
// request is refused whole); a record that is malformed inside (cut short, a string that is
// not UTF-8, values nested deeper than 128 levels, a span without a 16-byte trace id and an
// 8-byte span id, a histogram whose bucket_counts do not fit its bounds) is refused alone with
// its reason, and the rest is taken.
#pragma once

#include <cstdint>
#include <string_view>

#include "seedance/result.h"
#include "sources/http/push_protocol.h"

namespace seedance::sources {

enum class OtlpSignal { kLogs, kMetrics, kTraces };

// The events of an Export{Logs,Metrics,Trace}ServiceRequest, at most `max_records` records and
// `max_bytes` of payloads (kResourceExhausted past either: each record's payload repeats its
// resource and scope, so a body with one huge resource and many small records would
// otherwise make a thousand copies of it), refused records in `refused`; kInvalidArgument
// with the reason for a body that is not one.
Result<PushBatch> DecodeOtlpRequest(OtlpSignal signal, std::string_view body, size_t max_records,
                                    size_t max_bytes, int64_t now_ns);

}  // namespace seedance::sources
