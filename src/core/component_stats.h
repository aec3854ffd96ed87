// ComponentStats: the standard metrics every component has, registered once per component.
#pragma once

#include <string>

#include "observe/metrics.h"

namespace seedance {

struct ComponentStats {
  ComponentStats(observe::MetricsRegistry& registry, const std::string& kind,
                 const std::string& name)
      : registry_(registry),
        labels_{{"component", name}, {"kind", kind}},
        events_in(registry.GetCounter("seedance_events_in_total",
                                      "Events received by the component.", labels_)),
        events_out(registry.GetCounter("seedance_events_out_total",
                                       "Events passed on (or delivered, for sinks).", labels_)),
        errors(registry.GetCounter("seedance_errors_total",
                                   "Failures (bad payloads, script errors, failed requests).",
                                   labels_)),
        retries(
            registry.GetCounter("seedance_retries_total", "Delivery attempts retried.", labels_)),
        queue_depth(registry.GetGauge("seedance_queue_depth",
                                      "Events waiting in the component's input queue.", labels_)) {}

  // Counts `n` events dropped for `reason` (filtered, invalid_json, script_error, ...).
  void Dropped(const std::string& reason, uint64_t n = 1) {
    observe::Labels l = labels_;
    l.emplace_back("reason", reason);
    registry_
        .GetCounter("seedance_events_dropped_total", "Events that left the main stream, by reason.",
                    l)
        .Add(n);
  }
  observe::Histogram& BatchLatency() {
    return registry_.GetHistogram("seedance_batch_latency_seconds",
                                  "Time from handing a batch to a sink to its outcome.",
                                  {labels_[0]});
  }
  // Per delivered event: from its ingest (Event::ingest_time_ns) to the sink's success.
  observe::Histogram& EventLatency() {
    return registry_.GetHistogram("seedance_event_latency_seconds",
                                  "Time from an event's ingest to its delivery by the sink.",
                                  {labels_[0]});
  }
  const observe::Labels& labels() const { return labels_; }
  observe::MetricsRegistry& registry() { return registry_; }

 private:
  observe::MetricsRegistry& registry_;
  observe::Labels labels_;

 public:
  observe::Counter& events_in;
  observe::Counter& events_out;
  observe::Counter& errors;
  observe::Counter& retries;
  observe::Gauge& queue_depth;
};

}  // namespace seedance
