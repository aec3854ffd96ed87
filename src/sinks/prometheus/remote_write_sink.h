// The `prometheus_remote_write` sink: events as samples (sinks/common/series_mapping.h)
// sent to a Prometheus remote-write receiver (remote write 1.0: a protobuf WriteRequest,
// snappy-compressed, POSTed with Content-Type application/x-protobuf and
// X-Prometheus-Remote-Write-Version 0.1.0). The HTTP client, TLS and headers are the http
// sink's (sinks/common/http_batch_sink.h).
//
// Answers, as the spec asks: 2xx delivered; 5xx and 429 retried by the runner (Retry-After
// honoured); any other 4xx refused for good. A 400 for a batch of several events is sent again
// in halves: Prometheus takes none of a request with one sample it refuses (out of order, out
// of bounds, a duplicate time with another value), so the halves find that sample, which goes
// to `rejected` with Prometheus's message, and deliver the rest.
//
// Order: samples of one series must reach Prometheus in time order unless its
// `out_of_order_time_window` takes them. The sink sends one request at a time by default
// (`concurrency: 1`), so the queue's order is kept; more concurrent requests can reorder.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory PrometheusRemoteWriteSinkFactory();

}  // namespace seedance::sinks
