// The `otlp` sink: events as OpenTelemetry logs or metrics (sinks/otlp/otlp_request.h for the
// mapping), sent over OTLP/HTTP with protobuf bodies (`compression: gzip` as the spec offers)
// to `<endpoint>/v1/logs` or `/v1/metrics` (an endpoint with a path is used as it is). The
// HTTP client, TLS and headers are the http sink's (sinks/common/http_batch_sink.h).
//
// Answers, as the OTLP spec asks: 200 delivered, unless its partial_success rejected every
// record (then the batch goes to `rejected` with the receiver's message); a partial_success
// that rejected some cannot say which, so they are counted
// (seedance_otlp_rejected_records_total) and logged with the message, the rest delivered; 429,
// 502, 503, 504 retried with Retry-After; 400 and other 4xx to `rejected` with the message of
// the google.rpc.Status body.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory OtlpSinkFactory();

}  // namespace seedance::sinks
