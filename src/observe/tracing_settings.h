// The `tracing:` section: Seedance's own spans (observe/tracer.h), exported over OTLP/HTTP.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "seedance/options.h"

namespace seedance::observe {

struct TracingSettings {
  std::string url;  // "" = off; the OTLP/HTTP traces endpoint
  double sample_ratio = 0;
  std::string service_name = "seedance";
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds timeout{5000};
  uint64_t max_queued_spans = 2048;

  bool on() const { return !url.empty(); }
  bool operator==(const TracingSettings&) const = default;
};

const Options<TracingSettings>& TracingSchema();

}  // namespace seedance::observe
