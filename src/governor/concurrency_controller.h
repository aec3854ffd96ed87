// ConcurrencyController: how many requests a sink may have in flight, following latency.
//
// Every `interval` (50 ms) the controller takes the P99 of the latencies completed in the last
// `window` (100 ms) and applies one of two rules.
//
// kArticle (the article's rule, DESIGN.md section 4), kept as the baseline:
//   P99 > target                                         → limit = limit / 2
//   P99 ≤ target and throughput ≥ 90% of the best seen   → limit + 1
// Its weakness: after halving, throughput is below 90% of the best ever seen, so it stops
// growing; it only re-probes as that best decays (1% per interval), which takes seconds.
//
// kHeadroom (the default): multiplicative decrease proportional to the overshoot, additive
// increase only while there is latency headroom and the limit is what holds the sink back:
//   P99 > target                                → limit × max(0.5, target / P99) (at least −1)
//   P99 ≤ headroom × target (0.8) and the most
//   requests in flight in the window reached
//   the limit                                   → limit + 1
//   otherwise                                   → unchanged
// A server with c slots and service time s, against a target of 2s, settles at c + 1 in
// flight: every slot busy, P99 ≤ target.
//
// Backpressure (headroom only): a request the server answered with 429 or 503, or that timed
// out, halves the limit at the next update whatever the latencies — as Vector's adaptive
// request concurrency does; fast refusals would otherwise look like spare capacity.
//
// With no completions in a window nothing changes. Fixed mode (`adaptive = false`) always
// answers `initial`. Thread-compatible: call from one thread (the event loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

#include "seedance/delivery_policy.h"

namespace seedance::governor {

// Declared with the sinks' delivery settings, whose `concurrency` keys set it.
using ConcurrencyOptions = seedance::ConcurrencyOptions;

class ConcurrencyController {
 public:
  explicit ConcurrencyController(ConcurrencyOptions options);

  // A request completed at `now_ns` after `latency`; `in_flight` requests (itself included)
  // were outstanding when it was sent.
  void RecordLatency(std::chrono::nanoseconds latency, int64_t now_ns, int in_flight);
  // The server asked to slow down (429, 503, or no answer in time).
  void RecordBackpressure() { backpressure_ = options_.adaptive; }
  // Applies the rule if `interval` has passed since the last update. Returns true when it ran.
  bool Update(int64_t now_ns);

  int limit() const { return limit_; }
  // P99 of the last window as of the last update, in seconds (0 when no samples).
  double p99_seconds() const { return p99_s_; }
  // Completions per second over the last window, as of the last update.
  double throughput() const { return throughput_; }
  const ConcurrencyOptions& options() const { return options_; }

 private:
  struct Sample {
    int64_t at_ns;
    int64_t latency_ns;
    int in_flight;
  };
  ConcurrencyOptions options_;
  int limit_;
  std::deque<Sample> samples_;
  int64_t last_update_ns_ = 0;
  double p99_s_ = 0;
  double throughput_ = 0;
  double max_throughput_ = 0;
  bool backpressure_ = false;
};

}  // namespace seedance::governor
