#include "sources/otlp/otlp_records.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "util/json_check.h"
#include "util/protobuf_reader.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

using util::ProtobufField;
using util::ProtobufReader;

// Why a record is refused; thrown nowhere: every reader returns false with it set.
struct Failure {
  std::string reason;
  bool Set(std::string why) {
    if (reason.empty()) reason = std::move(why);
    return false;
  }
};

// Appends a JSON object's members, the commas and braces in their place.
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_.push_back('{'); }
  std::string& Key(std::string_view key) {
    if (!first_) out_.push_back(',');
    first_ = false;
    util::AppendJsonString(out_, key);
    out_.push_back(':');
    return out_;
  }
  void End() { out_.push_back('}'); }

 private:
  std::string& out_;
  bool first_ = true;
};

void AppendDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
}

double AsDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

int64_t ZigZag32(uint64_t v) {
  const auto u = static_cast<uint32_t>(v);
  return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
}

// As a JSON string (trace and span ids: OTLP's JSON encoding writes them so too).
void AppendHexString(std::string& out, std::string_view bytes) {
  out.push_back('"');
  util::AppendHex(out, bytes);
  out.push_back('"');
}

bool AppendString(std::string& out, std::string_view s, Failure& f) {
  if (!util::IsValidUtf8(s)) return f.Set("a string that is not UTF-8");
  util::AppendJsonString(out, s);
  return true;
}

// An enum as its name when `names` has one, else as its number.
template <size_t N>
void AppendEnum(std::string& out, const char* const (&names)[N], uint64_t value) {
  if (value < N) {
    util::AppendJsonString(out, names[value]);
  } else {
    out += std::to_string(static_cast<int32_t>(value));
  }
}

bool AllZero(std::string_view bytes) {
  for (const char c : bytes)
    if (c != 0) return false;
  return true;
}

// Reads every field of `message` with `on` (false stops: `on` set the failure); false for a
// malformed message.
template <typename On>
bool ForEachField(std::string_view message, Failure& f, On on) {
  ProtobufReader reader(message);
  ProtobufField field;
  while (reader.Next(&field)) {
    if (!on(field)) return false;
  }
  if (!reader.error().empty()) return f.Set("malformed protobuf: " + reader.error());
  return true;
}

bool AppendKeyValues(std::string& out, const std::vector<std::string_view>& kvs, int depth,
                     Failure& f);

