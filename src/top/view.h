// The figures `seedance top` shows, read from two scrapes of a running pipeline's /metrics,
// and the screen they make (plain text; main/top_command.cc draws it on a terminal).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "observe/prometheus_text.h"

namespace seedance::top {

// One source, processor or sink: totals since the process started.
struct ComponentFigures {
  std::string kind;  // source, processor, sink
  std::string name;
  double in = 0, out = 0, errors = 0;
  std::map<std::string, double> dropped;  // by reason
  std::optional<double> queue_depth;      // sinks: events waiting
  std::optional<double> in_flight;        // sinks: attempts in progress
  std::optional<double> limit;            // sinks: the adaptive concurrency limit
  std::optional<double> p99_seconds;      // sinks: attempt latency of the last window
  std::string state;                      // "up" / "down" (connections), or ""
};

struct Snapshot {
  std::vector<ComponentFigures> components;  // sources, then processors, then sinks; by name
  std::string version;
  std::optional<double> disk_bytes;      // the durable queue
  std::optional<double> budget_bytes;    // limits.memory
  std::optional<double> memory_bytes;    // counted against the budget
  std::optional<double> resident_bytes;  // the process's RSS (with a budget)
  double trims = 0;
  std::map<std::string, double> outputs;  // events routed to main / error / rejected / stale
  double taps_open = 0;
  double queue_write_failed = 0;  // events the durable queue could not take
};

Snapshot ReadSnapshot(const std::vector<observe::Sample>& samples);

// The screen: a header, the pipeline-wide figures and one row per component. Rates are over
// `seconds` since `before`; without it (the first scrape) they show "-". Lines are cut at
// `width` columns (0: not cut).
std::vector<std::string> RenderScreen(const Snapshot& now, const Snapshot* before, double seconds,
                                      const std::string& title, size_t width = 0);

}  // namespace seedance::top
