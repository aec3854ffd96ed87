// How an event becomes samples of metric series: Prometheus series (the
// prometheus_remote_write sink) or OpenTelemetry gauge data points (the otlp sink).
//
// A sample is a series name, a sorted label set, a value and a time (the event time).
//   name    `metric` (a template, default "{payload.name}"); with `fields`, one series per
//           field, named `<metric>_<field>` (dots in the field's path become `_`; for OTLP
//           `<metric>.<field>`, the path as it is), or the field alone when `metric` has no
//           value for the event
//   labels  each payload field of `label_fields` (default labels, instance, job): an object's
//           members are labels, a string, number or boolean is the label named as the field;
//           then `labels` (templates), which win over a payload label of the same name. A label
//           with an empty value is left out, as Prometheus reads it.
//   value   the payload field `value` (default "value"), or each of `fields`: a number, a
//           boolean (1 or 0), or the strings "NaN", "+Inf", "-Inf" (how the prometheus_scrape
//           source writes what JSON cannot hold)
// The round trip prometheus_scrape → prometheus_remote_write therefore keeps every series as
// Prometheus would have scraped it.
//
// An event fails (it goes to `rejected` with the reason) when a label value is not UTF-8, it
// has no value, or (Prometheus names) its name or a label name is not valid in Prometheus's
// data model (names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and not
// starting with "__"). OpenTelemetry names take any UTF-8 text but the empty one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "seedance/event.h"
#include "seedance/result.h"
#include "sinks/common/event_template.h"

namespace seedance::sinks {

enum class MetricNames { kPrometheus, kOpenTelemetry };

struct SeriesMapping {
  MetricNames names = MetricNames::kPrometheus;
  EventTemplate metric;
  std::vector<std::vector<std::string>> label_fields;
  std::vector<std::pair<std::string, EventTemplate>> labels;
  std::vector<std::string> value;  // used when `fields` is empty
  std::vector<std::vector<std::string>> fields;
};

struct SeriesMappingConfig {
  MetricNames names = MetricNames::kPrometheus;
  std::string metric = "{payload.name}";
  std::vector<std::string> label_fields = {"labels", "instance", "job"};
  std::vector<std::pair<std::string, std::string>> labels;
  std::string value = "value";
  std::vector<std::string> fields;
};

// Makes a mapping from the config's text; errors name what is wrong.
Result<SeriesMapping> MakeSeriesMapping(const SeriesMappingConfig& c);

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct SeriesSample {
  Labels labels;  // "__name__" among them (the series name)
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t timestamp_ns = 0;  // the same time, to the nanosecond
};

// Appends the samples of `event` to `out` (one, or one per field of `fields` that has a
// value); false with `why` set, appending nothing, when the event cannot be written.
bool AppendSamples(const SeriesMapping& m, const Event& event, std::vector<SeriesSample>& out,
                   std::string* why);

bool IsValidMetricName(std::string_view s);
bool IsValidLabelName(std::string_view s);  // also refuses the reserved "__" prefix

}  // namespace seedance::sinks