bool TooDeep(Failure& f) {
  return f.Set("values nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
}

// AnyValue as JSON (an empty AnyValue as null). `depth`: the JSON depth an array or object
// written here has (the payload's object is 1): no payload is nested deeper than the payload
// checker takes, and the recursion is bounded.
bool AppendAnyValue(std::string& out, std::string_view any, int depth, Failure& f) {
  const size_t start = out.size();
  const bool ok = ForEachField(any, f, [&](const ProtobufField& fld) {
    if (fld.number < 1 || fld.number > 7) return true;
    out.resize(start);  // a oneof: the last one set wins
    switch (fld.number) {
      case 1:
        return AppendString(out, fld.bytes, f);
      case 2:
        out += fld.number_value != 0 ? "true" : "false";
        return true;
      case 3:
        out += std::to_string(static_cast<int64_t>(fld.number_value));
        return true;
      case 4:
        AppendDouble(out, AsDouble(fld.number_value));
        return true;
      case 5: {  // ArrayValue
        if (depth > kMaxJsonDepth) return TooDeep(f);
        out.push_back('[');
        bool first = true;
        const bool ok = ForEachField(fld.bytes, f, [&](const ProtobufField& v) {
          if (v.number != 1 || v.wire_type != 2) return true;
          if (!first) out.push_back(',');
          first = false;
          return AppendAnyValue(out, v.bytes, depth + 1, f);
        });
        out.push_back(']');
        return ok;
      }
      case 6: {  // KeyValueList
        std::vector<std::string_view> kvs;
        if (!ForEachField(fld.bytes, f, [&](const ProtobufField& v) {
              if (v.number == 1 && v.wire_type == 2) kvs.push_back(v.bytes);
              return true;
            })) {
          return false;
        }
        return AppendKeyValues(out, kvs, depth, f);  // the kvlist is the object at `depth`
      }
      case 7:
        out.push_back('"');
        util::AppendBase64(out, fld.bytes);
        out.push_back('"');
        return true;
      default:
        return true;
    }
  });
  if (ok && out.size() == start) out += "null";
  return ok;
}

// KeyValue messages as one JSON object, at JSON depth `depth`.
bool AppendKeyValues(std::string& out, const std::vector<std::string_view>& kvs, int depth,
                     Failure& f) {
  if (depth > kMaxJsonDepth) return TooDeep(f);
  JsonObject o(out);
  for (std::string_view kv : kvs) {
    std::string_view key, value;
    if (!ForEachField(kv, f, [&](const ProtobufField& fld) {
          if (fld.wire_type != 2) return true;
          if (fld.number == 1) key = fld.bytes;
          if (fld.number == 2) value = fld.bytes;
          return true;
        })) {
      return false;
    }
    if (!util::IsValidUtf8(key)) return f.Set("an attribute key that is not UTF-8");
    o.Key(key);
    if (!AppendAnyValue(out, value, depth + 1, f)) return false;
  }
  o.End();
  return true;
}

// Repeated fixed64 (packed or not) or varint (packed or not) numbers.
bool ReadNumbers(const ProtobufField& fld, bool fixed64, std::vector<uint64_t>& out, Failure& f) {
  if (fld.wire_type != 2) {
    out.push_back(fld.number_value);
    return true;
  }
  if (fixed64) {
    if (fld.bytes.size() % 8 != 0) return f.Set("a packed fixed64 field cut short");
    for (size_t i = 0; i < fld.bytes.size(); i += 8) {
      uint64_t v = 0;
      for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(fld.bytes[i + b]);
      out.push_back(v);
    }
    return true;
  }
  std::string_view in = fld.bytes;
  while (!in.empty()) {
    uint64_t v = 0;
    int shift = 0;
    size_t i = 0;
    for (;; ++i) {
      if (i == in.size() || shift > 63) return f.Set("a packed varint field cut short");
      const auto b = static_cast<unsigned char>(in[i]);
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    out.push_back(v);
    in.remove_prefix(i + 1);
  }
  return true;
}

void AppendNumbers(std::string& out, const std::vector<uint64_t>& v) {
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += std::to_string(v[i]);
  }
  out.push_back(']');
}

void AppendDoubles(std::string& out, const std::vector<uint64_t>& bits) {
  out.push_back('[');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendDouble(out, AsDouble(bits[i]));
  }
  out.push_back(']');
}

// What a resource or scope gives each of its records: the end of its payload.
struct Context {
  std::string resource;  // ,"resource":{...}
  std::string scope;     // ,"scope":{...}
};

// The attributes field `number` of `message` as a JSON object; the other fields to `other`.
template <typename Other>
bool AttributesAnd(std::string_view message, uint32_t number, int depth, std::string& out,
                   Failure& f, Other other) {
  std::vector<std::string_view> kvs;
  if (!ForEachField(message, f, [&](const ProtobufField& fld) {
        if (fld.number == number && fld.wire_type == 2) {
          kvs.push_back(fld.bytes);
          return true;
        }
        return other(fld);
      })) {
    return false;
  }
  return AppendKeyValues(out, kvs, depth, f);
}

bool ReadResource(std::string_view resource, std::string& out, Failure& f) {
  out = ",\"resource\":";
  return AttributesAnd(resource, 1, 2, out, f, [](const ProtobufField&) { return true; });
}

bool ReadScope(std::string_view scope, std::string& out, Failure& f) {
  std::string_view name, version;
  std::string attributes;
  if (!AttributesAnd(scope, 3, 3, attributes, f, [&](const ProtobufField& fld) {
        if (fld.wire_type == 2 && fld.number == 1) name = fld.bytes;
        if (fld.wire_type == 2 && fld.number == 2) version = fld.bytes;
        return true;
      })) {
    return false;
  }
  out = ",\"scope\":{\"name\":";
  if (!AppendString(out, name, f)) return false;
  out += ",\"version\":";
  if (!AppendString(out, version, f)) return false;
  out += ",\"attributes\":";
  out += attributes;
  out.push_back('}');
  return true;
}

std::string Traceparent(std::string_view trace_id, std::string_view span_id, uint32_t flags) {
  std::string out = "00-";
  util::AppendHex(out, trace_id);
  out += '-';
  util::AppendHex(out, span_id);
  out += fmt::format("-{:02x}", flags & 0xff);
  return out;
}

