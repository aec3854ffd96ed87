// Processor: a stage that turns one event into zero or more events (Lua, watermark, window).
//
// Processors run on the processing thread, one event at a time, in configured order. A
// processor never throws: a failure for one event routes that event to a side output.
//
// Event time: a processor may announce that event time has advanced (a watermark); the
// announcement reaches every later processor's OnWatermark, in order, like an event.
//
// State: a processor whose results depend on earlier events (a window) keeps its state in
// the pipeline's checkpoint. After every batch the pipeline asks for the entries changed
// since the last call and makes them durable before the batch is acknowledged upstream; at
// start it hands back what was saved.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance {

class Params;

class ProcessorOutput {
 public:
  virtual ~ProcessorOutput() = default;
  // Passes `event` on to the next stage.
  virtual void Emit(Event&& event) = 0;
  // Sends `event` to side output `output` (kError, kStale, ...) with a one-line reason, which
  // travels with the event as its "reason" header.
  virtual void EmitSide(Output output, Event&& event, std::string_view reason) = 0;
  // Announces that event time reached `watermark_ns` (Unix ns) for `scope`: "" for the whole
  // stream, otherwise one key (watermarks tracked per key).
  virtual void EmitWatermark(std::string_view scope, int64_t watermark_ns) = 0;
};

// Receives a processor's changed state entries: `value` empty = the key was deleted.
using StateSink = std::function<void(std::string_view key, std::string_view value)>;

class Processor {
 public:
  virtual ~Processor() = default;
  // Processes one event. REQUIRES: called on the processing thread only.
  virtual void Process(Event&& event, ProcessorOutput& out) = 0;
  // An earlier processor announced a watermark. The default passes it on.
  virtual void OnWatermark(std::string_view scope, int64_t watermark_ns, ProcessorOutput& out) {
    out.EmitWatermark(scope, watermark_ns);
  }
  // Called on the processing thread at least every 250 ms, between events; used for reloads
  // and timers. `now_ns` is the wall clock in Unix ns.
  virtual void Tick(int64_t /*now_ns*/, ProcessorOutput& /*out*/) {}

  // True when the processor keeps state in the checkpoint.
  virtual bool stateful() const { return false; }
  // Restores one saved entry (before the first event). kInvalidArgument for a bad entry.
  virtual Status RestoreState(std::string_view /*key*/, std::string_view /*value*/) {
    return Status::Ok();
  }
  // Hands the entries changed since the previous call to `sink`.
  virtual void TakeChangedState(const StateSink& /*sink*/) {}

  // New parameters without a restart (SIGHUP): with `apply` false only checks them, with
  // `apply` true takes them. kFailedPrecondition when the processor cannot be reconfigured;
  // kInvalidArgument when the change is refused (the old parameters stay).
  virtual Status Reconfigure(const Params& /*params*/, bool /*apply*/) {
    return Status(StatusCode::kFailedPrecondition, "this processor cannot be reconfigured");
  }
};

}  // namespace seedance
