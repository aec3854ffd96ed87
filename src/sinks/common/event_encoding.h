// How sinks write events: the payload alone or an envelope, one per request, as a JSON array
// or as NDJSON. Shared by the http, file and stdout sinks.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/event.h"
#include "seedance/param_spec.h"

namespace seedance::sinks {

enum class EventEncoding {
  kPayload,   // the payload bytes as they are (a raw payload becomes a JSON string in arrays)
  kEnvelope,  // {"id","source","topic","time","payload","headers"}
};

enum class BatchFormat {
  kJsonArray,  // [e1,e2,...]
  kNdjson,     // e1\ne2\n
  kSingle,     // one event per request, body = the event
};

// The config words for each (Options::Enum choices): "payload"/"envelope" and
// "json_array"/"ndjson"/"single".
std::vector<std::pair<std::string, EventEncoding>> EventEncodingChoices();
std::vector<std::pair<std::string, BatchFormat>> BatchFormatChoices();

// Appends one event. With `as_json_value`, the result is always valid JSON: a raw payload is
// a JSON string, or, when it is not valid UTF-8, {"payload_base64":"..."} (in an envelope the
// field "payload_base64" takes the place of "payload"); other strings that are not UTF-8 get
// U+FFFD for each bad byte. Without `as_json_value` a raw payload is written as its bytes.
void AppendEvent(const Event& e, EventEncoding encoding, bool as_json_value, std::string& out);

// Appends the body for `events` in `format`.
void AppendBatch(const std::vector<Event>& events, EventEncoding encoding, BatchFormat format,
                 std::string& out);

// The content type for `format`.
const char* ContentType(BatchFormat format, EventEncoding encoding, const Event* first);

}  // namespace seedance::sinks