class Decoder {
 public:
  Decoder(OtlpSignal signal, size_t max_records, size_t max_bytes, int64_t now_ns)
      : signal_(signal), max_records_(max_records), max_bytes_(max_bytes), now_ns_(now_ns) {}

  Status Request(std::string_view body) {
    // resource_logs, resource_metrics, resource_spans: field 1 of each request.
    Failure f;
    std::vector<std::string_view> resources;
    if (!ForEachField(body, f, [&](const ProtobufField& fld) {
          if (fld.number == 1 && fld.wire_type == 2) resources.push_back(fld.bytes);
          return true;
        })) {
      return InvalidArgumentError("not an OTLP export request: " + f.reason);
    }
    for (std::string_view r : resources) SEEDANCE_RETURN_IF_ERROR(Resource(r));
    return TooManyBytes();
  }

  PushBatch& batch() { return batch_; }

 private:
  // Resource{Logs,Metrics,Spans}: 1 resource, 2 scope_*.
  Status Resource(std::string_view message) {
    Failure f;
    std::string_view resource;
    std::vector<std::string_view> scopes;
    if (!ForEachField(message, f,
                      [&](const ProtobufField& fld) {
                        if (fld.wire_type != 2) return true;
                        if (fld.number == 1) resource = fld.bytes;
                        if (fld.number == 2) scopes.push_back(fld.bytes);
                        return true;
                      }) ||
        !ReadResource(resource, context_.resource, f)) {
      return InvalidArgumentError("a resource: " + f.reason);
    }
    for (std::string_view s : scopes) SEEDANCE_RETURN_IF_ERROR(Scope(s));
    return Status::Ok();
  }

  // Scope{Logs,Metrics,Spans}: 1 scope, 2 records.
  Status Scope(std::string_view message) {
    Failure f;
    std::string_view scope;
    std::vector<std::string_view> records;
    if (!ForEachField(message, f,
                      [&](const ProtobufField& fld) {
                        if (fld.wire_type != 2) return true;
                        if (fld.number == 1) scope = fld.bytes;
                        if (fld.number == 2) records.push_back(fld.bytes);
                        return true;
                      }) ||
        !ReadScope(scope, context_.scope, f)) {
      return InvalidArgumentError("a scope: " + f.reason);
    }
    batch_.events.reserve(batch_.events.size() + records.size());
    for (std::string_view r : records) {
      switch (signal_) {
        case OtlpSignal::kLogs:
          SEEDANCE_RETURN_IF_ERROR(Count(1));
          LogRecord(r);
          break;
        case OtlpSignal::kMetrics:
          SEEDANCE_RETURN_IF_ERROR(Metric(r));
          break;
        case OtlpSignal::kTraces:
          SEEDANCE_RETURN_IF_ERROR(Count(1));
          Span(r);
          break;
      }
    }
    return Status::Ok();
  }

  Status TooManyBytes() const {
    if (bytes_ <= max_bytes_) return Status::Ok();
    return ResourceExhaustedError("the records of one request take more than " +
                                  std::to_string(max_bytes_) +
                                  " bytes as events (each repeats its resource and scope)");
  }

  Status Count(size_t n) {
    SEEDANCE_RETURN_IF_ERROR(TooManyBytes());
    records_ += n;
    if (records_ > max_records_) {
      return ResourceExhaustedError("more than " + std::to_string(max_records_) +
                                    " records in one request");
    }
    return Status::Ok();
  }

  void Refuse(std::string_view record, const std::string& reason) {
    batch_.refused.push_back({std::string(record), reason});
  }

  // Ends a record's payload with its resource and scope and makes it an event.
  Event& Emit(std::string payload, int64_t time_ns) {
    payload += context_.resource;
    payload += context_.scope;
    payload.push_back('}');
    bytes_ += payload.size();
    Event& e = batch_.events.emplace_back();
    e.payload = std::move(payload);
    e.format = PayloadFormat::kJson;
    e.event_time_ns = time_ns > 0 ? time_ns : now_ns_;
    return e;
  }

  // Room for a record's payload: its JSON is about twice its protobuf, then the context.
  std::string NewPayload(std::string_view record, size_t extra = 0) const {
    std::string out;
    out.reserve(2 * record.size() + extra + context_.resource.size() + context_.scope.size() + 64);
    return out;
  }

