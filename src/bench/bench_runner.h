// RunBench: `seedance bench` — runs a pipeline configuration as a separate process against
// load the bench generates, receives what its sinks deliver, and reports the figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "seedance/result.h"

namespace seedance::bench {

struct BenchOptions {
  std::string config_path;
  std::string filter_path;
  std::string broker_uri;  // overrides the config's broker
  std::string payload;     // JSON object template; {n} = sequence number
  double rate = 0;         // events per second; 0 = as fast as possible
  uint64_t count = 0;      // events; 0 = bounded by duration
  std::chrono::nanoseconds duration{0};
  int repeat = 1;
  std::chrono::nanoseconds interval = std::chrono::milliseconds(500);  // timeline resolution
  std::chrono::nanoseconds settle = std::chrono::seconds(3);  // no deliveries for this long: done
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(60);
  std::string seedance_exe;  // the binary to run as the pipeline (normally this one)
  std::string svg_path;      // "" = no plot
  bool progress = false;     // a progress line on stderr
  bool keep_workdir = false;
};

// Returns the report (JSON text). kInvalidArgument for options or a job that cannot be
// benchmarked; kUnavailable when the pipeline or broker fails.
Result<std::string> RunBench(const BenchOptions& options);

}  // namespace seedance::bench
