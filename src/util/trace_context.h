// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` an event carries
// in its headers (from an MQTT 5 user property, an HTTP header, an OTLP record or a script),
// read into the trace id, span id and flags that OTLP records carry, and written back.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "seedance/event.h"

namespace seedance::util {

struct TraceContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  uint8_t flags = 0;

  static constexpr uint8_t kSampled = 0x01;
  bool sampled() const { return (flags & kSampled) != 0; }
};

// `version-traceid-parentid-flags`, lowercase hex. nullopt for what the spec says to ignore:
// version ff, another length for version 00, an upper-case or non-hex digit, an all-zero trace
// or span id. A later version may append fields after a '-' (read as version 00 reads them).
std::optional<TraceContext> ParseTraceparent(std::string_view text);

// Version 00: "00-<32 hex>-<16 hex>-<2 hex>".
std::string FormatTraceparent(const TraceContext& c);

// The event's `traceparent` header, parsed; nullopt when it has none or a malformed one.
std::optional<TraceContext> EventTraceContext(const Event& e);

}  // namespace seedance::util