  void LogRecord(std::string_view record) {
    Failure f;
    std::string out = NewPayload(record);
    JsonObject o(out);
    uint64_t time = 0, observed = 0;
    uint32_t flags = 0;
    std::string_view trace_id, span_id;
    std::vector<std::string_view> attributes;
    const bool ok = ForEachField(record, f, [&](const ProtobufField& fld) {
      switch (fld.number) {
        case 1:
          time = fld.number_value;
          return true;
        case 11:
          observed = fld.number_value;
          return true;
        case 2:
          o.Key("severity_number") += std::to_string(static_cast<int32_t>(fld.number_value));
          return true;
        case 3:
          return AppendString(o.Key("severity_text"), fld.bytes, f);
        case 5:
          return AppendAnyValue(o.Key("body"), fld.bytes, 2, f);
        case 6:
          attributes.push_back(fld.bytes);
          return true;
        case 7:
          o.Key("dropped_attributes_count") += std::to_string(fld.number_value);
          return true;
        case 8:
          flags = static_cast<uint32_t>(fld.number_value);
          o.Key("flags") += std::to_string(flags);
          return true;
        case 9:
          trace_id = fld.bytes;
          return true;
        case 10:
          span_id = fld.bytes;
          return true;
        case 12:
          return AppendString(o.Key("event_name"), fld.bytes, f);
        default:
          return true;
      }
    });
    if (ok && !trace_id.empty() && trace_id.size() != 16) f.Set("a trace_id that is not 16 bytes");
    if (ok && !span_id.empty() && span_id.size() != 8) f.Set("a span_id that is not 8 bytes");
    if (!f.reason.empty() || !AppendKeyValues(o.Key("attributes"), attributes, 2, f)) {
      return Refuse(record, "a log record: " + f.reason);
    }
    o.Key("time_unix_nano") += std::to_string(time);
    o.Key("observed_time_unix_nano") += std::to_string(observed);
    if (!trace_id.empty()) AppendHexString(o.Key("trace_id"), trace_id);
    if (!span_id.empty()) AppendHexString(o.Key("span_id"), span_id);
    Event& e = Emit(std::move(out), static_cast<int64_t>(time != 0 ? time : observed));
    if (trace_id.size() == 16 && span_id.size() == 8 && !AllZero(trace_id) && !AllZero(span_id)) {
      e.SetHeader("traceparent", Traceparent(trace_id, span_id, flags));
    }
  }

  void Span(std::string_view record) {
    Failure f;
    std::string out = NewPayload(record);
    JsonObject o(out);
    uint64_t start = 0, end = 0;
    uint32_t flags = 0;
    std::string_view trace_id, span_id, parent, trace_state;
    std::vector<std::string_view> attributes, events, links;
    static constexpr const char* kKinds[] = {"unspecified", "internal", "server",
                                             "client",      "producer", "consumer"};
    const bool ok = ForEachField(record, f, [&](const ProtobufField& fld) {
      switch (fld.number) {
        case 1:
          trace_id = fld.bytes;
          return true;
        case 2:
          span_id = fld.bytes;
          return true;
        case 3:
          trace_state = fld.bytes;
          return AppendString(o.Key("trace_state"), fld.bytes, f);
        case 4:
          parent = fld.bytes;
          return true;
        case 16:
          flags = static_cast<uint32_t>(fld.number_value);
          o.Key("flags") += std::to_string(flags);
          return true;
        case 5:
          return AppendString(o.Key("name"), fld.bytes, f);
        case 6:
          AppendEnum(o.Key("kind"), kKinds, fld.number_value);
          return true;
        case 7:
          start = fld.number_value;
          return true;
        case 8:
          end = fld.number_value;
          return true;
        case 9:
          attributes.push_back(fld.bytes);
          return true;
        case 10:
          o.Key("dropped_attributes_count") += std::to_string(fld.number_value);
          return true;
        case 11:
          events.push_back(fld.bytes);
          return true;
        case 12:
          o.Key("dropped_events_count") += std::to_string(fld.number_value);
          return true;
        case 13:
          links.push_back(fld.bytes);
          return true;
        case 14:
          o.Key("dropped_links_count") += std::to_string(fld.number_value);
          return true;
        case 15:
          return SpanStatus(o.Key("status"), fld.bytes, f);
        default:
          return true;
      }
    });
    if (ok &&
        (trace_id.size() != 16 || span_id.size() != 8 || AllZero(trace_id) || AllZero(span_id))) {
      f.Set("a span needs a 16-byte trace_id and an 8-byte span_id, not all zero");
    }
    if (ok && !parent.empty() && parent.size() != 8) f.Set("a parent_span_id that is not 8 bytes");
    if (!f.reason.empty() || !AppendKeyValues(o.Key("attributes"), attributes, 2, f) ||
        !SpanEvents(o.Key("events"), events, f) || !SpanLinks(o.Key("links"), links, f)) {
      return Refuse(record, "a span: " + f.reason);
    }
    AppendHexString(o.Key("trace_id"), trace_id);
    AppendHexString(o.Key("span_id"), span_id);
    if (!parent.empty()) AppendHexString(o.Key("parent_span_id"), parent);
    o.Key("start_time_unix_nano") += std::to_string(start);
    o.Key("end_time_unix_nano") += std::to_string(end);
    Event& e = Emit(std::move(out), static_cast<int64_t>(start));
    e.SetHeader("traceparent", Traceparent(trace_id, span_id, flags));
    if (!trace_state.empty() && trace_state.size() <= 512) e.SetHeader("tracestate", trace_state);
  }

