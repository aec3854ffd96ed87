// The `seedance bench` report: figures of each run, their medians at the top level, the
// timeline of each run, and what ran where. Written as JSON (docs/bench.md has the schema).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seedance::bench {

struct TimelinePoint {
  double t_s = 0;           // since the load started
  int64_t rss_kb = 0;       // resident set of the pipeline process
  uint64_t events_in = 0;   // generated so far
  uint64_t events_out = 0;  // delivered so far (first deliveries)
  double p50_ms = 0;        // latency of the events delivered in this interval
  double p99_ms = 0;
  std::vector<uint64_t> latency_buckets;  // per bucket of kLatencyBoundsMs, +Inf last
};

struct RunFigures {
  uint64_t events_in = 0;
  uint64_t events_out = 0;
  uint64_t duplicates = 0;
  double throughput_eps = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  int64_t rss_peak_kb = 0;
  int64_t rss_idle_kb = 0;
  double cpu_s = 0;
  double ready_ms = 0;
  double duration_s = 0;  // first event generated → last delivered
  std::vector<TimelinePoint> timeline;
};

struct ReportContext {
  std::string config;
  std::string filter;
  std::string load;  // "mqtt tcp://127.0.0.1:1883 topic sensor/bench/temperature qos 1" ...
  double rate = 0;   // requested; 0 = as fast as possible
  uint64_t count = 0;
  double duration_s = 0;
  double interval_s = 0;
};

// Upper bounds (ms) of the timeline's latency buckets: those of the
// seedance_event_latency_seconds histogram, so reports and /metrics are read alike.
const std::vector<double>& LatencyBoundsMs();
// Counts of `latencies_ms` per bucket of LatencyBoundsMs() (+Inf last).
std::vector<uint64_t> BucketCounts(const std::vector<double>& latencies_ms);

// Nearest-rank percentile (q in 0..1) of `values`; sorts them. 0 when empty.
double Percentile(std::vector<double>& values, double q);
double Median(std::vector<double> values);

// The whole report as pretty JSON.
std::string ReportJson(const ReportContext& context, const std::vector<RunFigures>& runs);

}  // namespace seedance::bench
