// Prometheus remote write 1.0: the WriteRequest protobuf message (prompb, types.proto and
// remote.proto), before snappy.
//
//   message WriteRequest { repeated TimeSeries timeseries = 1; }
//   message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//   message Label        { string name = 1; string value = 2; }
//   message Sample       { double value = 1; int64 timestamp = 2; }  // ms since the epoch
//
// As the spec asks: each series once per request, its labels sorted by name, its samples in
// time order.
#pragma once

#include <string>
#include <vector>

#include "sinks/common/series_mapping.h"

namespace seedance::sinks {

// Appends the WriteRequest for `samples` to `out`: samples of the same label set go in one
// series (in the order the series first appear), sorted by time (stably: of two samples with
// the same time, the later one last).
void AppendWriteRequest(const std::vector<SeriesSample>& samples, std::string& out);

}  // namespace seedance::sinks
