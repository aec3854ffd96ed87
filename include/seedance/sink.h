// Sink: where events leave the pipeline (HTTP, MQTT, file, stdout).
//
// The runtime owns batching and queueing; a sink only delivers batches it is given, at most
// MaxInFlight() at a time, and reports each batch's outcome exactly once.
#pragma once

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

// Outcome of one Deliver():
//   kOk                 every event accepted by the remote side, except those in `rejected`
//                       (e.g. one event too large for the server when a batch was split),
//                       which the runtime routes to the `rejected` output with their reason;
//   kInvalidArgument    refused by the remote side (e.g. HTTP 4xx); the runtime routes the
//                       events to the `rejected` output with the status message as reason;
//   kCancelled          shutdown came first; the events were not delivered;
//   kResourceExhausted  given back through Evict(); the events were not delivered;
//   anything else       gave up after the configured retries; routed like kInvalidArgument.
struct RejectedEvent {
  size_t index = 0;  // in Batch::events
  std::string reason;
};
struct DeliveryOutcome {
  DeliveryOutcome(Status s) : status(std::move(s)) {}  // NOLINT: a plain Status is an outcome
  Status status;
  std::vector<RejectedEvent> rejected;  // only with an OK status
};
using DeliveryCallback = std::function<void(DeliveryOutcome)>;

class Sink {
 public:
  virtual ~Sink() = default;
  // Prepares connections etc. Returns kInvalidArgument when misconfigured.
  virtual Status Start() { return Status::Ok(); }
  // Delivers `batch`, retrying transient failures internally. `done` runs exactly once, on the
  // event loop. REQUIRES: Start() returned OK; called on the event loop.
  virtual void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) = 0;
  // How many Deliver() calls may be outstanding at once.
  virtual int MaxInFlight() const { return 1; }
  // Memory budget: gives back the in-memory copy of `batch` (of an outstanding Deliver) if the
  // sink is only holding it between attempts. That Deliver then completes with
  // kResourceExhausted and the runtime delivers the events again later, from the durable
  // queue. Returns false when the batch is being sent, or the sink never waits: it stays.
  // Called on the event loop.
  virtual bool Evict(const Batch& /*batch*/) { return false; }
  // Preferred maximum events per batch.
  virtual size_t MaxBatchEvents() const { return 500; }
  // Cancels retries and connections; outstanding Deliver() calls complete with kCancelled.
  virtual void Stop() {}
};

}  // namespace seedance
