#include "sources/otlp/otlp_json.h"

#include <rapidjson/document.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "util/json_check.h"
#include "util/protobuf_writer.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

enum class Kind {
  kString,
  kBool,
  kVarint,  // int32, int64, uint32, uint64, enum
  kSint32,
  kFixed64,
  kSfixed64,
  kFixed32,
  kDouble,
  kHex,     // bytes written as hex in OTLP/JSON (ids)
  kBase64,  // other bytes
  kMessage,
};

struct Message;

struct Field {
  const char* name;  // lowerCamelCase
  uint32_t number;
  Kind kind;
  const Message& (*message)() = nullptr;
};

struct Message {
  std::initializer_list<Field> fields;
};

#define SEEDANCE_MESSAGE(Name, ...)      \
  const Message& Name() {                \
    static const Message m{__VA_ARGS__}; \
    return m;                            \
  }

const Message& AnyValue();
const Message& KeyValue();
const Message& Buckets();

SEEDANCE_MESSAGE(ArrayValue, {{"values", 1, Kind::kMessage, AnyValue}})
SEEDANCE_MESSAGE(KeyValueList, {{"values", 1, Kind::kMessage, KeyValue}})
SEEDANCE_MESSAGE(AnyValue, {{"stringValue", 1, Kind::kString},
                            {"boolValue", 2, Kind::kBool},
                            {"intValue", 3, Kind::kVarint},
                            {"doubleValue", 4, Kind::kDouble},
                            {"arrayValue", 5, Kind::kMessage, ArrayValue},
                            {"kvlistValue", 6, Kind::kMessage, KeyValueList},
                            {"bytesValue", 7, Kind::kBase64}})
SEEDANCE_MESSAGE(KeyValue, {{"key", 1, Kind::kString}, {"value", 2, Kind::kMessage, AnyValue}})
SEEDANCE_MESSAGE(Resource, {{"attributes", 1, Kind::kMessage, KeyValue},
                            {"droppedAttributesCount", 2, Kind::kVarint}})
SEEDANCE_MESSAGE(Scope, {{"name", 1, Kind::kString},
                         {"version", 2, Kind::kString},
                         {"attributes", 3, Kind::kMessage, KeyValue},
                         {"droppedAttributesCount", 4, Kind::kVarint}})

SEEDANCE_MESSAGE(LogRecord, {{"timeUnixNano", 1, Kind::kFixed64},
                             {"observedTimeUnixNano", 11, Kind::kFixed64},
                             {"severityNumber", 2, Kind::kVarint},
                             {"severityText", 3, Kind::kString},
                             {"body", 5, Kind::kMessage, AnyValue},
                             {"attributes", 6, Kind::kMessage, KeyValue},
                             {"droppedAttributesCount", 7, Kind::kVarint},
                             {"flags", 8, Kind::kFixed32},
                             {"traceId", 9, Kind::kHex},
                             {"spanId", 10, Kind::kHex},
                             {"eventName", 12, Kind::kString}})