  static bool SpanStatus(std::string& out, std::string_view status, Failure& f) {
    static constexpr const char* kCodes[] = {"unset", "ok", "error"};
    std::string_view message;
    uint64_t code = 0;
    if (!ForEachField(status, f, [&](const ProtobufField& fld) {
          if (fld.number == 2 && fld.wire_type == 2) message = fld.bytes;
          if (fld.number == 3 && fld.wire_type == 0) code = fld.number_value;
          return true;
        })) {
      return false;
    }
    JsonObject o(out);
    AppendEnum(o.Key("code"), kCodes, code);
    if (!AppendString(o.Key("message"), message, f)) return false;
    o.End();
    return true;
  }

  // Span.Event: 1 time_unix_nano, 2 name, 3 attributes, 4 dropped_attributes_count.
  static bool SpanEvents(std::string& out, const std::vector<std::string_view>& events,
                         Failure& f) {
    out.push_back('[');
    for (size_t i = 0; i < events.size(); ++i) {
      if (i > 0) out.push_back(',');
      std::string fields;
      JsonObject o(fields);
      std::string attributes;
      if (!AttributesAnd(events[i], 3, 4, attributes, f, [&](const ProtobufField& fld) {
            if (fld.number == 1) o.Key("time_unix_nano") += std::to_string(fld.number_value);
            if (fld.number == 2 && fld.wire_type == 2) {
              return AppendString(o.Key("name"), fld.bytes, f);
            }
            return true;
          })) {
        return false;
      }
      o.Key("attributes") += attributes;
      o.End();
      out += fields;
    }
    out.push_back(']');
    return true;
  }

  // Span.Link: 1 trace_id, 2 span_id, 3 trace_state, 4 attributes, 6 flags.
  static bool SpanLinks(std::string& out, const std::vector<std::string_view>& links, Failure& f) {
    out.push_back('[');
    for (size_t i = 0; i < links.size(); ++i) {
      if (i > 0) out.push_back(',');
      std::string fields;
      JsonObject o(fields);
      std::string attributes;
      if (!AttributesAnd(links[i], 4, 4, attributes, f, [&](const ProtobufField& fld) {
            switch (fld.number) {
              case 1:
                AppendHexString(o.Key("trace_id"), fld.bytes);
                return true;
              case 2:
                AppendHexString(o.Key("span_id"), fld.bytes);
                return true;
              case 3:
                return AppendString(o.Key("trace_state"), fld.bytes, f);
              case 6:
                o.Key("flags") += std::to_string(fld.number_value);
                return true;
              default:
                return true;
            }
          })) {
        return false;
      }
      o.Key("attributes") += attributes;
      o.End();
      out += fields;
    }
    out.push_back(']');
    return true;
  }

