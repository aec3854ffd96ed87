// Event: the unit of data that flows from sources through processors to sinks.
//
// An Event owns its bytes. It is movable and cheap to move; copying copies the payload.
// Not thread-safe: one stage owns an event at a time and hands it on by move.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/status.h"

namespace seedance {

// How the payload bytes are to be read.
enum class PayloadFormat : uint8_t {
  kJson,  // UTF-8 JSON text; checked at ingest, invalid payloads go to the `error` output.
  kRaw,   // Opaque bytes; reach Lua as a string.
};

// Where an event is headed after a stage.
enum class Output : uint8_t {
  kMain,      // the normal stream
  kError,     // malformed payloads, failing scripts
  kRejected,  // refused by a sink (e.g. HTTP 4xx)
  kStale,     // later than the allowed lateness
};
inline constexpr int kOutputCount = 4;

// The longest `reason` header a side output carries (control characters escaped); a longer
// reason (a script's 50 MB error message) is cut with "... (N more bytes)".
inline constexpr size_t kMaxReasonBytes = 1024;

// "main", "error", "rejected", "stale".
std::string_view OutputName(Output output);
// Parses an output name; returns false when `name` is not one.
bool ParseOutputName(std::string_view name, Output* output);

// The header that names the output an event is on: a side output's name (error, rejected,
// stale), or a named output a processor sent it to (Lua: `return event, "alerts"`); none on
// main. Named outputs travel on main and sinks pick them by this header.
inline constexpr char kOutputHeader[] = "output";
// OK for a name a processor may declare as a named output: 1-64 of [a-z0-9_-], starting with
// a letter, and not one of the four outputs above.
Status ValidateNamedOutput(std::string_view name);

struct Header {
  std::string name;
  std::string value;
};

struct Event {
  uint64_t id = 0;             // unique within one run of the process
  std::string source;          // name of the source component that produced it
  std::string topic;           // MQTT topic, HTTP path or file name
  int64_t event_time_ns = 0;   // when it happened (Unix ns); the ingest time when unknown
  int64_t ingest_time_ns = 0;  // when Seedance received it (Unix ns)
  PayloadFormat format = PayloadFormat::kJson;
  std::string payload;          // the bytes as received, or as a processor rewrote them
  std::vector<Header> headers;  // e.g. traceparent; side outputs add "reason"
  // Its record's sequence in the durable queue, as a sink reads it: the same when the event is
  // read again after a restart, never another event's (sinks make idempotency keys from it,
  // e.g. NATS's Nats-Msg-Id). 0 for an event not read from the queue (`buffer: memory`).
  uint64_t queue_sequence = 0;

  // Returns the value of header `name`, or nullptr. Valid until the headers change.
  const std::string* FindHeader(std::string_view name) const;
  // Sets header `name` to `value`, replacing an existing one.
  void SetHeader(std::string_view name, std::string_view value);
  // Heap and inline bytes this event holds (what a memory budget counts for it).
  size_t MemoryBytes() const;
};

}  // namespace seedance
