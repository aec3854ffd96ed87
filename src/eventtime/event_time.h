// Event time from a payload field: epoch seconds, milliseconds, microseconds, nanoseconds or an
// RFC 3339 string, and RFC 3339 formatting for window output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "seedance/result.h"

namespace seedance::eventtime {

enum class TimeFormat {
  kAuto,  // numbers by magnitude (s < 1e11 ≤ ms < 1e14 ≤ µs < 1e17 ≤ ns), strings RFC 3339
  kSeconds,  // may be fractional
  kMillis,
  kMicros,
  kNanos,
  kRfc3339,
};

// "auto", "s", "ms", "us", "ns", "rfc3339". kInvalidArgument otherwise.
// The config words of each format (Options::Enum choices): auto, s, ms, us, ns, rfc3339.
std::vector<std::pair<std::string, TimeFormat>> TimeFormatChoices();

// The event time (Unix ns) in `value`. kInvalidArgument says why it is not one.
Result<int64_t> EventTimeFromJson(const rapidjson::Value& value, TimeFormat format);

// "2026-11-29T23:05:00Z", "2026-11-29T23:05:00.123+01:00", "2026-11-29 23:05:00Z". Strict:
// a time zone (Z or ±hh:mm) is required. Written here (40 lines) rather than with date.h:
// its parser goes through iostreams, far too slow per event.
Result<int64_t> ParseRfc3339(std::string_view text);

// UTC, millisecond precision: "2026-11-29T23:05:00.000Z".
std::string FormatRfc3339(int64_t unix_ns);

// The member at dotted `path` ("meta.ts") of a JSON object, or nullptr.
const rapidjson::Value* FindField(const rapidjson::Value& root, std::string_view path);

}  // namespace seedance::eventtime
