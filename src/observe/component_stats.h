// ComponentStats: the standard metrics every component has, registered once per component.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

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

  // Counts `n` events dropped for `reason` (filtered, invalid_json, script_error, ...). The
  // counter is looked up in the registry once per reason (no allocation on the hot path).
  void Dropped(std::string_view reason, uint64_t n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dropped_.find(reason);
    if (it == dropped_.end()) {
      observe::Labels l = labels_;
      l.emplace_back("reason", std::string(reason));
      observe::Counter& c = registry_.GetCounter("seedance_events_dropped_total",
                                                 "Events that left the main stream, by reason.", l);
      it = dropped_.emplace(std::string(reason), &c).first;
    }
    it->second->Add(n);
  }
  // Registered on first use (only components that deliver have them).
  observe::Histogram& BatchLatency() {
    return Lazy(batch_latency_, "seedance_batch_latency_seconds",
                "Time from handing a batch to a sink to its outcome.");
  }
  // Per delivered event: from its ingest (Event::ingest_time_ns) to the sink's success.
  observe::Histogram& EventLatency() {
    return Lazy(event_latency_, "seedance_event_latency_seconds",
                "Time from an event's ingest to its delivery by the sink.");
  }
  const observe::Labels& labels() const { return labels_; }
  observe::MetricsRegistry& registry() { return registry_; }

 private:
  observe::Histogram& Lazy(std::atomic<observe::Histogram*>& slot, const char* name,
                           const char* help) {
    observe::Histogram* h = slot.load(std::memory_order_acquire);
    if (h == nullptr) {
      h = &registry_.GetHistogram(name, help, {labels_[0]});  // the registry dedupes
      slot.store(h, std::memory_order_release);
    }
    return *h;
  }

  observe::MetricsRegistry& registry_;
  observe::Labels labels_;
  std::mutex mu_;
  std::map<std::string, observe::Counter*, std::less<>> dropped_;
  std::atomic<observe::Histogram*> batch_latency_{nullptr};
  std::atomic<observe::Histogram*> event_latency_{nullptr};

 public:
  observe::Counter& events_in;
  observe::Counter& events_out;
  observe::Counter& errors;
  observe::Counter& retries;
  observe::Gauge& queue_depth;
};

}  // namespace seedance
