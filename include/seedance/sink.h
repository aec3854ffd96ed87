// Sink: where events leave the pipeline (HTTP, MQTT, file, stdout).
//
// A sink makes one attempt to deliver a batch and says what came of it; the runtime does the
// rest, the same way for every sink (src/core/delivery/sink_runner.h): batching, retries with
// backoff and jitter, a server's Retry-After, splitting a batch that is too large, the timeout of
// an attempt, adaptive concurrency and the memory budget. A sink's own folder holds its
// configuration, how it encodes a batch, and its client.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance {

struct Batch {
  std::vector<Event> events;
};

struct RejectedEvent {
  size_t index = 0;  // in Batch::events
  std::string reason;
};

// What one attempt came to.
struct AttemptOutcome {
  enum class Kind {
    kDelivered,  // accepted by the remote side, except the events in `rejected` (if any),
                 // which go to the `rejected` output with their reason
    kRetry,      // a transient failure: the runner tries again after a backoff of at least
                 // `retry_after` (a server-given delay, capped by the sink's `retry_max`)
    kRejected,   // refused for good (e.g. HTTP 400): every event to `rejected` with `reason`
    kTooLarge,   // the remote side takes no batch this large: the runner sends it as two
                 // halves, and a single event that is still too large goes to `rejected`
    kBisect,     // the remote side refused some events without naming them and took the
                 // rest: the runner bisects, sending the batch as two halves, down to single
                 // events, and one refused alone goes to `rejected` with its reason. Only for
                 // a sink whose writes are idempotent (the events taken are sent again;
                 // InfluxDB)
    kShutdown,   // the sink was stopped first; the events were not delivered
  };
  Kind kind = Kind::kDelivered;
  std::string reason;  // what happened, on one line (all but kDelivered)
  std::chrono::milliseconds retry_after{0};
  bool backpressure = false;  // the server asked for less (HTTP 429/503): lowers concurrency
  std::vector<RejectedEvent> rejected;

  static AttemptOutcome Delivered() { return {}; }
  static AttemptOutcome Retry(std::string reason, std::chrono::milliseconds after = {},
                              bool backpressure = false) {
    AttemptOutcome o;
    o.kind = Kind::kRetry;
    o.reason = std::move(reason);
    o.retry_after = after;
    o.backpressure = backpressure;
    return o;
  }
  static AttemptOutcome Rejected(std::string reason) { return Of(Kind::kRejected, reason); }
  static AttemptOutcome TooLarge(std::string reason) { return Of(Kind::kTooLarge, reason); }
  static AttemptOutcome Bisect(std::string reason) { return Of(Kind::kBisect, reason); }
  static AttemptOutcome Shutdown() { return Of(Kind::kShutdown, "sink stopped"); }

 private:
  static AttemptOutcome Of(Kind kind, std::string reason) {
    AttemptOutcome o;
    o.kind = kind;
    o.reason = std::move(reason);
    return o;
  }
};
using AttemptCallback = std::function<void(AttemptOutcome)>;

class Sink {
 public:
  virtual ~Sink() = default;
  // Prepares connections etc. Returns kInvalidArgument when misconfigured.
  virtual Status Start() { return Status::Ok(); }
  // One attempt to deliver `batch`. `done` runs exactly once, on the event loop (possibly
  // inside Attempt()); `batch` stays valid until then. `id` names the attempt for Abort().
  // Attempts may overlap (the runner's concurrency). REQUIRES: Start() returned OK; called
  // on the event loop.
  virtual void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) = 0;
  // The attempt's time is up (the runner's `timeout`): end attempt `id` now, e.g. by closing
  // its connection. Its `done` still runs once, with any outcome. Does nothing for an attempt
  // that already completed. Event loop only.
  virtual void Abort(uint64_t /*id*/) {}
  // The most events one attempt can carry whatever the configuration (1 for one request per
  // event); the runner's batches are the smaller of this and `batch_size`.
  virtual size_t MaxBatchEvents() const { return SIZE_MAX; }
  // Closes connections; attempts in progress complete (kShutdown, or any outcome). Event loop
  // or after the loop stopped.
  virtual void Stop() {}
};

}  // namespace seedance