  // Metric: 1 name, 2 description, 3 unit, 5 gauge, 7 sum, 9 histogram,
  // 10 exponential_histogram, 11 summary. Each data point one record.
  Status Metric(std::string_view metric) {
    Failure f;
    std::string head;  // "name", "description", "unit", "type" and the type's own fields
    JsonObject o(head);
    std::string_view data;
    uint32_t type = 0;
    if (!ForEachField(metric, f, [&](const ProtobufField& fld) {
          if (fld.wire_type != 2) return true;
          switch (fld.number) {
            case 1:
              return AppendString(o.Key("name"), fld.bytes, f);
            case 2:
              return AppendString(o.Key("description"), fld.bytes, f);
            case 3:
              return AppendString(o.Key("unit"), fld.bytes, f);
            case 5:
            case 7:
            case 9:
            case 10:
            case 11:
              type = fld.number;
              data = fld.bytes;
              return true;
            default:
              return true;
          }
        })) {
      // Its points cannot be told apart: the metric is one refused record.
      SEEDANCE_RETURN_IF_ERROR(Count(1));
      Refuse(metric, "a metric: " + f.reason);
      return Status::Ok();
    }
    static constexpr const char* kTemporality[] = {"unspecified", "delta", "cumulative"};
    const char* type_name = type == 5    ? "gauge"
                            : type == 7  ? "sum"
                            : type == 9  ? "histogram"
                            : type == 10 ? "exponential_histogram"
                                         : "summary";
    if (type == 0) return Status::Ok();  // no data: no points
    util::AppendJsonString(o.Key("type"), type_name);
    std::vector<std::string_view> points;
    if (!ForEachField(data, f, [&](const ProtobufField& fld) {
          if (fld.number == 1 && fld.wire_type == 2) points.push_back(fld.bytes);
          if (fld.number == 2 && fld.wire_type == 0 && type != 5 && type != 11) {
            AppendEnum(o.Key("aggregation_temporality"), kTemporality, fld.number_value);
          }
          if (fld.number == 3 && fld.wire_type == 0 && type == 7) {
            o.Key("is_monotonic") += fld.number_value != 0 ? "true" : "false";
          }
          return true;
        })) {
      SEEDANCE_RETURN_IF_ERROR(Count(1));
      Refuse(metric, "a metric: " + f.reason);
      return Status::Ok();
    }
    SEEDANCE_RETURN_IF_ERROR(Count(points.size()));
    for (std::string_view point : points) {
      SEEDANCE_RETURN_IF_ERROR(TooManyBytes());  // every point repeats the metric's head
      DataPoint(type, head, point);
    }
    return Status::Ok();
  }

