// The `http` sink: POSTs (or PUTs) batches of events to an HTTP(S) endpoint, optionally
// compressed (gzip, zstd). The client is http/client.h, used through
// sinks/common/http_batch_sink.h.
//
// Keep-alive connections, up to `concurrency` requests in flight, a timeout per request.
// Connection errors, timeouts, 5xx, 408 and 429 are retried with jittered exponential
// backoff (Retry-After in seconds is honoured); other 4xx and 3xx answers send the batch to
// the `rejected` output.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory HttpSinkFactory();

}  // namespace seedance::sinks
