#include "sinks/common/event_encoding.h"

#include <fmt/format.h>

#include <ctime>

#include "util/strings.h"

namespace seedance::sinks {

std::vector<std::pair<std::string, EventEncoding>> EventEncodingChoices() {
  return {{"payload", EventEncoding::kPayload}, {"envelope", EventEncoding::kEnvelope}};
}

std::vector<std::pair<std::string, BatchFormat>> BatchFormatChoices() {
  return {{"json_array", BatchFormat::kJsonArray},
          {"ndjson", BatchFormat::kNdjson},
          {"single", BatchFormat::kSingle}};
}

namespace {

void AppendTime(int64_t ns, std::string& out) {
  time_t secs = static_cast<time_t>(ns / 1000000000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  out += fmt::format("\"{}.{:06d}Z\"", buf, (ns % 1000000000) / 1000);
}

// A raw payload that is not UTF-8 cannot be a JSON string without losing bytes.
bool NeedsBase64(const Event& e) {
  return e.format == PayloadFormat::kRaw && !util::IsValidUtf8(e.payload);
}

void AppendPayload(const Event& e, bool as_json_value, std::string& out) {
  if (e.format == PayloadFormat::kJson || !as_json_value) {
    out += e.payload;
  } else if (NeedsBase64(e)) {
    out += "{\"payload_base64\":\"";
    util::AppendBase64(out, e.payload);
    out += "\"}";
  } else {
    util::AppendJsonString(out, e.payload);
  }
}

// What AppendEvent writes for `e`, give or take escapes.
size_t EstimatedSize(const Event& e, EventEncoding encoding) {
  // A raw payload becomes a JSON string or base64 (a third larger): count the larger.
  const size_t payload =
      e.format == PayloadFormat::kRaw ? (e.payload.size() + 2) / 3 * 4 + 20 : e.payload.size();
  if (encoding == EventEncoding::kPayload) return payload;
  // {"id":N,"source":"","topic":"","time":"YYYY-MM-DDTHH:MM:SS.uuuuuuZ","payload":}
  size_t bytes = 80 + e.source.size() + e.topic.size() + payload;
  if (!e.headers.empty()) bytes += 13;
  for (const Header& h : e.headers) bytes += h.name.size() + h.value.size() + 6;
  return bytes;
}

}  // namespace

void AppendEvent(const Event& e, EventEncoding encoding, bool as_json_value, std::string& out) {
  if (encoding == EventEncoding::kPayload) {
    AppendPayload(e, as_json_value, out);
    return;
  }
  out += fmt::format("{{\"id\":{},\"source\":", e.id);
  util::AppendJsonString(out, e.source);
  out += ",\"topic\":";
  util::AppendJsonString(out, e.topic);
  out += ",\"time\":";
  AppendTime(e.event_time_ns, out);
  if (NeedsBase64(e)) {
    out += ",\"payload_base64\":\"";
    util::AppendBase64(out, e.payload);
    out.push_back('"');
  } else {
    out += ",\"payload\":";
    AppendPayload(e, /*as_json_value=*/true, out);
  }
  if (!e.headers.empty()) {
    out += ",\"headers\":{";
    for (size_t i = 0; i < e.headers.size(); ++i) {
      if (i > 0) out.push_back(',');
      util::AppendJsonString(out, e.headers[i].name);
      out.push_back(':');
      util::AppendJsonString(out, e.headers[i].value);
    }
    out.push_back('}');
  }
  out.push_back('}');
}

void AppendBatch(const std::vector<Event>& events, EventEncoding encoding, BatchFormat format,
                 std::string& out) {
  // One allocation for the whole body: growing it by doubling would copy it and, for a large
  // batch, hold the old and the new block at once (half again the body, uncounted by the memory
  // budget). Escaped strings can still exceed the estimate.
  size_t bytes = 2;
  for (const Event& e : events) bytes += EstimatedSize(e, encoding) + 1;
  out.reserve(out.size() + bytes);
  switch (format) {
    case BatchFormat::kJsonArray:
      out.push_back('[');
      for (size_t i = 0; i < events.size(); ++i) {
        if (i > 0) out.push_back(',');
        AppendEvent(events[i], encoding, /*as_json_value=*/true, out);
      }
      out.push_back(']');
      return;
    case BatchFormat::kNdjson:
      for (const Event& e : events) {
        AppendEvent(e, encoding, /*as_json_value=*/true, out);
        out.push_back('\n');
      }
      return;
    case BatchFormat::kSingle:
      if (!events.empty()) AppendEvent(events[0], encoding, /*as_json_value=*/false, out);
      return;
  }
}

const char* ContentType(BatchFormat format, EventEncoding encoding, const Event* first) {
  if (format == BatchFormat::kNdjson) return "application/x-ndjson";
  if (format == BatchFormat::kSingle && encoding == EventEncoding::kPayload && first != nullptr &&
      first->format == PayloadFormat::kRaw) {
    return "application/octet-stream";
  }
  return "application/json";
}

}  // namespace seedance::sinks