SEEDANCE_MESSAGE(ScopeLogs, {{"scope", 1, Kind::kMessage, Scope},
                             {"logRecords", 2, Kind::kMessage, LogRecord},
                             {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(ResourceLogs, {{"resource", 1, Kind::kMessage, Resource},
                                {"scopeLogs", 2, Kind::kMessage, ScopeLogs},
                                {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(LogsRequest, {{"resourceLogs", 1, Kind::kMessage, ResourceLogs}})

SEEDANCE_MESSAGE(NumberDataPoint, {{"attributes", 7, Kind::kMessage, KeyValue},
                                   {"startTimeUnixNano", 2, Kind::kFixed64},
                                   {"timeUnixNano", 3, Kind::kFixed64},
                                   {"asDouble", 4, Kind::kDouble},
                                   {"asInt", 6, Kind::kSfixed64},
                                   {"flags", 8, Kind::kVarint}})
SEEDANCE_MESSAGE(HistogramDataPoint, {{"attributes", 9, Kind::kMessage, KeyValue},
                                      {"startTimeUnixNano", 2, Kind::kFixed64},
                                      {"timeUnixNano", 3, Kind::kFixed64},
                                      {"count", 4, Kind::kFixed64},
                                      {"sum", 5, Kind::kDouble},
                                      {"bucketCounts", 6, Kind::kFixed64},
                                      {"explicitBounds", 7, Kind::kDouble},
                                      {"flags", 10, Kind::kVarint},
                                      {"min", 11, Kind::kDouble},
                                      {"max", 12, Kind::kDouble}})
SEEDANCE_MESSAGE(Buckets, {{"offset", 1, Kind::kSint32}, {"bucketCounts", 2, Kind::kVarint}})
SEEDANCE_MESSAGE(ExponentialHistogramDataPoint, {{"attributes", 1, Kind::kMessage, KeyValue},
                                                 {"startTimeUnixNano", 2, Kind::kFixed64},
                                                 {"timeUnixNano", 3, Kind::kFixed64},
                                                 {"count", 4, Kind::kFixed64},
                                                 {"sum", 5, Kind::kDouble},
                                                 {"scale", 6, Kind::kSint32},
                                                 {"zeroCount", 7, Kind::kFixed64},
                                                 {"positive", 8, Kind::kMessage, Buckets},
                                                 {"negative", 9, Kind::kMessage, Buckets},
                                                 {"flags", 10, Kind::kVarint},
                                                 {"min", 12, Kind::kDouble},
                                                 {"max", 13, Kind::kDouble},
                                                 {"zeroThreshold", 14, Kind::kDouble}})
SEEDANCE_MESSAGE(ValueAtQuantile, {{"quantile", 1, Kind::kDouble}, {"value", 2, Kind::kDouble}})
SEEDANCE_MESSAGE(SummaryDataPoint, {{"attributes", 7, Kind::kMessage, KeyValue},
                                    {"startTimeUnixNano", 2, Kind::kFixed64},
                                    {"timeUnixNano", 3, Kind::kFixed64},
                                    {"count", 4, Kind::kFixed64},
                                    {"sum", 5, Kind::kDouble},
                                    {"quantileValues", 6, Kind::kMessage, ValueAtQuantile},
                                    {"flags", 8, Kind::kVarint}})
SEEDANCE_MESSAGE(Gauge, {{"dataPoints", 1, Kind::kMessage, NumberDataPoint}})
SEEDANCE_MESSAGE(Sum, {{"dataPoints", 1, Kind::kMessage, NumberDataPoint},
                       {"aggregationTemporality", 2, Kind::kVarint},
                       {"isMonotonic", 3, Kind::kBool}})
SEEDANCE_MESSAGE(Histogram, {{"dataPoints", 1, Kind::kMessage, HistogramDataPoint},
                             {"aggregationTemporality", 2, Kind::kVarint}})
SEEDANCE_MESSAGE(ExponentialHistogram,
                 {{"dataPoints", 1, Kind::kMessage, ExponentialHistogramDataPoint},
                  {"aggregationTemporality", 2, Kind::kVarint}})
SEEDANCE_MESSAGE(Summary, {{"dataPoints", 1, Kind::kMessage, SummaryDataPoint}})
SEEDANCE_MESSAGE(Metric, {{"name", 1, Kind::kString},
                          {"description", 2, Kind::kString},
                          {"unit", 3, Kind::kString},
                          {"gauge", 5, Kind::kMessage, Gauge},
                          {"sum", 7, Kind::kMessage, Sum},
                          {"histogram", 9, Kind::kMessage, Histogram},
                          {"exponentialHistogram", 10, Kind::kMessage, ExponentialHistogram},
                          {"summary", 11, Kind::kMessage, Summary}})
SEEDANCE_MESSAGE(ScopeMetrics, {{"scope", 1, Kind::kMessage, Scope},
                                {"metrics", 2, Kind::kMessage, Metric},
                                {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(ResourceMetrics, {{"resource", 1, Kind::kMessage, Resource},
                                   {"scopeMetrics", 2, Kind::kMessage, ScopeMetrics},
                                   {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(MetricsRequest, {{"resourceMetrics", 1, Kind::kMessage, ResourceMetrics}})

SEEDANCE_MESSAGE(SpanEvent, {{"timeUnixNano", 1, Kind::kFixed64},
                             {"name", 2, Kind::kString},
                             {"attributes", 3, Kind::kMessage, KeyValue},
                             {"droppedAttributesCount", 4, Kind::kVarint}})
SEEDANCE_MESSAGE(SpanLink, {{"traceId", 1, Kind::kHex},
                            {"spanId", 2, Kind::kHex},
                            {"traceState", 3, Kind::kString},
                            {"attributes", 4, Kind::kMessage, KeyValue},
                            {"droppedAttributesCount", 5, Kind::kVarint},
                            {"flags", 6, Kind::kFixed32}})
SEEDANCE_MESSAGE(SpanStatus, {{"message", 2, Kind::kString}, {"code", 3, Kind::kVarint}})
SEEDANCE_MESSAGE(Span, {{"traceId", 1, Kind::kHex},
                        {"spanId", 2, Kind::kHex},
                        {"traceState", 3, Kind::kString},
                        {"parentSpanId", 4, Kind::kHex},
                        {"flags", 16, Kind::kFixed32},
                        {"name", 5, Kind::kString},
                        {"kind", 6, Kind::kVarint},
                        {"startTimeUnixNano", 7, Kind::kFixed64},
                        {"endTimeUnixNano", 8, Kind::kFixed64},
                        {"attributes", 9, Kind::kMessage, KeyValue},
                        {"droppedAttributesCount", 10, Kind::kVarint},
                        {"events", 11, Kind::kMessage, SpanEvent},
                        {"droppedEventsCount", 12, Kind::kVarint},
                        {"links", 13, Kind::kMessage, SpanLink},
                        {"droppedLinksCount", 14, Kind::kVarint},
                        {"status", 15, Kind::kMessage, SpanStatus}})
SEEDANCE_MESSAGE(ScopeSpans, {{"scope", 1, Kind::kMessage, Scope},
                              {"spans", 2, Kind::kMessage, Span},
                              {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(ResourceSpans, {{"resource", 1, Kind::kMessage, Resource},
                                 {"scopeSpans", 2, Kind::kMessage, ScopeSpans},
                                 {"schemaUrl", 3, Kind::kString}})
SEEDANCE_MESSAGE(TraceRequest, {{"resourceSpans", 1, Kind::kMessage, ResourceSpans}})

#undef SEEDANCE_MESSAGE

// `key` is `camel` or its snake_case form (proto3 JSON parsers take both).
bool SameName(std::string_view key, std::string_view camel) {
  if (key == camel) return true;
  size_t k = 0;
  for (const char c : camel) {
    if (c >= 'A' && c <= 'Z') {
      if (k + 2 > key.size() || key[k] != '_' || key[k + 1] != c - 'A' + 'a') return false;
      k += 2;
    } else {
      if (k == key.size() || key[k] != c) return false;
      ++k;
    }
  }
  return k == key.size();
}

class Transcoder {
 public:
  explicit Transcoder(std::string& out) : w_(out) {}

  // Errors are built on the way out, the path put in front at each level (nothing is spent
  // on paths while all is well): ".resourceLogs[0].scopeLogs: expected an array".
  Status Message(const rapidjson::Value& v, const Message& m) {
    if (!v.IsObject()) return Wrong("an object");
    for (const auto& member : v.GetObject()) {
      const std::string_view key(member.name.GetString(), member.name.GetStringLength());
      const Field* field = nullptr;
      for (const Field& f : m.fields) {
        if (SameName(key, f.name)) {
          field = &f;
          break;
        }
      }
      if (field == nullptr || member.value.IsNull()) continue;  // unknown: ignored
      if (member.value.IsArray()) {
        for (rapidjson::SizeType i = 0; i < member.value.Size(); ++i) {
          if (Status s = Value(member.value[i], *field); !s.ok()) {
            return InvalidArgumentError("." + std::string(key) + "[" + std::to_string(i) + "]" +
                                        s.message());
          }
        }
      } else if (Status s = Value(member.value, *field); !s.ok()) {
        return InvalidArgumentError("." + std::string(key) + s.message());
      }
    }
    return Status::Ok();
  }

 private:
  static Status Wrong(std::string_view expected) {
    return InvalidArgumentError(": expected " + std::string(expected));
  }

  Status Value(const rapidjson::Value& v, const Field& f) {
    switch (f.kind) {
      case Kind::kString:
        if (!v.IsString()) return Wrong("a string");
        w_.Bytes(f.number, std::string_view(v.GetString(), v.GetStringLength()));
        return Status::Ok();
      case Kind::kBool:
        if (!v.IsBool()) return Wrong("true or false");
        w_.Varint(f.number, v.GetBool() ? 1 : 0);
        return Status::Ok();
      case Kind::kVarint:
      case Kind::kFixed64:
      case Kind::kSfixed64:
      case Kind::kFixed32:
      case Kind::kSint32: {
        uint64_t n = 0;
        if (!Integer(v, &n)) return Wrong("an integer (a number or a decimal string)");
        if (f.kind == Kind::kVarint) w_.Varint(f.number, n);
        if (f.kind == Kind::kFixed64 || f.kind == Kind::kSfixed64) w_.Fixed64(f.number, n);
        if (f.kind == Kind::kFixed32) w_.Fixed32(f.number, static_cast<uint32_t>(n));
        if (f.kind == Kind::kSint32) {
          const auto s = static_cast<int32_t>(n);
          w_.Varint(f.number, (static_cast<uint32_t>(s) << 1) ^ static_cast<uint32_t>(s >> 31));
        }
        return Status::Ok();
      }
      case Kind::kDouble: {
        double d = 0;
        if (v.IsNumber()) {
          d = v.GetDouble();
        } else if (v.IsString() && std::string_view(v.GetString()) == "NaN") {
          d = std::numeric_limits<double>::quiet_NaN();
        } else if (v.IsString() && std::string_view(v.GetString()) == "Infinity") {
          d = std::numeric_limits<double>::infinity();
        } else if (v.IsString() && std::string_view(v.GetString()) == "-Infinity") {
          d = -std::numeric_limits<double>::infinity();
        } else {
          return Wrong("a number");
        }
        w_.Double(f.number, d);
        return Status::Ok();
      }
      case Kind::kHex: {
        std::string bytes;
        if (!v.IsString() ||
            !util::DecodeHex(std::string_view(v.GetString(), v.GetStringLength()), &bytes)) {
          return Wrong("a hex string");
        }
        w_.Bytes(f.number, bytes);
        return Status::Ok();
      }
      case Kind::kBase64: {
        std::string bytes;
        if (!v.IsString() ||
            !util::DecodeBase64(std::string_view(v.GetString(), v.GetStringLength()), &bytes)) {
          return Wrong("a base64 string");
        }
        w_.Bytes(f.number, bytes);
        return Status::Ok();
      }
      case Kind::kMessage: {
        const size_t begin = w_.BeginMessage(f.number);
        SEEDANCE_RETURN_IF_ERROR(Message(v, f.message()));
        w_.EndMessage(begin);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  // A JSON integer, or a decimal string of one (proto3 JSON writes 64-bit integers so).
  static bool Integer(const rapidjson::Value& v, uint64_t* n) {
    if (v.IsUint64()) {
      *n = v.GetUint64();
      return true;
    }
    if (v.IsInt64()) {
      *n = static_cast<uint64_t>(v.GetInt64());
      return true;
    }
    if (v.IsDouble()) {  // 1e3, 5.0: whole numbers in range only
      const double d = v.GetDouble();
      if (d != std::floor(d) || d < -9.2e18 || d > 1.8e19) return false;
      *n = d < 0 ? static_cast<uint64_t>(static_cast<int64_t>(d)) : static_cast<uint64_t>(d);
      return true;
    }
    if (!v.IsString()) return false;
    std::string_view s(v.GetString(), v.GetStringLength());
    const char* end = s.data() + s.size();
    if (!s.empty() && s[0] == '-') {
      int64_t i = 0;
      auto [p, ec] = std::from_chars(s.data(), end, i);
      *n = static_cast<uint64_t>(i);
      return ec == std::errc() && p == end;
    }
    auto [p, ec] = std::from_chars(s.data(), end, *n);
    return ec == std::errc() && p == end && !s.empty();
  }

  util::ProtobufWriter w_;
};

}  // namespace

Result<std::string> OtlpJsonToProtobuf(OtlpSignal signal, std::string_view json) {
  rapidjson::Document doc;
  SEEDANCE_RETURN_IF_ERROR(ParseJson(json, doc));
  std::string out;
  Transcoder t(out);
  const Message& request = signal == OtlpSignal::kLogs      ? LogsRequest()
                           : signal == OtlpSignal::kMetrics ? MetricsRequest()
                                                            : TraceRequest();
  if (Status s = t.Message(doc, request); !s.ok()) {
    return InvalidArgumentError("OTLP/JSON: $" + s.message());
  }
  return out;
}

}  // namespace seedance::sources
