// What one HTTP push request carries: its body split into event payloads.
//
// A JSON object (or any single JSON value) is one event, kept byte for byte; a JSON array is
// one event per element (each written back compactly); NDJSON is one event per non-empty
// line, kept byte for byte. Every payload is checked like an MQTT payload (util/json_check.h:
// depth-limited, valid UTF-8, no numbers past ±1.8e308).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "seedance/result.h"
#include "seedance/status.h"

namespace seedance::sources {

enum class BodyFormat {
  kAuto,    // NDJSON for Content-Type application/x-ndjson, application/ndjson or
            // application/jsonl; JSON otherwise
  kJson,    // one JSON value; an array is one event per element
  kNdjson,  // one JSON value per line
};

// The payloads of `body`, at most `max_events` of them. kInvalidArgument with the reason
// (the line for NDJSON: "line 3: invalid JSON at offset 7: ..."); kResourceExhausted when
// there are more than `max_events`.
Result<std::vector<std::string>> SplitBody(std::string_view body, BodyFormat format,
                                           std::string_view content_type, size_t max_events);

}  // namespace seedance::sources
