// The `influxdb` sink: events as points (line protocol, sinks/influxdb/line_protocol.h) written
// to InfluxDB over its HTTP API: v1 (`/write`, database, retention policy, user and password)
// or v2 (`/api/v2/write`, org, bucket, token). The HTTP client, compression and TLS are the
// http sink's (sinks/common/http_batch_sink.h).
//
// A write InfluxDB refuses in part (HTTP 400): the lines it quotes as unparsable go to
// `rejected` with its reason; points it refused without naming them (a field type conflict)
// are found by sending the batch again in halves (InfluxDB overwrites a point with the same
// measurement, tags and time, so the points it took are written twice to no effect).
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory InfluxDbSinkFactory();

}  // namespace seedance::sinks
