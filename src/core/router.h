// Router: hands each event of an output (main, error, rejected, stale) to the sinks that
// consume it.
//
// Durable mode (`queue.buffer: disk`): one record in the durable queue, tagged with its output,
// serves every sink that consumes the output (each reads it through its cursor). Memory mode:
// a copy into each consuming sink runner's bounded queue. An output no sink consumes is
// counted (`seedance_output_events_total`) and dropped; for main that is also logged (at most
// every 10 s). Side outputs carry `output`, `reason` (one line, at most kMaxReasonBytes) and
// `component` headers, and each (component, output, kind of reason) is logged at most every
// 10 s: a reason's kind is its first 40 bytes once each run of digits is read as one '#' (a line
// number or an offset does not make a new kind; see RouteSide's limit in LogLimiter). An
// event a sink refuses on the rejected path is counted as `rejected_twice` and dropped rather
// than routed again (no loop).
//
// From the processing thread Route() may wait for room (a full sink queue, the disk limit)
// until `deadline`; from the event loop it never waits. Thread-safe. The set of sinks may
// change while events are routed (a reload replaces sinks): each Route() works with the set
// current when it began, so a replaced runner must stay alive (stopped) until the pipeline
// ends.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
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

  struct SinkRoute {
    SinkRunner* runner;
    std::vector<Output> inputs;  // what it consumes
  };
  // `runner` consumes `inputs` from now on.
  void AddSink(SinkRunner* runner, const std::vector<Output>& inputs);
  // The sinks from now on: `sinks`, replacing every earlier one.
  void SetSinks(const std::vector<SinkRoute>& sinks);
  // Any thread: new records were committed to the durable queue; every sink is told.
  void NotifyAppended();

  // Returns false when the event could not be put in the durable queue (a write error past
  // `deadline`, or at once from the event loop): counted as `queue_write_failed`; the caller
  // must not acknowledge its batch.
  bool Route(Output output, Event&& event, bool from_loop, Deadline deadline);
  // A side output: sets the headers, logs (limited by kind of reason), routes.
  bool RouteSide(Output output, Event&& event, std::string_view reason, bool from_loop,
                 const std::string& component, Deadline deadline);
  // What a sink refused (event loop): to the rejected output, unless it was refused there.
  void RouteRejected(Event&& event, const std::string& reason, const std::string& sink);
  // Before the first Route(): side outputs are offered to `taps` (null: none).
  void SetTaps(observe::TapHub* taps) { taps_ = taps; }

 private:
  struct Routes {
    std::vector<SinkRoute> sinks;
    std::vector<std::vector<SinkRunner*>> by_output;  // indexed by Output
  };
  std::shared_ptr<const Routes> Current() const {
    std::lock_guard<std::mutex> lock(routes_mu_);
    return routes_;
  }
  // The routes for one Route(): the processing thread keeps its own copy, taken again only
  // when the set changed (one atomic load per event); the event loop takes the current one.
  const Routes& RoutesFor(bool from_loop, std::shared_ptr<const Routes>* hold);

  storage::DurableQueue* const queue_;
  observe::MetricsRegistry& metrics_;
  mutable std::mutex routes_mu_;  // routes_ (the pointer; what it points to never changes)
  std::shared_ptr<const Routes> routes_;
  std::atomic<uint64_t> routes_version_{0};  // one more per SetSinks
  // The processing thread's copy of routes_, and its version.
  std::shared_ptr<const Routes> processing_routes_;
  uint64_t processing_version_ = UINT64_MAX;
  std::vector<observe::Counter*> counters_;  // by Output
  observe::Counter& write_failed_;
  util::LogLimiter log_limiter_;
  observe::TapHub* taps_ = nullptr;
};

}  // namespace seedance
