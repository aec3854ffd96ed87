// Source: where events enter the pipeline (MQTT, HTTP push, file tail, generator).
//
// A source runs on the event loop. It hands events to a SourceOutput, which may refuse when
// the pipeline is full: the source then stops reading (and so stops acknowledging upstream)
// until WhenWritable() calls it back. Whether and when an event is acknowledged upstream is
// the pipeline's decision: it calls the AckHandle given with the event once the event is safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance {

// Implemented by sources whose upstream wants acknowledgements (MQTT QoS 1/2).
// Thread-safe: Acknowledge may be called from any thread.
class Acknowledger {
 public:
  virtual ~Acknowledger() = default;
  // Tells upstream that the event identified by `token` is safe. Idempotent per token; a
  // token from an earlier connection is ignored.
  virtual void Acknowledge(uint64_t token) = 0;
};

// Identifies what to acknowledge for one event; empty when nothing needs acknowledging.
struct AckHandle {
  Acknowledger* owner = nullptr;
  uint64_t token = 0;
  // How upstream names this message across a restart (MQTT: packet id + 1); 0 = no name.
  // Lets the pipeline recognise a redelivery of a message it had already committed.
  uint32_t redelivery_id = 0;
  // A source that reads by position (PositionCheckpoint): the stream and the position just
  // past this event, committed with the state it changed; 0 = none.
  uint32_t stream = 0;
  uint64_t stream_end = 0;
  void Ack() const {
    if (owner != nullptr) owner->Acknowledge(token);
  }
};

class SourceOutput {
 public:
  virtual ~SourceOutput() = default;
  // Hands `event` to the pipeline. Returns false, leaving `event` untouched, when the pipeline
  // is full. REQUIRES: called on the event loop.
  virtual bool TryEmit(Event& event, AckHandle ack) = 0;
  // Hands on an input that could not be taken (e.g. an MQTT message over max_packet_size):
  // the pipeline routes `event` (what is known of it) to the `error` output with `reason`, and
  // acknowledges it once that is safe, so upstream does not send it again. Same refusal rule
  // as TryEmit.
  virtual bool TryEmitInvalid(Event& event, AckHandle ack, std::string_view reason) = 0;
  // Hands all of `events` to the pipeline, or none (a request answered as one): returns false,
  // leaving them untouched, when the pipeline has no room for all of them now; event i is
  // acknowledged to `owner` with token `first_token + i`, and with a `stream`
  // (PositionCheckpoint) ends at position `first_end + i + 1` in it. REQUIRES: called on the
  // event loop.
  virtual bool TryEmitAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token,
                          uint32_t stream = 0, uint64_t first_end = 0) = 0;
  // Runs `callback` on the event loop once TryEmit may succeed again.
  virtual void WhenWritable(std::function<void()> callback) = 0;
  // Runs `callback` on the event loop once TryEmitAll of `events` events may succeed (a
  // source that hands on inputs whole waits for room for all of one). A batch larger than the
  // room the pipeline has is taken once its ingest queue has drained to half.
  virtual void WhenRoomFor(size_t events, std::function<void()> callback) = 0;
  // A new event id, unique in this process.
  virtual uint64_t NextEventId() = 0;
  // Source `name`'s input has ended for good (standard input closed) and every event of it
  // was handed on: it emits nothing more. Once every source has said so, `seedance run`
  // stops as on SIGTERM. REQUIRES: called on the event loop.
  virtual void InputEnded(std::string_view name) { (void)name; }
  // An empty event whose strings may have storage from earlier events (a pool): fill it with
  // assign() and no allocation is needed. REQUIRES: called on the event loop.
  virtual Event TakeEvent() { return Event(); }
};

class Source {
 public:
  virtual ~Source() = default;
  // Starts producing into `output`, which outlives the source. Returns kInvalidArgument or
  // kFailedPrecondition when it cannot start at all; transient failures (broker down) are
  // retried inside the source and reported through logs and metrics, not here.
  virtual Status Start(SourceOutput& output) = 0;
  // Stops reading. Events already emitted keep flowing; their acks are still honoured until
  // Close().
  virtual void Stop() = 0;
  // Closes connections (after pending acknowledgements were sent). Called after Stop().
  virtual void Close() {}
};

}  // namespace seedance
