// Router: hands each event of an output (main, error, rejected, stale) to the sinks that
// consume it.
//
// Durable mode (`queue.buffer: disk`): one record in the durable queue, tagged with its output,
// serves every sink that consumes the output (each reads it through its cursor). Memory mode:
// a copy into each consuming sink runner's bounded queue. An output no sink consumes is
// counted (`seedance_output_events_total`) and dropped; for main that is also logged (at most
// every 10 s). Side outputs carry `output`, `reason` (one line, at most kMaxReasonBytes) and
// `component` headers, and each (component, output, reason) is logged at most every 10 s. An
// event a sink refuses on the rejected path is counted as `rejected_twice` and dropped rather
// than routed again (no loop).
//
// From the processing thread Route() may wait for room (a full sink queue, the disk limit)
// until `deadline`; from the event loop it never waits. Thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/delivery/sink_runner.h"
#include "observe/metrics.h"
#include "observe/tap_hub.h"
#include "seedance/event.h"
#include "storage/durable_queue.h"
#include "util/log.h"

namespace seedance {

class Router {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // `queue` null: memory mode.
  Router(storage::DurableQueue* queue, observe::MetricsRegistry& metrics);

  // Before the first Route(): `runner` consumes `inputs`.
  void AddSink(SinkRunner* runner, const std::vector<Output>& inputs);

  // Returns false when the event could not be put in the durable queue (a write error past
  // `deadline`, or at once from the event loop): counted as `queue_write_failed`; the caller
  // must not acknowledge its batch.
  bool Route(Output output, Event&& event, bool from_loop, Deadline deadline);
  // A side output: sets the headers, logs (limited), routes.
  bool RouteSide(Output output, Event&& event, std::string_view reason, bool from_loop,
                 const std::string& component, Deadline deadline);
  // What a sink refused (event loop): to the rejected output, unless it was refused there.
  void RouteRejected(Event&& event, const std::string& reason, const std::string& sink);
  // Before the first Route(): side outputs are offered to `taps` (null: none).
  void SetTaps(observe::TapHub* taps) { taps_ = taps; }

 private:
  storage::DurableQueue* const queue_;
  observe::MetricsRegistry& metrics_;
  std::vector<std::vector<SinkRunner*>> routes_;  // by Output
  std::vector<observe::Counter*> counters_;       // by Output
  observe::Counter& write_failed_;
  util::LogLimiter log_limiter_;
  observe::TapHub* taps_ = nullptr;
};

}  // namespace seedance