  void DataPoint(uint32_t type, std::string_view head, std::string_view point) {
    Failure f;
    std::string out = NewPayload(point, head.size());
    out += head;  // the metric's object, open, with its "type" at least
    const auto number = [&](const char* name, uint64_t bits) {
      out += name;
      AppendDouble(out, AsDouble(bits));
    };
    uint64_t time = 0;
    std::vector<std::string_view> quantiles;
    std::vector<std::string_view> attributes;
    // Where the attributes are: 7 in number and summary points, 9 in histogram points, 1 in
    // exponential histogram points.
    const uint32_t attributes_field = type == 9 ? 9 : type == 10 ? 1 : 7;
    std::vector<uint64_t> counts, bounds;
    bool has_counts = false;
    const bool ok = ForEachField(point, f, [&](const ProtobufField& fld) {
      if (fld.number == attributes_field && fld.wire_type == 2) {
        attributes.push_back(fld.bytes);
        return true;
      }
      if (fld.number == 2) {
        out += ",\"start_time_unix_nano\":" + std::to_string(fld.number_value);
        return true;
      }
      if (fld.number == 3) {
        time = fld.number_value;
        return true;
      }
      switch (type) {
        case 5:
        case 7:  // NumberDataPoint: 4 as_double, 6 as_int, 8 flags
          if (fld.number == 4) number(",\"value\":", fld.number_value);
          if (fld.number == 6) {
            out += ",\"value\":" + std::to_string(static_cast<int64_t>(fld.number_value));
          }
          if (fld.number == 8) out += ",\"flags\":" + std::to_string(fld.number_value);
          return true;
        case 9:  // 4 count, 5 sum, 6 bucket_counts, 7 explicit_bounds, 10 flags, 11 min, 12 max
          if (fld.number == 4) out += ",\"count\":" + std::to_string(fld.number_value);
          if (fld.number == 5) number(",\"sum\":", fld.number_value);
          if (fld.number == 6) {
            has_counts = true;
            return ReadNumbers(fld, true, counts, f);
          }
          if (fld.number == 7) return ReadNumbers(fld, true, bounds, f);
          if (fld.number == 10) out += ",\"flags\":" + std::to_string(fld.number_value);
          if (fld.number == 11) number(",\"min\":", fld.number_value);
          if (fld.number == 12) number(",\"max\":", fld.number_value);
          return true;
        case 10:  // 4 count, 5 sum, 6 scale, 7 zero_count, 8 positive, 9 negative, 10 flags,
                  // 12 min, 13 max, 14 zero_threshold
          if (fld.number == 4) out += ",\"count\":" + std::to_string(fld.number_value);
          if (fld.number == 5) number(",\"sum\":", fld.number_value);
          if (fld.number == 6) out += ",\"scale\":" + std::to_string(ZigZag32(fld.number_value));
          if (fld.number == 7) out += ",\"zero_count\":" + std::to_string(fld.number_value);
          if ((fld.number == 8 || fld.number == 9) && fld.wire_type == 2) {
            out += fld.number == 8 ? ",\"positive\":" : ",\"negative\":";
            return Buckets(out, fld.bytes, f);
          }
          if (fld.number == 10) out += ",\"flags\":" + std::to_string(fld.number_value);
          if (fld.number == 12) number(",\"min\":", fld.number_value);
          if (fld.number == 13) number(",\"max\":", fld.number_value);
          if (fld.number == 14) number(",\"zero_threshold\":", fld.number_value);
          return true;
        default:  // summary: 4 count, 5 sum, 6 quantile_values, 8 flags
          if (fld.number == 4) out += ",\"count\":" + std::to_string(fld.number_value);
          if (fld.number == 5) number(",\"sum\":", fld.number_value);
          if (fld.number == 6 && fld.wire_type == 2) quantiles.push_back(fld.bytes);
          if (fld.number == 8) out += ",\"flags\":" + std::to_string(fld.number_value);
          return true;
      }
    });
    if (ok && has_counts && counts.size() != bounds.size() + 1) {
      f.Set(fmt::format("bucket_counts has {} counts for {} explicit_bounds (needs one more)",
                        counts.size(), bounds.size()));
    }
    if (!f.reason.empty() || !AppendKeyValues((out += ",\"attributes\":"), attributes, 2, f)) {
      return Refuse(point, "a data point: " + f.reason);
    }
    if (type == 9) {
      out += ",\"bucket_counts\":";
      AppendNumbers(out, counts);
      out += ",\"explicit_bounds\":";
      AppendDoubles(out, bounds);
    }
    if (type == 11) {
      out += ",\"quantile_values\":[";
      for (size_t i = 0; i < quantiles.size(); ++i) {
        if (i > 0) out.push_back(',');
        uint64_t q = 0, v = 0;
        if (!ForEachField(quantiles[i], f, [&](const ProtobufField& fld) {
              if (fld.number == 1) q = fld.number_value;
              if (fld.number == 2) v = fld.number_value;
              return true;
            })) {
          return Refuse(point, "a data point: " + f.reason);
        }
        out += "{\"quantile\":";
        AppendDouble(out, AsDouble(q));
        out += ",\"value\":";
        AppendDouble(out, AsDouble(v));
        out.push_back('}');
      }
      out.push_back(']');
    }
    out += ",\"time_unix_nano\":" + std::to_string(time);
    Emit(std::move(out), static_cast<int64_t>(time));
  }

  // ExponentialHistogramDataPoint.Buckets: 1 offset (sint32), 2 bucket_counts (uint64).
  static bool Buckets(std::string& out, std::string_view buckets, Failure& f) {
    int64_t offset = 0;
    std::vector<uint64_t> counts;
    if (!ForEachField(buckets, f, [&](const ProtobufField& fld) {
          if (fld.number == 1 && fld.wire_type == 0) offset = ZigZag32(fld.number_value);
          if (fld.number == 2) return ReadNumbers(fld, false, counts, f);
          return true;
        })) {
      return false;
    }
    out += "{\"offset\":" + std::to_string(offset) + ",\"bucket_counts\":";
    AppendNumbers(out, counts);
    out.push_back('}');
    return true;
  }

  OtlpSignal signal_;
  size_t max_records_;
  size_t max_bytes_;
  int64_t now_ns_;
  size_t records_ = 0;
  size_t bytes_ = 0;  // of the payloads so far
  Context context_;
  PushBatch batch_;
};

}  // namespace

Result<PushBatch> DecodeOtlpRequest(OtlpSignal signal, std::string_view body, size_t max_records,
                                    size_t max_bytes, int64_t now_ns) {
  Decoder decoder(signal, max_records, max_bytes, now_ns);
  SEEDANCE_RETURN_IF_ERROR(decoder.Request(body));
  return std::move(decoder.batch());
}

}  // namespace seedance::sources
