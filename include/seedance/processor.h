// Processor: a stage that turns one event into zero or more events (Lua, watermark, window).
//
// Processors run on the processing thread, one event at a time, in configured order. A
// processor never throws: a failure for one event routes that event to a side output.
#pragma once

#include <cstdint>
#include <string_view>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance {

class ProcessorOutput {
 public:
  virtual ~ProcessorOutput() = default;
  // Passes `event` on to the next stage.
  virtual void Emit(Event&& event) = 0;
  // Sends `event` to side output `output` (kError, kStale, ...) with a one-line reason, which
  // travels with the event as its "reason" header.
  virtual void EmitSide(Output output, Event&& event, std::string_view reason) = 0;
};

class Processor {
 public:
  virtual ~Processor() = default;
  // Processes one event. REQUIRES: called on the processing thread only.
  virtual void Process(Event&& event, ProcessorOutput& out) = 0;
  // Called on the processing thread at least every 250 ms, between events; used for reloads
  // and timers. `now_ns` is the wall clock in Unix ns.
  virtual void Tick(int64_t /*now_ns*/) {}
};

}  // namespace seedance
