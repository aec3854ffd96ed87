// `seedance slo-check`: one figure computed over a time window, against its objective.
//
// Latency quantiles come from a histogram over the window: seedance_event_latency_seconds
// (all sinks together) from two scrapes of /metrics `window` apart, or a bench report's
// timeline buckets of the last `window` of each run. Quantiles are interpolated within a
// bucket the way Prometheus' histogram_quantile() does, so they agree with dashboards.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "observe/prometheus_text.h"
#include "seedance/result.h"

namespace seedance::slo {

using observe::ParsePrometheusText;
using observe::Sample;

struct SloMetric {
  std::string name;        // as given, e.g. "p95_latency_ms"
  bool latency = true;     // false: throughput_eps
  double quantile = 0.95;  // latency only
  bool higher_is_better = false;
};

// "pNN_latency_ms" (p50, p95, p99, p99.9, p999) or "throughput_eps".
Result<SloMetric> ParseSloMetric(const std::string& name);

// histogram_quantile(): `buckets` are (upper bound, cumulative count) pairs sorted by bound,
// the last one +Inf. Returns NaN when the histogram is empty.
double HistogramQuantile(double q, const std::vector<std::pair<double, double>>& buckets);

// The figure over the window between two scrapes (`before` may be empty: since start; only
// for latency). Latency in ms. kNotFound when the histogram has no events in the window.
Result<double> FigureFromScrapes(const SloMetric& metric, const std::vector<Sample>& before,
                                 const std::vector<Sample>& after, double window_s);

// The figure over the last `window_s` of each run in a bench report (the median over runs),
// or over the whole run when it is shorter. `how` says which.
Result<double> FigureFromReport(const SloMetric& metric, const std::string& report_json,
                                double window_s, std::string* how);

// True when `value` meets `objective` (≤ for latency, ≥ for throughput).
bool MeetsObjective(const SloMetric& metric, double value, double objective);

// The verdict in the Prometheus text format, for a Pushgateway.
std::string PushgatewayBody(const SloMetric& metric, double value, double objective,
                            double window_s);

}  // namespace seedance::slo
