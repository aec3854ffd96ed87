// The `otlp` source: OTLP/HTTP (protobuf or JSON) on /v1/logs, /v1/metrics and /v1/traces;
// each log record, data point or span one event (otlp_records.h). The client gets 200 only
// once every event is in the durable queue, partial_success for records refused as
// malformed, 503 with Retry-After under backpressure. docs/otlp.md#the-otlp-source.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory OtlpSourceFactory();

}  // namespace seedance::sources
